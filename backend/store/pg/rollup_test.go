package pgstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// TestReportsReadTheAccountIndexes: a partner's or an advertiser's rows
// of a grain's range, scanned or summed by day, are read from the index
// of its kind of account, not from every account's rows of the range,
// in a plan made for any account.
func TestReportsReadTheAccountIndexes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// 31 days of 100 partners' and 100 advertisers' hours, and their days.
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
			criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
			SELECT g, 0, CASE WHEN g = 0 THEN $1 / 3600 + h ELSE $1 / 86400 + h / 24 END, 'key-' || (r % 100), 'site',
				'shop-' || (r / 2) || '.example', 'AD.' || h, 'search', 'EUR', '', '', '', 1, 1, 1, 1000, array_fill(0::bigint, ARRAY[17])
			FROM generate_series(0, 31 * 24 - 1) h, generate_series(0, 199) r, unnest(ARRAY[0, 1]) g`, t0.Unix()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ANALYZE rollups")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g     clicks.Grain
		kind  clicks.Dimension
		id    string
		index string
	}{
		{clicks.Day, clicks.DimAPIKey, "key-7", "rollups_api_key"},
		{clicks.Hour, clicks.DimAPIKey, "key-7", "rollups_api_key"},
		{clicks.Day, clicks.DimAdvertiser, "shop-1.example", "rollups_advertiser"},
		{clicks.Hour, clicks.DimAdvertiser, "shop-1.example", "rollups_advertiser"},
	} {
		scan, sums, err := pgstore.RollupPlans(ctx, db, c.g, t0, t0.AddDate(0, 0, 31), c.kind, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(scan, c.index) {
			t.Errorf("grain %d, %s: the scan's plan\n%s\nwant %s", c.g, c.id, scan, c.index)
		}
		if c.g == clicks.Hour && !strings.Contains(sums, c.index) {
			t.Errorf("%s: the sums' plan\n%s\nwant %s", c.id, sums, c.index)
		}
	}
}

// A partner's and an advertiser's report by the hour in a zone other
// than UTC read their own rows from their index, and give exactly them:
// every row is of the account's sites or ads, and they add up to the
// account's hours of the range, whatever the other accounts have.
func TestReportByTheHourInAZoneOfOneAccount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC)
	// 10 days of 20 partners' and 20 advertisers' hours over Berlin's
	// change of clocks (2026-10-25), each partner on a site of its own,
	// each advertiser with an ad of its own.
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
			criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
			SELECT 0, s, $1 / 3600 + h, 'key-' || (r % 20), 'site-' || (r % 20), 'shop-' || (r / 2) || '.example',
				'AD.' || (r / 2), 'search', 'EUR', 'criterion ' || r, '', 'de', 2, 1 + r, 1, 1000, array_fill(0::bigint, ARRAY[17])
			FROM generate_series(0, 10 * 24 - 1) h, generate_series(0, 39) r, generate_series(0, 1) s`, t0.Unix()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ANALYZE rollups")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Berlin's 2026-10-21 to 2026-10-28: 8 days, one of 25 hours.
	req := report.Request{From: t0.AddDate(0, 0, 1), To: t0.AddDate(0, 0, 8), Zone: berlin}
	start, end := req.Range()
	hours := int(end.Sub(start).Hours())
	if hours != 8*24+1 {
		t.Fatalf("%d hours in Berlin's 8 days, want %d", hours, 8*24+1)
	}
	for _, c := range []struct {
		acc        accounts.Account
		group, col string
	}{
		{accounts.Account{Kind: accounts.Partner, ID: "key-7"}, "site_id", "api_key"},
		{accounts.Account{Kind: accounts.Advertiser, ID: "shop-3.example"}, "ad", "advertiser"},
	} {
		var want clicks.Measures
		var values []string
		if err := db.Pool().QueryRow(ctx, `SELECT sum(clicks)::bigint, sum(impressions)::bigint, array_agg(DISTINCT CASE WHEN $4 = 'site_id' THEN site_id ELSE ad_id END)
			FROM rollups WHERE grain = 0 AND `+c.col+` = $1 AND period >= $2 AND period < $3`,
			c.acc.ID, start.Unix()/3600, end.Unix()/3600, c.group).Scan(&want.Clicks, &want.Impressions, &values); err != nil {
			t.Fatal(err)
		}
		q := req
		q.GroupBy = []string{"hour", c.group}
		rows, err := report.Run(ctx, db.Rollups(), c.acc, q)
		if err != nil {
			t.Fatal(err)
		}
		var got clicks.Measures
		for _, r := range rows {
			if !slices.Contains(values, r.Groups[1]) {
				t.Errorf("%v: a row of %s %q, not the account's %v", c.acc, c.group, r.Groups[1], values)
			}
			got.Add(&r.Measures)
		}
		if len(rows) != hours*len(values) || got.Clicks != want.Clicks || got.Impressions != want.Impressions {
			t.Errorf("%v by the hour in Berlin: %d rows, %d clicks, %d impressions; want %d rows, %d clicks, %d impressions",
				c.acc, len(rows), got.Clicks, got.Impressions, hours*len(values), want.Clicks, want.Impressions)
		}
	}
	// The sums of an hour's periods, in a plan for any account, read the
	// account's index.
	q := clicks.HourSums{End: end, Dims: []clicks.Dimension{clicks.DimCurrency, clicks.DimSiteID, clicks.DimAPIKey}, APIKey: "key-7", Limit: report.MaxRows + 1}
	for h := start; h.Before(end); h = h.Add(time.Hour) {
		q.Starts = append(q.Starts, h)
	}
	plan, err := pgstore.SumHoursPlan(ctx, db, q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "rollups_api_key") {
		t.Errorf("a partner's hours in Berlin: the plan\n%s\nwant rollups_api_key", plan)
	}
}
