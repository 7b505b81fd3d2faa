package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/report"
)

// The reports of every account running on a server hold at most
// -report-rows rows together: a report that would hold more while others
// run waits, then is refused with 503 reports_busy and a Retry-After,
// counted in /metrics, and gives back what it held; once the others are
// done it runs.
func TestReportsOfEveryAccountBoundedByRows(t *testing.T) {
	const query = "/v2/report?from=2026-11-22&to=2026-11-23&group_by=hour,ad,criterion,yk_tag"
	// The advertiser's rows, from a server without the bound.
	plain := newReportEnv(t)
	plain.traffic(t)
	res, body := plain.report(t, advertiserToken, query[len("/v2/report?"):])
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &all); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	n := len(all.Rows)
	// A part of the bound is a row while it is under reportSteps*2.
	if n < 2 || n >= 2*reportSteps {
		t.Fatalf("the advertiser's report has %d rows, want 2 to %d", n, 2*reportSteps-1)
	}

	m := metrics.New()
	var gated gatedRollups
	env := newReportEnvWith(t, func(d *Deps) {
		d.Config.ReportRows = n
		d.Metrics = m
		opened := make(chan struct{})
		close(opened)
		gated = gatedRollups{BoltRollups: d.Rollups.(clicks.BoltRollups), started: make(chan struct{}, 100),
			open: map[string]chan struct{}{"demo": make(chan struct{}), "handy-bestkauf.de": opened}}
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
	// The demo partner's report runs, holding a part of the rows.
	demo := make(chan int, 1)
	go func() {
		res, _ := ask(partners.DemoReportToken, "/v2/report?group_by=hour")
		demo <- res.StatusCode
	}()
	<-gated.started

	res, body = ask(advertiserToken, query)
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
	if res, body := ask(advertiserToken, "/v2/report?from=2026-11-22&to=2026-11-23"); res.StatusCode != http.StatusOK {
		t.Errorf("a report of one row beside the demo's: %d %s", res.StatusCode, body)
	}
	close(gated.open["demo"])
	if code := <-demo; code != http.StatusOK {
		t.Errorf("the demo partner's report: %d", code)
	}
	res, body = ask(advertiserToken, query)
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

// Three of the largest reports run at once within the default
// -report-rows, as it is sized: a report's last part is no more than the
// rows it may come to hold, so that it holds report.MaxRows at most, not
// a whole part past them.
func TestLargestReportsFitTheDefaultRows(t *testing.T) {
	n := config.Default().ReportRows
	s := &server{reportRows: newReportRows(n)}
	holds := make([]*reportHold, 3)
	for i := range holds {
		h, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil))
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
	if s.reportRows.free != int64(n) {
		t.Error("the reports did not give back every row they held")
	}
}

// When every report holding rows waits for more, none would give any
// back: the last to ask is refused at once (503 reports_busy), and the
// others grow into what it gave back, rather than all waiting
// reportWait out, every other report behind them, and the first asked
// refused.
func TestReportsWaitingOnEachOtherRefuseTheLast(t *testing.T) {
	const n = 64 * 10
	m := metrics.New()
	s := &server{reportRows: newReportRows(n), metrics: m}
	holds := make([]*reportHold, 4)
	for i := range holds {
		h, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil))
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = h
	}
	// They grow by turns to a quarter of the rows each: all of them.
	for rows := 1; rows <= n/4; rows++ {
		for _, h := range holds {
			if err := h.hold(rows); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Three ask for more, and wait.
	got := make(chan error, 3)
	for _, h := range holds[:3] {
		go func() {
			err := h.hold(n/4 + 1)
			if err != nil {
				h.release()
			}
			got <- err
		}()
	}
	for waiting := 0; waiting < 3; {
		time.Sleep(time.Millisecond)
		s.reportRows.mu.Lock()
		waiting = s.reportRows.growing
		s.reportRows.mu.Unlock()
	}
	err := holds[3].hold(n/4 + 1)
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != CodeReportsBusy {
		t.Fatalf("the fourth report asking for more while the three others wait: %v, want %s", err, CodeReportsBusy)
	}
	if got := busyCount(t, m); got != 1 {
		t.Errorf("adlink_reports_busy_total %v, want 1", got)
	}
	holds[3].release()
	for range 3 {
		if err := <-got; err != nil {
			t.Errorf("a report waiting for the refused one's rows: %v", err)
		}
	}
	for _, h := range holds {
		h.release()
	}
	if s.reportRows.free != n {
		t.Errorf("%d rows free once every report is done, want %d", s.reportRows.free, n)
	}
}
