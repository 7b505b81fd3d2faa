package clicks_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

// BenchmarkListFew times a page of a listing for an account with one
// click among 100,000 of other accounts over 30 days, on the bbolt log:
// read from the account index, oldest and newest first, beside the
// baseline, the scan of the range the log does without the index.
func BenchmarkListFew(b *testing.B) {
	db, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.NoSync = true
	log, err := clicks.New(db)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	const n = 100_000
	ctx := context.Background()
	var batch []clicks.Click
	for i := range n {
		c := clicks.Click{ID: strconv.Itoa(i), Time: t0.Add(time.Duration(i) * 30 * 24 * time.Hour / n), AdID: "ad" + strconv.Itoa(i%2000),
			AdType: "product", Type: "search", APIKey: "key" + strconv.Itoa(i%20), SiteID: "site", Criterion: "iphone 15 hülle",
			IP: "198.51.100.7", UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36", Country: "DE",
			Advertiser: "shop" + strconv.Itoa(i%50) + ".example", BidMicros: 150000, Currency: "EUR", Billable: true}
		if i == n/2 {
			c.APIKey = "few"
		}
		if batch = append(batch, c); len(batch) == 10_000 {
			if err := clicks.AppendClicks(db, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	q := clicks.Query{From: t0, To: t0.AddDate(0, 0, 31), APIKey: "few", Limit: 50}
	desc := q
	desc.Desc = true
	page := func(list func(context.Context, clicks.Query) ([]clicks.Click, bool, error), q clicks.Query) float64 {
		m := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			page, _, err := list(ctx, q)
			m = min(m, time.Since(start))
			if err != nil || len(page) != 1 {
				b.Fatal(len(page), err)
			}
		}
		return float64(m.Nanoseconds()) / 1e6
	}
	scanning := func(ctx context.Context, q clicks.Query) ([]clicks.Click, bool, error) {
		return clicks.ListScanning(ctx, log, q)
	}
	b.ResetTimer()
	for range b.N {
		index, indexDesc, scan := page(log.List, q), page(log.List, desc), page(scanning, q)
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(index, "ms-page-index")
		b.ReportMetric(indexDesc, "ms-page-index-desc")
		b.ReportMetric(scan, "ms-page-scan")
		b.ReportMetric(max(index, indexDesc)/scan, "ratio")
	}
}
