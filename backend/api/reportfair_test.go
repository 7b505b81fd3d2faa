package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/backend/report"
)

// metricLines are m's lines of the series named.
func metricLines(m *metrics.Metrics, name string) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var out []string
	for l := range strings.SplitSeq(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// seenLimiter is the server's limiter of reports, which sends on seen
// each key it is asked about: the request is past its limits.
type seenLimiter struct {
	ratelimit.Limiter
	seen chan string
}

func (l seenLimiter) Allow(ctx context.Context, key string, lim ratelimit.Limit) ratelimit.Decision {
	d := l.Limiter.Allow(ctx, key, lim)
	l.seen <- key
	return d
}

// A client that leaves while its report waits for its first rows, the
// others holding every row, made no server error: its request is counted
// as 499, not as a 5xx, and no error is logged.
func TestClientGoneWhileReportWaitsForRows(t *testing.T) {
	var logs syncBuffer
	m := metrics.New()
	var gated gatedRollups
	seen := make(chan string, 10)
	env := newReportEnvWith(t, func(d *Deps) {
		d.Config.ReportRows = 1
		d.Metrics = m
		d.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		gated = gatedRollups{BoltRollups: d.Rollups.(clicks.BoltRollups), started: make(chan struct{}, 10),
			open: map[string]chan struct{}{"demo": make(chan struct{})}}
		d.Rollups = gated
		d.Limiter = func(kind string) ratelimit.Limiter {
			l := ratelimit.New(ratelimit.Options{})
			if kind == "reports" {
				return seenLimiter{Limiter: l, seen: seen}
			}
			return l
		}
	})
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	ask := func(ctx context.Context, token string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v2/report", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	// The demo partner's report holds the only row as it reads.
	demo := make(chan int, 1)
	go func() {
		res, err := ask(t.Context(), partners.DemoReportToken)
		if err != nil {
			demo <- 0
			return
		}
		res.Body.Close()
		demo <- res.StatusCode
	}()
	<-gated.started
	for len(seen) > 0 {
		<-seen
	}
	// The advertiser's waits for it, and its client leaves.
	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan error, 1)
	go func() {
		res, err := ask(ctx, advertiserToken)
		if err == nil {
			res.Body.Close()
			err = nil
		}
		gone <- err
	}()
	for k := range seen {
		if strings.HasPrefix(k, "account\x00advertiser") {
			break // past its limits: it waits for the row
		}
	}
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("the report was answered, want its client gone")
	}
	for {
		l := metricLines(m, "adlink_http_requests_total")
		if strings.Contains(l, `status="5`) {
			t.Fatalf("the client gone was counted as a 5xx:\n%s", l)
		}
		if strings.Contains(l, `status="499"`) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the server sees the client gone
	}
	for _, l := range logs.lines(t) {
		if l["level"] == "ERROR" {
			t.Errorf("logged as an error: %v", l)
		}
	}
	close(gated.open["demo"])
	if code := <-demo; code != http.StatusOK {
		t.Errorf("the demo partner's report: %d", code)
	}
}

// A large report reading, that needs more rows while small reports of
// other accounts hold the rest and a stream of them waits to start, is
// given the rows each one that ends gives back: a report starting leaves
// a part free for the reports reading. Before, every row given back went
// to the reports waiting to start, and the large one was refused at
// once, again each time it was asked.
func TestLargeReportReadingGetsRowsBeforeSmallOnesStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 64 * reportFirst // parts of a thousand rows
		s := &server{reportRows: newReportRows(n), metrics: metrics.New()}
		b := s.reportRows
		start := func(id string) (*reportHold, error) {
			acc := accounts.Account{Kind: accounts.Partner, ID: id}
			return s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil), acc)
		}
		large, err := start("large")
		if err != nil {
			t.Fatal(err)
		}
		// Small reports of other accounts, more than the rows hold, all
		// but those waiting to start reading.
		holding := make(chan *reportHold, 200)
		var wg sync.WaitGroup
		small := func(i int) {
			wg.Go(func() {
				h, err := start("small" + strconv.Itoa(i))
				if err != nil {
					t.Errorf("small report %d: %v", i, err)
					return
				}
				holding <- h
			})
		}
		for i := range 70 {
			small(i)
		}
		synctest.Wait()
		if len(b.queue) == 0 {
			t.Fatal("no small report waits to start")
		}
		// The large report reads 40 parts; before each, a small report
		// ends, and another asks to start.
		for rows := large.held + 1; rows <= 40*reportFirst; rows++ {
			if rows > large.held {
				(<-holding).release()
				small(int(rows))
				synctest.Wait()
			}
			if err := large.hold(int(rows)); err != nil {
				t.Errorf("the large report at its row %d, %d small reports waiting to start: %v", rows, len(b.queue), err)
				break
			}
		}
		// Once it is done, the small reports start and end.
		large.release()
		for range 70 {
			(<-holding).release()
		}
		wg.Wait()
		if b.free != n || len(b.held) != 0 || len(b.queue) != 0 {
			t.Errorf("%d rows free, %d accounts holding, %d reports waiting once every report is done, want %d, 0, 0",
				b.free, len(b.held), len(b.queue), n)
		}
	})
}

// On a server no other account uses, one account's reports may hold more
// than its share: its two largest at once (a dashboard's table and a CSV
// download, 400,000 rows of the default 600,000) run to their end, and
// leave another account's largest report room. While another account's
// report holds rows, the account's reports hold no more than their
// share. Before, the second of the two was refused at 300,000 rows.
func TestOneAccountAloneHoldsPastItsShare(t *testing.T) {
	n := config.Default().ReportRows
	s := &server{reportRows: newReportRows(n), metrics: metrics.New()}
	b := s.reportRows
	start := func(acc accounts.Account) *reportHold {
		t.Helper()
		h, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil), acc)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := accounts.Account{Kind: accounts.Advertiser, ID: "a.example"}
	other := accounts.Account{Kind: accounts.Partner, ID: "other"}
	two := []*reportHold{start(a), start(a)}
	for rows := 1; rows <= report.MaxRows; rows++ {
		for i, h := range two {
			if err := h.hold(rows); err != nil {
				t.Fatalf("the account's report %d of 2 at its row %d, alone on the server: %v", i+1, rows, err)
			}
		}
	}
	largest := start(other)
	for rows := 1; rows <= report.MaxRows; rows++ {
		if err := largest.hold(rows); err != nil {
			t.Fatalf("another account's largest report at its row %d, beside the account's two: %v", rows, err)
		}
	}
	for _, h := range append(two, largest) {
		h.release()
	}

	// Another account's report holds rows: the account has its share.
	small := start(other)
	two = []*reportHold{start(a), start(a)}
	var refused error
	for rows := 1; rows <= report.MaxRows && refused == nil; rows++ {
		for _, h := range two {
			if refused = h.hold(rows); refused != nil {
				break
			}
		}
	}
	if e := (*Error)(nil); !errors.As(refused, &e) || e.Code != CodeReportsBusy || !errors.Is(refused, errAccountRows) {
		t.Errorf("the account's two largest reports beside another account's: %v, want %s for the account's share", refused, CodeReportsBusy)
	}
	if held := b.held[a]; held > b.share {
		t.Errorf("the account's reports hold %d rows beside another account's, its share is %d", held, b.share)
	}
	for _, h := range append(two, small) {
		h.release()
	}
	if b.free != int64(n) || len(b.held) != 0 {
		t.Errorf("%d rows free once every report is done, want %d", b.free, n)
	}
}

// slowWriter is a client that reads a report slowly: its first write
// closes writing and waits for done.
type slowWriter struct {
	*httptest.ResponseRecorder
	once    sync.Once
	writing chan struct{}
	done    chan struct{}
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.writing)
		<-w.done
	})
	return w.ResponseRecorder.Write(p)
}

// A report once read holds only its rows while it is written, which a
// slow client makes long: a report of one row gives back the rest of
// the thousand it started with. Before, it held them all to its end.
func TestReportHoldsItsRowsAsItIsWritten(t *testing.T) {
	m := metrics.New()
	env := newReportEnvWith(t, func(d *Deps) {
		d.Config.ReportRows = 64 * reportFirst // it starts with a thousand
		d.Metrics = m
	})
	env.traffic(t)
	w := &slowWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan struct{}), done: make(chan struct{})}
	req := httptest.NewRequest(http.MethodGet, "/v2/report?from=2026-11-22&to=2026-11-23", nil)
	req.Header.Set("Authorization", "Bearer "+advertiserToken)
	served := make(chan struct{})
	go func() {
		defer close(served)
		env.handler.ServeHTTP(w, req)
	}()
	<-w.writing
	held := metricLines(m, "adlink_report_rows_held")
	close(w.done)
	<-served
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(w.Body.Bytes(), &all); err != nil || w.Code != http.StatusOK || len(all.Rows) != 1 {
		t.Fatalf("%d %s, want a row", w.Code, w.Body)
	}
	if held != "adlink_report_rows_held 1" {
		t.Errorf("a report of one row, as it is written: %q, want adlink_report_rows_held 1", held)
	}
	if held := metricLines(m, "adlink_report_rows_held"); held != "adlink_report_rows_held 0" {
		t.Errorf("once it is written: %q, want adlink_report_rows_held 0", held)
	}
}

// A large report reading is not refused by a stream of reports of other
// accounts a row past their first part: such a report, reading its row
// past the thousand it started with, takes of the part kept free for the
// reports reading only what it needs. Before, it took the part whole for
// one row, and the large report, asking next, found no row free.
func TestLargeReportReadingBesideReportsJustPastTheirFirstPart(t *testing.T) {
	const n = 64 * reportFirst // parts of a thousand rows
	s := &server{reportRows: newReportRows(n), metrics: metrics.New()}
	b := s.reportRows
	others := 0
	start := func() *reportHold {
		t.Helper()
		others++
		acc := accounts.Account{Kind: accounts.Partner, ID: "other" + strconv.Itoa(others)}
		h, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil), acc)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	large, err := s.holdReport(httptest.NewRequest(http.MethodGet, "/v2/report", nil),
		accounts.Account{Kind: accounts.Advertiser, ID: "large.example"})
	if err != nil {
		t.Fatal(err)
	}
	for rows := 1; rows <= 30*reportFirst; rows++ {
		if err := large.hold(rows); err != nil {
			t.Fatalf("the large report at its row %d, alone: %v", rows, err)
		}
	}
	// Reports of other accounts start while a part stays free past
	// theirs, without waiting.
	var running []*reportHold
	for b.free >= b.first+b.step {
		running = append(running, start())
	}
	// Before each part the large report asks for, the oldest of them
	// reads its row past the first part and ends, and another starts
	// when it may.
	for rows := large.held + 1; rows <= 40*reportFirst; rows++ {
		if rows > large.held {
			m := running[0]
			running = running[1:]
			if err := m.hold(reportFirst + 1); err != nil {
				t.Fatalf("a report at its row %d: %v", reportFirst+1, err)
			}
			if err := large.hold(int(rows)); err != nil {
				t.Fatalf("the large report at its row %d, beside %d reports of other accounts: %v", rows, len(running)+1, err)
			}
			m.keep(reportFirst + 1)
			m.release()
			for b.free >= b.first+b.step {
				running = append(running, start())
			}
			continue
		}
		if err := large.hold(int(rows)); err != nil {
			t.Fatalf("the large report at its row %d: %v", rows, err)
		}
	}
	large.release()
	for _, h := range running {
		h.release()
	}
	if b.free != n || len(b.held) != 0 || len(b.queue) != 0 {
		t.Errorf("%d rows free, %d accounts holding, %d reports waiting once every report is done, want %d, 0, 0",
			b.free, len(b.held), len(b.queue), n)
	}
}
