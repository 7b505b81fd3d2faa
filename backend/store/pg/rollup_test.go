package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
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
