package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/backend/store"
)

// The reports of every account running on a server hold at most
// -report-rows rows together: a report that would hold more while others
// run waits, then is refused with 503 reports_busy and a Retry-After,
// counted in /metrics, and gives back what it held; once the others are
// done it runs.
func TestReportsOfEveryAccountBoundedByRows(t *testing.T) {
	const query = "/v2/report?from=2026-11-22&to=2026-11-23&group_by=hour,ad,criterion,yk_tag"
	// The demo partner's rows, from a server without the bound.
	plain := newReportEnv(t)
	plain.traffic(t)
	res, body := plain.report(t, partners.DemoReportToken, query[len("/v2/report?"):])
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &all); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	n := len(all.Rows)
	// A part of the bound is a row while it is under reportSteps*2; a
	// report starting beside another leaves one free.
	if n < 3 || n >= 2*reportSteps {
		t.Fatalf("the demo partner's report has %d rows, want 3 to %d", n, 2*reportSteps-1)
	}

	m := metrics.New()
	var gated gatedRollups
	env := newReportEnvWith(t, func(d *Deps) {
		d.Config.ReportRows = n
		d.Metrics = m
		opened := make(chan struct{})
		close(opened)
		gated = gatedRollups{BoltRollups: d.Rollups.(clicks.BoltRollups), started: make(chan struct{}, 100),
			open: map[string]chan struct{}{"handy-bestkauf.de": make(chan struct{}), "demo": opened}}
		d.Rollups = gated
	})
	env.traffic(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	ask := func(token, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res, readBody(t, res)
	}
	// The advertiser's report runs, holding a part of the rows.
	advertiser := make(chan int, 1)
	go func() {
		res, _ := ask(advertiserToken, "/v2/report?group_by=hour")
		advertiser <- res.StatusCode
	}()
	<-gated.started

	res, body = ask(partners.DemoReportToken, query)
	var e errorResponse
	if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != http.StatusServiceUnavailable ||
		e.Error.Code != CodeReportsBusy || res.Header.Get("Retry-After") != "5" {
		t.Errorf("a report of all %d rows while another holds one: %d %s (Retry-After %q), want 503 %s, Retry-After 5",
			n, res.StatusCode, body, res.Header.Get("Retry-After"), CodeReportsBusy)
	}
	if got := busyCount(t, m); got != 1 {
		t.Errorf("adlink_reports_busy_total %v, want 1", got)
	}
	// The refused report gave its rows back: a small one runs beside.
	if res, body := ask(partners.DemoReportToken, "/v2/report?from=2026-11-22&to=2026-11-23"); res.StatusCode != http.StatusOK {
		t.Errorf("a report of one row beside the advertiser's: %d %s", res.StatusCode, body)
	}
	close(gated.open["handy-bestkauf.de"])
	if code := <-advertiser; code != http.StatusOK {
		t.Errorf("the advertiser's report: %d", code)
	}
	res, body = ask(partners.DemoReportToken, query)
	if err := json.Unmarshal(body, &all); err != nil || res.StatusCode != http.StatusOK || len(all.Rows) != n {
		t.Errorf("the report of %d rows alone: %d %s", n, res.StatusCode, body)
	}
}

// busyCount is m's adlink_reports_busy_total.
func busyCount(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "adlink_reports_busy_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no adlink_reports_busy_total")
	return 0
}

// Three of the largest reports, of three accounts, run at once within
// the default -report-rows, as it is sized: a report's last part is no
// more than the rows it may come to hold, so that it holds
// report.MaxRows at most, not a whole part past them.
func TestLargestReportsFitTheDefaultRows(t *testing.T) {
	n := config.Default().ReportRows
	s := &server{reportRows: newReportRows(n)}
	holds := make([]*reportHold, 3)
	for i := range holds {
		acc := accounts.Account{Kind: accounts.Partner, ID: "k" + strconv.Itoa(i)}
		h, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil), acc)
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = h
	}
	for rows := 1; rows <= report.MaxRows; rows++ {
		for i, h := range holds {
			if err := h.hold(rows); err != nil {
				t.Fatalf("report %d of 3 at its row %d of %d, -report-rows %d: %v", i+1, rows, report.MaxRows, n, err)
			}
		}
	}
	for _, h := range holds {
		h.release()
	}
	if s.reportRows.free != int64(n) || len(s.reportRows.held) != 0 {
		t.Error("the reports did not give back every row they held")
	}
}

// Hundreds of small reports, of as many accounts, run at once within the
// default -report-rows: a report takes a few rows to start, not a 64th
// of them, so that the dashboards of many accounts loading together are
// answered, not refused with reports_busy.
func TestManySmallReportsRunTogether(t *testing.T) {
	const n = 200
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
	ps := make([]partners.Partner, n)
	open := make(chan struct{})
	gated := gatedRollups{BoltRollups: rollups, open: map[string]chan struct{}{}, started: make(chan struct{}, n)}
	for i := range ps {
		ps[i] = partners.Partner{APIKey: "k" + strconv.Itoa(i), ReportToken: "the report token of k" + strconv.Itoa(i)}
		gated.open[ps[i].APIKey] = open
	}
	book, err := accounts.New(ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Clicks: log,
		Accounts: book, Rollups: gated, Now: func() time.Time { return testClock }}))
	defer srv.Close()
	answers := make(chan string, n)
	for i, p := range ps {
		go func() {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/report?group_by=site_id", nil)
			if err != nil {
				answers <- err.Error()
				return
			}
			req.Header.Set("Authorization", "Bearer "+p.ReportToken)
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("2001:db8:5:%x::1", i))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- err.Error()
				return
			}
			answers <- strconv.Itoa(res.StatusCode) + " " + string(readBody(t, res))
		}()
	}
	// Every report reads the store at once, or is answered without.
	var early []string
	for range n {
		select {
		case <-gated.started:
		case a := <-answers:
			early = append(early, a)
		}
	}
	close(open)
	if len(early) > 0 {
		t.Errorf("%d of %d small reports at once answered before reading, want none; the first: %s", len(early), n, early[0])
	}
	for range n - len(early) {
		if a := <-answers; !strings.HasPrefix(a, "200 ") {
			t.Errorf("a small report among %d: %s", n, a)
		}
	}
}

// heldRollups are a bbolt file's rollups whose reads for the account id,
// once done, signal read and wait for done: the report holds its rows as
// one written to a slow client does.
type heldRollups struct {
	clicks.BoltRollups
	id         string
	read, done chan struct{}
}

func (h heldRollups) after(id string, err error) error {
	if id == h.id && err == nil {
		h.read <- struct{}{}
		<-h.done
	}
	return err
}

func (h heldRollups) ScanAccountRollups(ctx context.Context, gr clicks.Grain, from, to time.Time, kind clicks.Dimension, id string, fn func(*clicks.Rollup) error) error {
	return h.after(id, h.BoltRollups.ScanAccountRollups(ctx, gr, from, to, kind, id, fn))
}

func (h heldRollups) SumHours(ctx context.Context, q clicks.HourSums, fn func(*clicks.Rollup) error) error {
	return h.after(q.APIKey+q.Advertiser, h.BoltRollups.SumHours(ctx, q, fn))
}

// One account's reports hold at most half of -report-rows together: a
// second of its largest reports, while the first holds its rows, waits
// for them and is refused with reports_busy, and another account's
// report of one row runs meanwhile. Without the share, the account's
// reports held every row and every other account's report was refused.
func TestOneAccountsReportsLeaveOthersRoom(t *testing.T) {
	const query = "/v2/report?from=2026-11-22&to=2026-11-23&group_by=hour,ad,criterion,yk_tag"
	plain := newReportEnv(t)
	plain.traffic(t)
	res, body := plain.report(t, advertiserToken, query[len("/v2/report?"):])
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &all); err != nil || res.StatusCode != http.StatusOK || len(all.Rows) < 2 {
		t.Fatalf("%d %s, want rows", res.StatusCode, body)
	}
	n := len(all.Rows)
	// The advertiser's report is the largest, and the server holds two.
	old := report.MaxRows
	t.Cleanup(func() { report.MaxRows = old })
	report.MaxRows = n

	m := metrics.New()
	held := heldRollups{id: "handy-bestkauf.de", read: make(chan struct{}, 2), done: make(chan struct{})}
	env := newReportEnvWith(t, func(d *Deps) {
		d.Config.ReportRows = 2 * n
		d.Metrics = m
		held.BoltRollups = d.Rollups.(clicks.BoltRollups)
		d.Rollups = held
	})
	env.traffic(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	ask := func(token, path string) string {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			return err.Error()
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		return strconv.Itoa(res.StatusCode) + " " + string(readBody(t, res))
	}
	first, second := make(chan string, 1), make(chan string, 1)
	go func() { first <- ask(advertiserToken, query) }()
	<-held.read
	go func() { second <- ask(advertiserToken, query) }()
	select {
	case <-held.read:
		// The second read its rows too: the account holds them all.
	case a := <-second:
		second <- a
	}
	if a := ask(partners.DemoReportToken, "/v2/report?from=2026-11-22&to=2026-11-23"); !strings.HasPrefix(a, "200 ") {
		t.Errorf("another account's report of one row while the advertiser's first holds %d rows of %d: %s, want 200", n, 2*n, a)
	}
	close(held.done)
	if a := <-first; !strings.HasPrefix(a, "200 ") {
		t.Errorf("the advertiser's first report: %s", a)
	}
	a := <-second
	var e errorResponse
	if err := json.Unmarshal([]byte(a[strings.IndexByte(a, ' ')+1:]), &e); err != nil || !strings.HasPrefix(a, "503 ") || e.Error.Code != CodeReportsBusy {
		t.Errorf("the advertiser's second report while its first holds half the rows: %s, want 503 %s", a, CodeReportsBusy)
	}
	if got := busyCount(t, m); got != 1 {
		t.Errorf("adlink_reports_busy_total %v, want 1", got)
	}
}

// A report that needs more rows as it reads, while the others hold every
// other row, is refused at once (503 reports_busy) and gives back the
// store's read and its rows: it never waits with a bbolt read
// transaction open, which a commit growing the file waits on (on
// Postgres, a connection that clicks need to commit).
func TestReportNeverWaitsForRowsInTheRead(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	rollups, err := clicks.NewRollups(env.db)
	if err != nil {
		t.Fatal(err)
	}
	advertiser := accounts.Account{Kind: accounts.Advertiser, ID: "handy-bestkauf.de"}
	req := report.Request{From: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
		GroupBy: []string{"hour", "ad", "criterion", "yk_tag"}, Format: "json"}
	all, err := report.Run(t.Context(), rollups, advertiser, req)
	if err != nil || len(all) < 2 {
		t.Fatalf("%d rows, %v; want 2 or more", len(all), err)
	}
	synctest.Test(t, func(t *testing.T) {
		const n = 64 // parts of one row
		m := metrics.New()
		s := &server{reportRows: newReportRows(n), metrics: m}
		h, others := holdAllButOne(t, s, advertiser)
		done := make(chan error, 1)
		go func() {
			_, err := report.RunHolding(t.Context(), rollups, advertiser, req, h.hold)
			h.release()
			done <- err
		}()
		synctest.Wait()
		if open := env.db.Stats().OpenTxN; open != 0 {
			t.Errorf("%d read transactions open while the report waits for a second row, want none", open)
		}
		err := <-done
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != CodeReportsBusy || e.RetryAfter != reportBusyRetry {
			t.Errorf("a report of %d rows given one: %v, want %s", len(all), err, CodeReportsBusy)
		}
		for _, h := range others {
			h.release()
		}
		if s.reportRows.free != n || len(s.reportRows.held) != 0 {
			t.Errorf("%d rows free once every report is done, want %d", s.reportRows.free, n)
		}
	})
}

// holdAllButOne has, on s's bound of 64 rows, other accounts' reports
// hold every row but the one acc's report, which it returns, starts
// with: the others first hold all but two, leaving that one and the part
// kept for the reports reading, which one of them then takes.
func holdAllButOne(t *testing.T, s *server, acc accounts.Account) (*reportHold, []*reportHold) {
	t.Helper()
	ask := func(acc accounts.Account) *reportHold {
		t.Helper()
		h, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil), acc)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var others []*reportHold
	for i, size := range []int{21, 21, 20} { // 62 rows
		h := ask(accounts.Account{Kind: accounts.Partner, ID: "other" + strconv.Itoa(i)})
		for rows := 1; rows <= size; rows++ {
			if err := h.hold(rows); err != nil {
				t.Fatal(err)
			}
		}
		others = append(others, h)
	}
	h := ask(acc)
	if err := others[0].hold(22); err != nil {
		t.Fatal(err)
	}
	return h, others
}
