package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// BenchmarkReportInZone times a partner's report of 31 days by day and
// site from Postgres, as the server runs it (report.Run): in UTC, which
// reads the daily grain, and in Europe/Berlin, whose days Postgres sums
// from the hourly grain (Rollups.SumHours). And the other way to sum
// Berlin's days: every hour of every dimension read, and summed in Go. The rollups hold 31
// days of rowsPerHour rows an hour, half of them the partner's, half
// another's, on 20 sites, 400 ads and a criterion each; the daily grains
// hold their sums. Each reports its best of three.
func BenchmarkReportInZone(b *testing.B) {
	const rowsPerHour = 400
	ctx := context.Background()
	db, err := pgstore.Open(ctx, testpg.New(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	seedBenchRollups(b, db, t0, rowsPerHour)
	acc := accounts.Account{Kind: accounts.Partner, ID: "demo"}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	req := report.Request{From: t0, To: t0.AddDate(0, 0, 30), GroupBy: []string{"day", "site_id"}}
	run := func(zone *time.Location) (time.Duration, int) {
		r := req
		r.Zone = zone
		start := time.Now()
		rows, err := report.Run(ctx, db.Rollups(), acc, r)
		if err != nil {
			b.Fatal(err)
		}
		_ = report.AppendJSON(nil, acc, r, rows)
		return time.Since(start), len(rows)
	}
	// The other way: every hour of every dimension read, and summed by
	// Berlin's day and the site in Go, as a report grouped by hour reads.
	inGo := func() (time.Duration, int) {
		local := report.Request{From: req.From, To: req.To, Zone: berlin}
		from, to := local.Range()
		start := time.Now()
		sums := map[[2]string]*clicks.Measures{}
		err := db.Rollups().ScanRollups(ctx, clicks.Hour, from, to, func(r *clicks.Rollup) error {
			if r.APIKey != "demo" {
				return nil
			}
			k := [2]string{r.Start.In(berlin).Format(time.DateOnly), r.SiteID}
			if sums[k] == nil {
				sums[k] = &clicks.Measures{}
			}
			sums[k].Add(&r.Measures)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), len(sums)
	}
	best := func(f func() (time.Duration, int)) (float64, int) {
		m, n := time.Duration(1<<62), 0
		for range 3 {
			d, rows := f()
			m, n = min(m, d), rows
		}
		return float64(m.Microseconds()) / 1e3, n
	}
	b.ResetTimer()
	for range b.N {
		utc, nUTC := best(func() (time.Duration, int) { return run(nil) })
		local, nLocal := best(func() (time.Duration, int) { return run(berlin) })
		goSums, nGo := best(inGo)
		if nUTC != 31*10 || nLocal != 31*10 || nGo != 31*10 {
			b.Fatalf("rows: %d in UTC, %d in Berlin, %d summed in Go; want %d", nUTC, nLocal, nGo, 31*10)
		}
		b.ReportMetric(utc, "ms-utc-days")
		b.ReportMetric(local, "ms-berlin-days")
		b.ReportMetric(goSums, "ms-berlin-hours-in-go")
		b.ReportMetric(0, "ns/op")
	}
}

// seedBenchRollups writes 33 days from a day before t0 of rowsPerHour
// hourly rollup rows an hour, half of them partner demo's, half other's,
// on 20 sites, 50 advertisers, 400 ads and a criterion each, in the
// contexts intext and search, and the daily grains' sums of them.
func seedBenchRollups(b *testing.B, db *pgstore.DB, t0 time.Time, rowsPerHour int) {
	ctx := context.Background()
	first := t0.Add(-24*time.Hour).Unix() / 3600
	start := time.Now()
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
			criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
			SELECT 0, 0, $1 + h, CASE WHEN r % 2 = 0 THEN 'demo' ELSE 'other' END, 'site' || (r % 20), 'shop' || (r % 50) || '.example',
				'AD.' || (r % 400), CASE WHEN r % 3 = 0 THEN 'intext' ELSE 'search' END, 'EUR', 'criterion ' || r, '', 'de',
				10, 2, 1, 450000, array_fill(0::bigint, ARRAY[17])
			FROM generate_series(0, 33 * 24 - 1) h, generate_series(0, $2 - 1) r`, first, rowsPerHour); err != nil {
			return err
		}
		// The daily grains: Day keeps every dimension, DaySite the site,
		// DayAd the ad (clicks.Grain); the others are ''.
		for grain, dims := range map[int]string{
			1: "site_id, ad_id, criterion, yk_tag, country",
			2: "site_id, ''::text, ''::text, ''::text, ''::text",
			3: "''::text, ad_id, ''::text, ''::text, ''::text",
		} {
			if _, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, advertiser, context, currency,
				site_id, ad_id, criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
				SELECT $1::smallint, 0, period / 24, api_key, advertiser, context, currency, `+dims+`,
					sum(impressions), sum(clicks), sum(billable), sum(spend_micros), array_fill(0::bigint, ARRAY[17])
				FROM rollups WHERE grain = 0
				GROUP BY period / 24, api_key, advertiser, context, currency, `+dims, grain); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "ANALYZE rollups")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("rollups written in %v", time.Since(start))
}

// BenchmarkSiteReview times the site review (report.Sites) of 30 days
// from Postgres, summed by site in SQL (Rollups.SumSites): of whole days,
// which reads the daily rows by site, and of the same days with 5 hours
// before and 3 after, which reads those hours' rows too; beside the way
// it was read before, every DaySite row of the days (by advertiser,
// shard and day) streamed and summed in Go. BenchmarkReportInZone's
// rollups; each reports its best of three, and the rows Postgres sent.
func BenchmarkSiteReview(b *testing.B) {
	ctx := context.Background()
	db, err := pgstore.Open(ctx, testpg.New(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	seedBenchRollups(b, db, t0, 400)
	days := report.SitesRequest{From: t0, To: t0.AddDate(0, 0, 30), Limit: report.MaxReviewLimit}
	edges := days
	edges.From, edges.To = days.From.Add(-5*time.Hour), days.To.Add(3*time.Hour)
	sent := 0
	review := func(req report.SitesRequest) func() (time.Duration, int) {
		return func() (time.Duration, int) {
			sent = 0
			start := time.Now()
			v, err := report.Sites(ctx, countedSites{db.Rollups(), &sent}, req)
			if err != nil {
				b.Fatal(err)
			}
			return time.Since(start), v.Reviewed
		}
	}
	inGo := func() (time.Duration, int) {
		start := time.Now()
		sums := map[[2]string]*clicks.Measures{}
		sent = 0
		err := db.Rollups().ScanRollups(ctx, clicks.DaySite, days.From, days.To, func(r *clicks.Rollup) error {
			sent++
			k := [2]string{r.APIKey, r.SiteID}
			if sums[k] == nil {
				sums[k] = &clicks.Measures{}
			}
			sums[k].Add(&r.Measures)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), len(sums)
	}
	best := func(f func() (time.Duration, int)) (float64, int) {
		m, n := time.Duration(1<<62), 0
		for range 3 {
			d, sites := f()
			m, n = min(m, d), sites
		}
		return float64(m.Microseconds()) / 1e3, n
	}
	b.ResetTimer()
	for range b.N {
		sql, nDays := best(review(days))
		sentDays := sent
		withEdges, nEdges := best(review(edges))
		goSums, nGo := best(inGo)
		sentInGo := sent
		if nDays != 20 || nEdges != 20 || nGo != 20 {
			b.Fatalf("sites: %d of whole days, %d with edge hours, %d summed in Go; want 20", nDays, nEdges, nGo)
		}
		b.ReportMetric(sql, "ms-days")
		b.ReportMetric(withEdges, "ms-days-and-hours")
		b.ReportMetric(goSums, "ms-days-in-go")
		b.ReportMetric(float64(sentDays), "rows-days")
		b.ReportMetric(float64(sentInGo), "rows-days-in-go")
		b.ReportMetric(0, "ns/op")
	}
}

// countedSites are Postgres's rollups that count the rows SumSites gives.
type countedSites struct {
	pgstore.Rollups
	n *int
}

func (c countedSites) SumSites(ctx context.Context, from, to time.Time, fn func(*clicks.Rollup) error) error {
	return c.Rollups.SumSites(ctx, from, to, func(r *clicks.Rollup) error {
		*c.n++
		return fn(r)
	})
}
