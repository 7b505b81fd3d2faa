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

// scanAll is the read of main before the account indexes: a partner's
// or an advertiser's rows are every account's rows of the range, left
// out in Go.
type scanAll struct{ pgstore.Rollups }

func (r scanAll) ScanAccountRollups(ctx context.Context, g clicks.Grain, from, to time.Time, kind clicks.Dimension, id string, fn func(*clicks.Rollup) error) error {
	return r.ScanRollups(ctx, g, from, to, func(row *clicks.Rollup) error {
		if kind == clicks.DimAPIKey && row.APIKey != id || kind == clicks.DimAdvertiser && row.Advertiser != id {
			return nil
		}
		return fn(row)
	})
}

// BenchmarkReportOfOneAccount times one small partner's report of 31
// days by day from Postgres (report.Run), in UTC (the daily grain) and
// in Europe/Berlin (the hourly grain summed by Postgres), and by the
// hour in Europe/Berlin, beside the operator's report of the whole
// network, first as main read it (every account's rows of the range,
// without the account indexes of migration 00020), then with the
// indexes, in the same run; and, with the indexes, the partner's hours
// scanned one by one and summed in Go, as a report by the hour read
// them before Postgres summed them. The rollups hold 33
// days of 1,000 hourly rows an hour, 5 an hour of each of 200 partners
// and 200 advertisers, and their daily grains. It also times building
// the two indexes (CREATE INDEX CONCURRENTLY) on that table. Each
// report is the best of three.
func BenchmarkReportOfOneAccount(b *testing.B) {
	const rowsPerHour = 1000
	ctx := context.Background()
	db, err := pgstore.Open(ctx, testpg.New(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	first := t0.Add(-24*time.Hour).Unix() / 3600
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
			criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
			SELECT 0, 0, $1 + h, 'key-' || (r % 200), 'site-' || (r % 200) || '-' || (r / 200), 'shop' || (r / 5) || '.example',
				'AD.' || (r / 5), 'search', 'EUR', 'criterion ' || r, '', 'de', 10, 2, 1, 450000, array_fill(0::bigint, ARRAY[17])
			FROM generate_series(0, 33 * 24 - 1) h, generate_series(0, $2 - 1) r`, first, rowsPerHour); err != nil {
			return err
		}
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
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	exec := func(sql string) {
		if _, err := db.Pool().Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	var rows int64
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM rollups").Scan(&rows); err != nil {
		b.Fatal(err)
	}
	exec("DROP INDEX rollups_api_key")
	exec("DROP INDEX rollups_advertiser")
	exec("VACUUM ANALYZE rollups")
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	partner := accounts.Account{Kind: accounts.Partner, ID: "key-7"}
	network := accounts.Account{Kind: accounts.Operator}
	req := report.Request{From: t0, To: t0.AddDate(0, 0, 30), GroupBy: []string{"day"}}
	// Berlin's November has no change of clocks: 31 days of 24 hours.
	byHour := []string{"hour"}
	bestOf := func(r clicks.RollupReader, acc accounts.Account, zone *time.Location, groups []string, want int) float64 {
		q := req
		q.Zone, q.GroupBy = zone, groups
		m := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			out, err := report.Run(ctx, r, acc, q)
			if err != nil {
				b.Fatal(err)
			}
			_ = report.AppendJSON(nil, acc, q, out)
			m = min(m, time.Since(start))
			if len(out) != want {
				b.Fatalf("%+v in %v by %v: %d rows, want %d", acc, zone, groups, len(out), want)
			}
			if want := int64(31 * 24 * rowsPerHour * 2); acc.Kind == accounts.Operator && out[3].Clicks != want/31 {
				b.Fatalf("the network's fourth day: %d clicks, want %d", out[3].Clicks, want/31)
			}
		}
		return float64(m.Microseconds()) / 1e3
	}
	best := func(r clicks.RollupReader, acc accounts.Account, zone *time.Location) float64 {
		return bestOf(r, acc, zone, req.GroupBy, 31)
	}
	b.ResetTimer()
	for range b.N {
		before := scanAll{db.Rollups()}
		// The table read once, so that the first figures do not pay for
		// the cache alone.
		best(before, network, berlin)
		utcBefore, berlinBefore := best(before, partner, nil), best(before, partner, berlin)
		netUTCBefore, netBerlinBefore := best(before, network, nil), best(before, network, berlin)
		hoursBefore := bestOf(before, partner, berlin, byHour, 31*24)
		start := time.Now()
		exec("CREATE INDEX CONCURRENTLY rollups_api_key ON rollups (grain, api_key, period)")
		exec("CREATE INDEX CONCURRENTLY rollups_advertiser ON rollups (grain, advertiser, period)")
		build := time.Since(start)
		exec("ANALYZE rollups")
		utc, local := best(db.Rollups(), partner, nil), best(db.Rollups(), partner, berlin)
		netUTC, netBerlin := best(db.Rollups(), network, nil), best(db.Rollups(), network, berlin)
		hours := bestOf(db.Rollups(), partner, berlin, byHour, 31*24)
		// As main read a report by the hour: the account's hourly rows
		// one by one, summed by hour in Go.
		scanned := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			q := req
			q.Zone = berlin
			from, to := q.Range()
			sums := map[time.Time]*clicks.Measures{}
			if err := db.Rollups().ScanAccountRollups(ctx, clicks.Hour, from, to, clicks.DimAPIKey, partner.ID, func(r *clicks.Rollup) error {
				m := sums[r.Start]
				if m == nil {
					m = new(clicks.Measures)
					sums[r.Start] = m
				}
				m.Add(&r.Measures)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			scanned = min(scanned, time.Since(start))
			if len(sums) != 31*24 {
				b.Fatalf("the partner's hours scanned: %d, want %d", len(sums), 31*24)
			}
		}
		var table, indexes int64
		if err := db.Pool().QueryRow(ctx, `SELECT pg_table_size('rollups'),
			pg_relation_size('rollups_api_key') + pg_relation_size('rollups_advertiser')`).Scan(&table, &indexes); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d rollup rows, %d MB; the two indexes built in %v, %d MB", rows, table>>20, build, indexes>>20)
		b.ReportMetric(utcBefore, "ms-partner-utc-before")
		b.ReportMetric(utc, "ms-partner-utc")
		b.ReportMetric(utc/utcBefore, "partner-utc-of-before")
		b.ReportMetric(berlinBefore, "ms-partner-berlin-before")
		b.ReportMetric(local, "ms-partner-berlin")
		b.ReportMetric(local/berlinBefore, "partner-berlin-of-before")
		b.ReportMetric(hoursBefore, "ms-partner-berlin-hours-before")
		b.ReportMetric(hours, "ms-partner-berlin-hours")
		b.ReportMetric(hours/hoursBefore, "partner-berlin-hours-of-before")
		b.ReportMetric(float64(scanned.Microseconds())/1e3, "ms-partner-berlin-hours-scanned")
		b.ReportMetric(netUTCBefore, "ms-network-utc-before")
		b.ReportMetric(netUTC, "ms-network-utc")
		b.ReportMetric(netBerlinBefore, "ms-network-berlin-before")
		b.ReportMetric(netBerlin, "ms-network-berlin")
		b.ReportMetric(utc/netUTC, "partner-utc-of-network")
		b.ReportMetric(local/netBerlin, "partner-berlin-of-network")
		b.ReportMetric(float64(build.Milliseconds()), "ms-build-indexes")
		b.ReportMetric(0, "ns/op")
	}
}
