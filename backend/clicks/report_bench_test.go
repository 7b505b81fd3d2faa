package clicks_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/backend/store"
)

// BenchmarkReport times reports over 30 days of 10,000,000 generated
// clicks (and as many impressions ten times over) on 20 sites and 2,000
// ads whose clicks follow a Zipf law: grouped by day and site, and by ad,
// each as JSON and as CSV, from the rollups. The clicks' rollups are
// written as their commits would have written them (the daily grain,
// which these reports read). The baseline is what a report without
// rollups costs: a scan of the click log, timed over 100,000 clicks
// written as the server writes them and scaled to 10,000,000 (a scan is
// linear in the clicks). Target: each report at most 200 ms.
func BenchmarkReport(b *testing.B) {
	const (
		clicksTotal = 10_000_000
		days        = 30
		sites       = 20
		ads         = 2000
		sample      = 100_000
	)
	db, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	// Months of traffic are written at once, without an fsync per day.
	db.NoSync = true
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	genStart := time.Now()
	// Each ad's share of the clicks follows Zipf's law (s = 1.1); each day
	// spreads them over the sites and contexts at random.
	weights := make([]float64, ads)
	var total float64
	for a := range weights {
		weights[a] = 1 / math.Pow(float64(a+1), 1.1)
		total += weights[a]
	}
	for d := range days {
		rows := map[[3]int]*clicks.Rollup{}
		for a := range ads {
			n := int(float64(clicksTotal/days)*weights[a]/total + rng.Float64())
			for range n {
				k := [3]int{rng.IntN(sites), a, rng.IntN(2)}
				r := rows[k]
				if r == nil {
					r = &clicks.Rollup{Start: t0.AddDate(0, 0, d), APIKey: "demo", SiteID: "site" + strconv.Itoa(k[0]),
						Advertiser: "shop" + strconv.Itoa(a%50) + ".example", AdID: "AD." + strconv.Itoa(a),
						Context: []string{"search", "intext"}[k[2]], Currency: "EUR"}
					rows[k] = r
				}
				r.Impressions += 10
				r.Clicks++
				if rng.IntN(4) > 0 {
					r.Billable++
					r.SpendMicros += 450_000
				} else {
					r.Unbilled[rng.IntN(len(r.Unbilled))]++
				}
			}
		}
		batch := make([]clicks.Rollup, 0, len(rows))
		for _, r := range rows {
			batch = append(batch, *r)
		}
		if err := clicks.AddDayRows(db, batch); err != nil {
			b.Fatal(err)
		}
	}
	db.NoSync = false
	if err := db.Sync(); err != nil {
		b.Fatal(err)
	}
	b.Logf("rollups of %d clicks written in %v", clicksTotal, time.Since(genStart))
	// The log sample, in a file of its own.
	logDB, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer logDB.Close()
	log, err := clicks.New(logDB)
	if err != nil {
		b.Fatal(err)
	}
	genStart = time.Now()
	for i := 0; i < sample; i += 10_000 {
		cs := make([]clicks.Click, 10_000)
		for j := range cs {
			n := i + j
			cs[j] = clicks.Click{Time: t0.Add(time.Duration(n) * 25 * time.Second), AdID: "AD." + strconv.Itoa(n%ads),
				AdType: "product", Type: "intext", APIKey: "demo", SiteID: "site" + strconv.Itoa(n%sites), Criterion: "handy hülle",
				YkTag: "t:" + strconv.Itoa(n%4), IP: "2001:db8::" + strconv.Itoa(n%9999), UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
				Advertiser: "shop.example", BidMicros: 450_000, Currency: "EUR", Billable: n%4 > 0}
		}
		if err := clicks.AppendClicks(logDB, cs); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("log sample written in %v", time.Since(genStart))
	rollups := clicks.ReadRollups(db)
	acc := accounts.Account{Kind: accounts.Partner, ID: "demo"}
	req := report.Request{From: t0, To: t0.AddDate(0, 0, days-1)}
	run := func(groups []string, csv bool) time.Duration {
		r := req
		r.GroupBy = groups
		start := time.Now()
		rows, err := report.Run(context.Background(), rollups, acc, r)
		if err != nil {
			b.Fatal(err)
		}
		if csv {
			var buf bytes.Buffer
			if err := report.WriteCSV(&buf, r, rows); err != nil {
				b.Fatal(err)
			}
		} else {
			_ = report.AppendJSON(nil, acc, r, rows)
		}
		return time.Since(start)
	}
	best := func(f func() time.Duration) float64 {
		m := time.Duration(1 << 62)
		for range 3 {
			m = min(m, f())
		}
		return float64(m.Microseconds()) / 1e3
	}
	b.ResetTimer()
	for range b.N {
		daySite := best(func() time.Duration { return run([]string{"day", "site_id"}, false) })
		daySiteCSV := best(func() time.Duration { return run([]string{"day", "site_id"}, true) })
		byAd := best(func() time.Duration { return run([]string{"ad"}, false) })
		byAdCSV := best(func() time.Duration { return run([]string{"ad"}, true) })
		var mu sync.Mutex
		scanned := 0
		scan := best(func() time.Duration {
			start := time.Now()
			sums := map[string]int64{}
			log.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
				mu.Lock()
				sums[c.SiteID+c.Time.Format(time.DateOnly)] += c.Spend()
				scanned++
				mu.Unlock()
				return nil
			})
			return time.Since(start)
		}) * clicksTotal / sample
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(daySite, "ms-day-site-json")
		b.ReportMetric(daySiteCSV, "ms-day-site-csv")
		b.ReportMetric(byAd, "ms-ad-json")
		b.ReportMetric(byAdCSV, "ms-ad-csv")
		b.ReportMetric(scan, "ms-log-scan-10M")
		b.ReportMetric(max(daySite, daySiteCSV, byAd, byAdCSV)/scan, "ratio")
	}
}

// BenchmarkLedgerRollups measures durable clicks per second through the
// BoltLedger (decision, window, log entry, rollups and spend in the
// click's commit) beside the same commit without rollups and spend (the
// click path before them), from the same concurrent clients on fresh
// files in the same run. Target: ratio >= 0.8.
func BenchmarkLedgerRollups(b *testing.B) {
	const clients, perClient = 32, 100
	t0 := time.Now()
	click := func(g, i int) clicks.Click {
		return clicks.Click{Time: t0, AdID: "AD." + strconv.Itoa(i%50), AdType: "product", Type: "search", APIKey: "demo",
			SiteID: "demo", Criterion: "handy", YkTag: "t", IP: "2001:db8:" + strconv.Itoa(g) + ":" + strconv.Itoa(i) + "::1",
			UserAgent: "Mozilla/5.0", Advertiser: "shop.example", BidMicros: 450_000, Currency: "EUR"}
	}
	measure := func(write func(g, i int) error) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range clients {
			wg.Go(func() {
				for i := range perClient {
					if err := write(g, i); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return clients * perClient / time.Since(start).Seconds()
	}
	use := func(g, i int) clicks.Use {
		return clicks.Use{D: strconv.Itoa(g) + "." + strconv.Itoa(i), Expires: t0.Add(time.Hour), Limit: 1000, Budget: 1 << 50}
	}
	var withRollups, plain float64
	for range b.N {
		for range 3 {
			db, err := store.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			bare, _ := clicks.NewLedger(db)
			plain = max(plain, measure(func(g, i int) error {
				c := click(g, i)
				return clicks.RecordBare(bare, &c, use(g, i))
			}))
			db.Close()

			db, err = store.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			ledger, _ := clicks.NewLedger(db)
			withRollups = max(withRollups, measure(func(g, i int) error {
				c := click(g, i)
				return ledger.Record(context.Background(), &c, use(g, i))
			}))
			db.Close()
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(withRollups, "ledger-clicks/s")
	b.ReportMetric(plain, "bare-clicks/s")
	b.ReportMetric(withRollups/plain, "ratio")
}

// BenchmarkMaximalReport measures the memory of the largest report a
// server answers: report.MaxRows rows of one partner, 31 days by the
// hour and every other group, each row its own hour, site, ad,
// advertiser, criterion, yk_tag, context and country, read from bbolt's
// hourly rollups and written as JSON and as CSV, a part at a time as the
// server writes them. For each it reports what the report allocated in
// all, the heap's peak over the heap before it (sampled every
// millisecond, the collector at its default), and what stays live while
// the answer is written (the rows, after a collection). The server-wide bound on reports running
// at once is sized from these.
func BenchmarkMaximalReport(b *testing.B) {
	db, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.NoSync = true
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	const hours = 31 * 24
	rows := make([]clicks.Rollup, 0, 50_000)
	countries := []string{"de", "at", "ch", "fr", "nl"}
	for i := range report.MaxRows {
		n := i / hours
		rows = append(rows, clicks.Rollup{Start: t0.Add(time.Duration(i%hours) * time.Hour), APIKey: "demo",
			SiteID: "site-" + strconv.Itoa(n%50), Advertiser: "shop" + strconv.Itoa(n%500) + ".example",
			AdID: "AD." + strconv.Itoa(100_000+n), Context: []string{"search", "intext"}[n%2], Currency: "EUR",
			Criterion: "handy hülle iphone " + strconv.Itoa(n), YkTag: "t:campaign-" + strconv.Itoa(n%20),
			Country:  countries[n%len(countries)],
			Measures: clicks.Measures{Impressions: 40, Clicks: 3, Billable: 2, SpendMicros: 900_000}})
		if len(rows) == cap(rows) || i == report.MaxRows-1 {
			if err := clicks.AddHourRows(db, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	rollups := clicks.ReadRollups(db)
	acc := accounts.Account{Kind: accounts.Partner, ID: "demo"}
	req := report.Request{From: t0, To: t0.AddDate(0, 0, 30), GroupBy: []string{"hour", "site_id", "ad", "advertiser",
		"criterion", "yk_tag", "context", "country"}}
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heapNow := func() uint64 {
		metrics.Read(heap)
		return heap[0].Value.Uint64()
	}
	// measure runs one report and its answer, and gives its bytes
	// allocated, the heap's peak and what stays live with the answer, in
	// MB, and its rows.
	measure := func(csv bool) (alloc, peak, live float64, n int) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		base := heapNow()
		stop, done := make(chan struct{}), make(chan uint64)
		go func() {
			top := base
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				top = max(top, heapNow())
				select {
				case <-stop:
					done <- top
					return
				case <-t.C:
				}
			}
		}()
		out, err := report.Run(context.Background(), rollups, acc, req)
		if err != nil {
			b.Fatal(err)
		}
		// The answer is written as the server writes it, a part at a
		// time, to a client that reads as fast.
		if csv {
			w := bufio.NewWriterSize(io.Discard, 64<<10)
			if err := report.WriteCSV(w, req, out); err != nil {
				b.Fatal(err)
			}
			w.Flush()
		} else if err := report.WriteJSON(io.Discard, acc, req, out); err != nil {
			b.Fatal(err)
		}
		close(stop)
		top := max(<-done, heapNow())
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept := heapNow()
		runtime.KeepAlive(out)
		const mb = 1 << 20
		return float64(after.TotalAlloc-before.TotalAlloc) / mb, float64(top-base) / mb, float64(kept-base) / mb, len(out)
	}
	// The first report's heap before it still counts what writing the
	// rollups left: it would be measured short. One is run unmeasured.
	measure(true)
	b.ResetTimer()
	for range b.N {
		alloc, peak, live, n := measure(false)
		if n != report.MaxRows {
			b.Fatalf("%d rows, want %d", n, report.MaxRows)
		}
		csvAlloc, csvPeak, csvLive, _ := measure(true)
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(alloc, "MB-alloc-json")
		b.ReportMetric(peak, "MB-peak-json")
		b.ReportMetric(live, "MB-live-json")
		b.ReportMetric(csvAlloc, "MB-alloc-csv")
		b.ReportMetric(csvPeak, "MB-peak-csv")
		b.ReportMetric(csvLive, "MB-live-csv")
		b.ReportMetric(max(peak, csvPeak)*(1<<20)/float64(n), "B-peak/row")
	}
}
