package api

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/store"
)

// BenchmarkRedirect measures clicks per second of GET /v1/redirect with
// every check of a billable click (signature, user agent, intent, the
// decision id, the network's windows; each click a link of its own from a
// network of its own, so each bills) beside the same redirect with judging
// skipped (no click keys: every click is recorded unsigned at once), both
// recording into a bbolt click log, with the same concurrent clients in
// the same run. It does a fixed number of clicks per iteration, so
// -benchtime 1x (make bench) is a full measurement. Target: ratio >= 0.8.
func BenchmarkRedirect(b *testing.B) {
	const (
		clients = 8    // concurrent callers of the handler
		n       = 2000 // clicks per measurement
		rounds  = 3    // alternating measurements; the best of each counts
	)
	secret := sha256.Sum256([]byte("bench key"))
	keys, err := clicks.NewKeys(clicks.Key{ID: "b1", Secret: secret[:]})
	if err != nil {
		b.Fatal(err)
	}
	p := clicks.Params{Type: "search", AdID: "handyladen.de", AdType: "advertiser", APIKey: "demo", SiteID: "demo", Criterion: "handy"}
	query := string(clicks.AppendQuery(nil, &p))
	exp := time.Now().Add(time.Hour)
	// Links for every measurement: a decision is billed once.
	links := func() []string {
		out := make([]string, n)
		for i := range out {
			d := clicks.NewDecision()
			e, sig := keys.Sign(&p, d, exp)
			out[i] = "/v1/redirect?" + query + "&d=" + d + "&exp=" + e + "&sig=" + sig
		}
		return out
	}
	var round atomic.Int64
	measure := func(h http.Handler, billable *atomic.Int64, want bool) float64 {
		ls := links()
		r := round.Add(1)
		billable.Store(0)
		var wg sync.WaitGroup
		start := time.Now()
		for c := range clients {
			wg.Go(func() {
				for i := c; i < n; i += clients {
					req := httptest.NewRequest(http.MethodGet, ls[i], nil)
					// A network of its own for each click of each round.
					req.RemoteAddr = "[2001:db8:" + strconv.FormatInt(r, 16) + ":" + strconv.FormatInt(int64(i), 16) + "::1]:40000"
					req.Header.Set("User-Agent", browserUA)
					clicks.Navigation.Header(req.Header)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusFound {
						b.Errorf("click answered %d: %s", w.Code, w.Body)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		if got := billable.Load(); (got == n) != want {
			b.Fatalf("%d of %d clicks billable (judged: %v)", got, n, want)
		}
		return float64(n) / elapsed.Seconds()
	}
	var judgedBillable, skippedBillable atomic.Int64
	judged := redirectBenchServer(b, keys, &judgedBillable)
	skipped := redirectBenchServer(b, nil, &skippedBillable)
	measure(judged, &judgedBillable, true) // warm up
	measure(skipped, &skippedBillable, false)

	var bestJudged, bestSkipped float64
	b.ResetTimer()
	for range b.N {
		for range rounds {
			bestSkipped = max(bestSkipped, measure(skipped, &skippedBillable, false))
			bestJudged = max(bestJudged, measure(judged, &judgedBillable, true))
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bestJudged, "judged-clicks/s")
	b.ReportMetric(bestSkipped, "skipped-clicks/s")
	b.ReportMetric(bestJudged/bestSkipped, "ratio")
}

// redirectBenchServer is a server over the test fixture whose clicks go
// to a bbolt click log of its own, counting the billable ones; with keys
// it judges them and records them with the file's Ledger, as the server
// does.
func redirectBenchServer(b *testing.B, keys *clicks.Keys, billable *atomic.Int64) http.Handler {
	b.Helper()
	ix, err := market.Build(fixture())
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	log, err := clicks.New(db)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst, cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9, 1e9, 1e9
	cfg.NetworkDailyClicks, cfg.PrefixDailyClicks, cfg.IPv4PrefixDailyClicks, cfg.PrefixAdDailyClicks = 1<<30, 1<<30, 1<<30, 1<<30
	d := Deps{Config: cfg, Indexes: ix, Partners: testPartners(b), Clicks: &clickRecorder{AppendFn: func(ctx context.Context, c clicks.Click) error {
		if c.Billable {
			billable.Add(1)
		}
		return log.Append(ctx, c)
	}}}
	if keys != nil {
		d.ClickKeys = keys
		if d.Windows, err = clicks.NewWindows(db); err != nil {
			b.Fatal(err)
		}
		if d.Decisions, err = clicks.NewDecisions(db); err != nil {
			b.Fatal(err)
		}
		l, err := clicks.NewLedger(db)
		if err != nil {
			b.Fatal(err)
		}
		d.Ledger = countingLedger{l, billable}
	}
	return NewServer(d)
}

// countingLedger counts the billable clicks its Ledger records.
type countingLedger struct {
	clicks.Ledger
	billable *atomic.Int64
}

func (l countingLedger) Record(ctx context.Context, c *clicks.Click, u clicks.Use) error {
	err := l.Ledger.Record(ctx, c, u)
	if err == nil && c.Billable {
		l.billable.Add(1)
	}
	return err
}
