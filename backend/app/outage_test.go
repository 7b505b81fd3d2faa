package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
)

// syncLog is a log buffer safe for the server's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// adURL is a fresh ad URL from a search on h: a decision of its own.
func adURL(tb testing.TB, h http.Handler) string {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo", nil))
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); rec.Code != http.StatusOK || err != nil || len(resp.Link) == 0 {
		tb.Fatalf("search: %d %v %.200s", rec.Code, err, rec.Body)
	}
	ad := resp.Link[0].Ad
	return ad[strings.Index(ad, "/v1/redirect?"):]
}

// clickFrom follows u on h as a person's browser on network n, and
// returns the id the 302 carries, failing t on any other answer.
func clickFrom(t *testing.T, h http.Handler, u string, n int) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = fmt.Sprintf("10.%d.%d.1:5000", n/250, n%250)
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Fatalf("click %d: %d, id %q: %s", n, rec.Code, id, rec.Body)
	}
	return id
}

// recorded is the clicks table: each click id's rows, billable or its
// reason.
func recorded(t *testing.T, url string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT coalesce(click_id, ''), CASE WHEN billable THEN 'billable' ELSE reason END FROM clicks`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for rows.Next() {
		var id, verdict string
		if err := rows.Scan(&id, &verdict); err != nil {
			t.Fatal(err)
		}
		out[id] = append(out[id], verdict)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// metric is the value of the line of /metrics that starts with name.
func metric(t *testing.T, a *App, name string) string {
	t.Helper()
	_, body := get(t, a.Admin, "/metrics")
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// TestPostgresOutageSpoolsClicks: with Postgres killed, every click still
// lands, is spooled to the local file and judged there; /readyz says
// degraded and the page endpoint answers; with Postgres back, the spool
// is shipped, every click answered 302 is in Postgres exactly once, and
// Postgres has the last word on billing: a decision used before the
// outage and clicked again during it bills once.
func TestPostgresOutageSpoolsClicks(t *testing.T) {
	pg := testpg.Start(t)
	cfg := testConfig(t)
	cfg.PostgresURL = pg.URL()
	// Every search and beacon comes from one network: no limit in the way.
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	logs := &syncLog{}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })

	verdicts := map[string]string{} // click id -> the verdict Postgres must end with
	before := adURL(t, a.Handler)
	verdicts[clickFrom(t, a.Handler, before, 0)] = "billable"
	// On a busy machine Postgres may take longer than the spooler waits for
	// this first click, which is then spooled and shipped at once: wait for
	// that, and count the outage's clicks from there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, body := get(t, a.Handler, "/readyz")
		if status == http.StatusOK && strings.Contains(body, `"ready"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz healthy: %d %s", status, body)
		}
	}
	spooledBefore, _ := strconv.Atoi(metric(t, a, "adlink_clicks_spooled_total"))

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	const spooled = 20
	for n := 1; n <= spooled; n++ {
		verdicts[clickFrom(t, a.Handler, adURL(t, a.Handler), n)] = "billable"
	}
	// A link clicked twice while degraded: the spool's own decisions
	// refuse the second.
	twice := adURL(t, a.Handler)
	verdicts[clickFrom(t, a.Handler, twice, 100)] = "billable"
	verdicts[clickFrom(t, a.Handler, twice, 101)] = clicks.ReasonRepeat
	// A link clicked before the outage, again: here it looks fresh (its
	// decision is in Postgres); shipped, Postgres finds it a repeat.
	verdicts[clickFrom(t, a.Handler, before, 102)] = clicks.ReasonRepeat

	// Impression beacons are answered with their click tokens, and
	// spooled; each from a network of its own, as an ad counts once per
	// site and network in a window.
	const beacons = 3
	for n := range beacons {
		ad := adURL(t, a.Handler)
		req := httptest.NewRequest(http.MethodGet, "/v1/impression?api_key=demo&site_id=demo&url=http%3A%2F%2Flocalhost%2Fnews%2F"+
			fmt.Sprint(n)+"&ad="+url.QueryEscape(ad[strings.Index(ad, "?")+1:]), nil)
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		req.RemoteAddr = fmt.Sprintf("198.51.100.%d:4000", n+1)
		rec := httptest.NewRecorder()
		a.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), `{"ct":["`) || strings.HasPrefix(rec.Body.String(), `{"ct":[""`) {
			t.Fatalf("impression beacon with Postgres down: %d %s", rec.Code, rec.Body)
		}
	}

	status, body := get(t, a.Handler, "/readyz")
	if status != http.StatusOK || !strings.Contains(body, `"status":"degraded"`) || !strings.Contains(body, "postgres does not answer") {
		t.Errorf("/readyz with Postgres down: %d %s, want 200 degraded with the reason", status, body)
	}
	if status, body := get(t, a.Handler, "/v2/page/link?api_key=demo&site_id=demo&url=http%3A%2F%2Flocalhost%2Fnews%2F1"); status >= 500 {
		t.Errorf("the page endpoint with Postgres down: %d %s", status, body)
	}
	// Reports are read from Postgres: a 503 the client may retry.
	report := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/v2/report?group_by=day", nil)
		req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
		rec := httptest.NewRecorder()
		a.Handler.ServeHTTP(rec, req)
		return rec
	}
	if rec := report(); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"code":"reports_unavailable"`) {
		t.Errorf("a report with Postgres down: %d, Retry-After %q, %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if got, want := metric(t, a, "adlink_clicks_spooled_total"), fmt.Sprint(spooledBefore+spooled+3); got != want {
		t.Errorf("adlink_clicks_spooled_total %s, want %s", got, want)
	}
	if got, want := metric(t, a, "adlink_click_spool_depth"), fmt.Sprint(spooled+3); got != want {
		t.Errorf("adlink_click_spool_depth %s, want %s", got, want)
	}

	restartAndShip(t, pg, a)
	if rec := report(); rec.Code != http.StatusOK {
		t.Errorf("a report once Postgres answers again: %d %s", rec.Code, rec.Body)
	}
	// A click after the recovery goes to Postgres at once.
	verdicts[clickFrom(t, a.Handler, adURL(t, a.Handler), 200)] = "billable"

	got := recorded(t, pg.URL())
	for id, want := range verdicts {
		if v := got[id]; len(v) != 1 || v[0] != want {
			t.Errorf("click %s: recorded %v, want once %s", id, v, want)
		}
	}
	if len(got) != len(verdicts) {
		t.Errorf("Postgres holds %d click ids, the 302s carried %d", len(got), len(verdicts))
	}
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var imps, rolled int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM impressions), (SELECT coalesce(sum(impressions), 0) FROM rollups WHERE grain = 1)`).
		Scan(&imps, &rolled); err != nil {
		t.Fatal(err)
	}
	if imps != beacons || rolled != beacons {
		t.Errorf("Postgres holds %d impressions, its daily rollups count %d; %d beacons were answered", imps, rolled, beacons)
	}
	if status, body := get(t, a.Handler, "/readyz"); status != http.StatusOK || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("/readyz after the spool shipped: %d %s", status, body)
	}
	if got, want := metric(t, a, "adlink_clicks_shipped_total"), fmt.Sprint(spooledBefore+spooled+3); got != want {
		t.Errorf("adlink_clicks_shipped_total %s, want %s", got, want)
	}
	for _, want := range []string{"postgres does not answer", "postgres answers again", "the click spool is shipped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, grep(logs.String(), "postgres"))
		}
	}
}

// A server stopped with clicks in its spool ships them after its next
// start, once each.
func TestSpoolShipsAfterRestart(t *testing.T) {
	pg := testpg.Start(t)
	cfg := testConfig(t)
	cfg.PostgresURL = pg.URL()
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for n := range 5 {
		ids = append(ids, clickFrom(t, a.Handler, adURL(t, a.Handler), n))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := b.spooler.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool left by the first server was not shipped: %v", err)
	}
	got := recorded(t, pg.URL())
	for _, id := range ids {
		if v := got[id]; len(v) != 1 || v[0] != "billable" {
			t.Errorf("click %s: recorded %v, want once billable", id, v)
		}
	}
	if len(got) != len(ids) {
		t.Errorf("Postgres holds %d clicks, want %d", len(got), len(ids))
	}
}

// The attack an outage invites: one ad link clicked on two replicas while
// Postgres is down. Each replica, alone, bills it; shipped, Postgres
// settles the two again and bills one.
func TestOutageReplayOverReplicasBillsOnce(t *testing.T) {
	pg := testpg.Start(t)
	a, b := replica(t, pg.URL()), replica(t, pg.URL())
	link := adURL(t, a.Handler)
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	ids := []string{clickFrom(t, a.Handler, link, 1), clickFrom(t, b.Handler, link, 2)}
	restartAndShip(t, pg, a, b)
	got := recorded(t, pg.URL())
	billed := 0
	for _, id := range ids {
		if v := got[id]; len(v) != 1 {
			t.Errorf("click %s recorded %v, want once", id, v)
		} else if v[0] == "billable" {
			billed++
		} else if v[0] != clicks.ReasonRepeat {
			t.Errorf("click %s: %s, want billable or repeat", id, v[0])
		}
	}
	if billed != 1 {
		t.Errorf("one link clicked on two replicas during the outage billed %d times, want once", billed)
	}
}

// restartAndShip restarts pg and waits, two minutes at most, until each
// replica has shipped its spool to it.
func restartAndShip(t *testing.T, pg *testpg.Server, replicas ...*App) {
	t.Helper()
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i, r := range replicas {
		if err := r.spooler.WaitShipped(ctx); err != nil {
			t.Fatalf("replica %d did not ship its spool: %v; %d left", i, err, r.spooler.Depth())
		}
	}
}
