package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/backend/store"
)

// One report token cannot run reports without end by asking from many
// client networks: a holder of an IPv6 /48 has 65,536 of them, each with
// the network's report limit. The token's account has a limit of its
// own, which reports, listings and budgets share, and another account's
// reports go on.
func TestReportLimitedPerAccountAcrossNetworks(t *testing.T) {
	env := newReportEnv(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	ask := func(token, path, ip string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", ip)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res, readBody(t, res)
	}
	const networks = 4 * 50
	paths := []string{"/v2/report?group_by=hour,site_id,ad,country&from=2026-01-01&to=2026-11-22&tz=Europe/Berlin",
		"/v2/clicks?order=desc&limit=1000"}
	start := time.Now()
	served := 0
	for i := range networks {
		path := paths[i%len(paths)]
		res, body := ask(partners.DemoReportToken, path, fmt.Sprintf("2001:db8:48:%x::1", i))
		switch res.StatusCode {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if e.Error.Limit != "report_account" || res.Header.Get("Retry-After") == "" {
				t.Fatalf("a 429 of %s: %s, want limit report_account and Retry-After", path, body)
			}
		default:
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
	}
	refilled := int(time.Since(start).Seconds()*reportAccountLimit.Rate) + 1
	if bound := reportAccountLimit.Burst + refilled; served > bound {
		t.Errorf("one token from %d networks of one /48: %d reports and listings served, want at most %d", networks, served, bound)
	}
	if served < reportAccountLimit.Burst {
		t.Errorf("one token from %d networks: %d served, want at least the account's burst, %d", networks, served, reportAccountLimit.Burst)
	}
	// Other accounts' limits are their own.
	for _, token := range []string{"the k2 partner's token", advertiserToken} {
		if res, body := ask(token, paths[0], "2001:db8:48:ffff::1"); res.StatusCode != http.StatusOK {
			t.Errorf("another account's report after the flood: %d %s", res.StatusCode, body)
		}
	}
}

// A report is kept whole in memory: one of more than report.MaxRows rows
// (a year by the hour and every dimension) is refused, naming group_by,
// and one within it is answered.
func TestReportOfTooManyRowsRefused(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	old := report.MaxRows
	t.Cleanup(func() { report.MaxRows = old })
	q := "from=2025-11-23&to=2026-11-22&tz=Europe/Berlin&group_by="
	_, body := env.report(t, partners.DemoReportToken, q+"hour,site_id,ad,criterion,yk_tag,country")
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &all); err != nil || len(all.Rows) < 4 {
		t.Fatalf("%v: %s, want rows", err, body)
	}
	report.MaxRows = len(all.Rows) - 1
	res, body := env.report(t, partners.DemoReportToken, q+"hour,site_id,ad,criterion,yk_tag,country")
	var e errorResponse
	if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != http.StatusBadRequest ||
		e.Error.Code != CodeInvalidParameter || e.Error.Param != "group_by" || !strings.Contains(e.Error.Message, "fewer groups") {
		t.Errorf("a report of %d rows over a bound of %d: %d %s, want 400 naming group_by", len(all.Rows), report.MaxRows, res.StatusCode, body)
	}
	if res, body := env.report(t, partners.DemoReportToken, q+"day"); res.StatusCode != http.StatusOK {
		t.Errorf("a report of fewer rows: %d %s", res.StatusCode, body)
	}
}

// gatedRollups are a bbolt file's rollups whose account scans and sums
// each wait for a place in the account's channel of open, so that
// reports stay running while a test asks for more.
type gatedRollups struct {
	clicks.BoltRollups
	open    map[string]chan struct{}
	started chan struct{}
}

// wait waits for a place in id's channel of open.
func (g gatedRollups) wait(ctx context.Context, id string) error {
	g.started <- struct{}{}
	select {
	case <-g.open[id]:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g gatedRollups) ScanAccountRollups(ctx context.Context, gr clicks.Grain, from, to time.Time, kind clicks.Dimension, id string, fn func(*clicks.Rollup) error) error {
	if err := g.wait(ctx, id); err != nil {
		return err
	}
	return g.BoltRollups.ScanAccountRollups(ctx, gr, from, to, kind, id, fn)
}

func (g gatedRollups) SumHours(ctx context.Context, q clicks.HourSums, fn func(*clicks.Rollup) error) error {
	if err := g.wait(ctx, q.APIKey+q.Advertiser); err != nil {
		return err
	}
	return g.BoltRollups.SumHours(ctx, q, fn)
}

// One token's reports run at most reportsAtOnce at a time on a server:
// the one more is refused (429, report_account) while they run, another
// account's runs, and once one is done the token's next one runs.
func TestReportsOfOneAccountAtOnceBounded(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	rollups, err := clicks.NewRollups(db)
	if err != nil {
		t.Fatal(err)
	}
	book, err := accounts.New([]partners.Partner{partners.Demo(), {APIKey: "k2", ReportToken: "the k2 partner's token"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	gated := gatedRollups{BoltRollups: rollups, open: map[string]chan struct{}{"demo": make(chan struct{}), "k2": make(chan struct{})}, started: make(chan struct{}, 2*reportsAtOnce)}
	srv := httptest.NewServer(NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Clicks: log,
		Accounts: book, Rollups: gated, Now: func() time.Time { return testClock }}))
	defer srv.Close()
	client := http.DefaultClient
	ask := func(token, ip string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/report?group_by=hour&tz=Europe/Berlin", nil)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", ip)
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		body := readBody(t, res)
		return res.StatusCode, string(body)
	}
	codes := make(chan int, reportsAtOnce)
	for i := range reportsAtOnce {
		go func() {
			code, body := ask(partners.DemoReportToken, fmt.Sprintf("2001:db8:1:%x::1", i))
			if code != http.StatusOK {
				t.Logf("%d %s", code, body)
			}
			codes <- code
		}()
	}
	for range reportsAtOnce {
		<-gated.started
	}
	// Answered at once, or never while they run: give up after a while.
	client = &http.Client{Timeout: 5 * time.Second}
	code, body := ask(partners.DemoReportToken, "2001:db8:1:ff::1")
	client = http.DefaultClient
	if code != http.StatusTooManyRequests || !strings.Contains(body, `"limit":"report_account"`) {
		t.Errorf("a report while %d of the token's run: %d %s, want 429 report_account", reportsAtOnce, code, body)
	}
	// Another account's report runs beside them.
	other := make(chan int, 1)
	go func() {
		code, _ := ask("the k2 partner's token", "2001:db8:2::1")
		other <- code
	}()
	<-gated.started
	gated.open["k2"] <- struct{}{}
	if code := <-other; code != http.StatusOK {
		t.Errorf("another account's report: %d, want 200", code)
	}
	// One of the token's done, its next runs.
	gated.open["demo"] <- struct{}{}
	if code := <-codes; code != http.StatusOK {
		t.Errorf("one of the token's reports: %d, want 200", code)
	}
	next := make(chan int, 1)
	go func() {
		code, _ := ask(partners.DemoReportToken, "2001:db8:1:fe::1")
		next <- code
	}()
	<-gated.started
	close(gated.open["demo"])
	if code := <-next; code != http.StatusOK {
		t.Errorf("the token's report once one was done: %d, want 200", code)
	}
	for range reportsAtOnce - 1 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("one of the token's reports: %d, want 200", code)
		}
	}
}

// A report's X-RateLimit headers are those of the bucket that binds
// first: a client network that used most of its limit with one token
// has as little left with another, whose account's bucket is full.
func TestReportLimitHeadersOfTheTighterBucket(t *testing.T) {
	env := newReportEnv(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	remaining := func(token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/clicks?limit=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", "192.0.2.7")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, res)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		n, err := strconv.Atoi(res.Header.Get("X-RateLimit-Remaining"))
		if err != nil {
			t.Fatalf("X-RateLimit-Remaining: %v", err)
		}
		return n
	}
	used := reportLimit.Burst - 5
	for range used {
		remaining(partners.DemoReportToken)
	}
	// The network has about 5 left, the other account all 50 less one.
	if got := remaining(advertiserToken); got >= reportLimit.Burst-5 {
		t.Errorf("X-RateLimit-Remaining %d after the network's %d requests, want the network's few left", got, used+1)
	}
}
