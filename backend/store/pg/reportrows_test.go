package pgstore_test

import (
	"context"
	"errors"
	"fmt"
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

// A report of more rows than report.MaxRows is refused from Postgres as
// from bbolt, both as the account's rows are read (by the hour) and as
// Postgres sums a zone's days from hours, and read no further.
func TestReportOfTooManyRowsFromPostgres(t *testing.T) {
	ctx := t.Context()
	db, err := pgstore.Open(ctx, testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// 3 days of 4 hourly rows an hour of partner k, each its own
	// criterion, beside another partner's.
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
			criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
			SELECT 0, 0, $1 + h, CASE WHEN r < 4 THEN 'k' ELSE 'other' END, 's', 'shop.example', 'AD.1', 'search', 'EUR',
				'criterion ' || h || '-' || r, '', 'de', 0, 1, 1, 10000, array_fill(0::bigint, ARRAY[18])
			FROM generate_series(0, 3 * 24 - 1) h, generate_series(0, 7) r`, t0.Unix()/3600)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	old := report.MaxRows
	t.Cleanup(func() { report.MaxRows = old })
	partner := accounts.Account{Kind: accounts.Partner, ID: "k"}
	for _, req := range []report.Request{
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"hour", "criterion"}, Zone: berlin},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"day", "criterion"}, Zone: berlin},
	} {
		report.MaxRows = old
		rows, err := report.Run(ctx, db.Rollups(), partner, req)
		if err != nil || len(rows) < 200 {
			t.Fatalf("%v: %d rows, %v; want the partner's hours' rows", req.GroupBy, len(rows), err)
		}
		report.MaxRows = len(rows) - 1
		_, err = report.Run(ctx, db.Rollups(), partner, req)
		var tooMany *report.TooManyRows
		if !errors.As(err, &tooMany) || tooMany.Max != len(rows)-1 {
			t.Errorf("%v: %d rows over a bound of %d: %v, want TooManyRows", req.GroupBy, len(rows), len(rows)-1, err)
		}
	}
}

// sumsSeen are Postgres's rollups, each HourSums a report asks of them
// kept.
type sumsSeen struct {
	pgstore.Rollups
	asked []clicks.HourSums
}

func (r *sumsSeen) SumHours(ctx context.Context, q clicks.HourSums, fn func(*clicks.Rollup) error) error {
	r.asked = append(r.asked, q)
	return r.Rollups.SumHours(ctx, q, fn)
}

// A report refused for its rows costs Postgres no more than report.MaxRows
// and one of its sums: the query that sums a partner's hours, by the
// hour or into a zone's days or into the whole range, stops there, and
// the report is still refused. Each is read from the partner's index.
func TestReportOfTooManyRowsBoundedInPostgres(t *testing.T) {
	ctx := t.Context()
	db, err := pgstore.Open(ctx, testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// 3 days of 4 hourly rows an hour of partner k, each its own
	// criterion, beside another partner's.
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency,
			criterion, yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
			SELECT 0, 0, $1 + h, CASE WHEN r < 4 THEN 'k' ELSE 'other' END, 's', 'shop.example', 'AD.1', 'search', 'EUR',
				'criterion ' || h || '-' || r, '', 'de', 0, 1, 1, 10000, array_fill(0::bigint, ARRAY[18])
			FROM generate_series(0, 3 * 24 - 1) h, generate_series(0, 7) r`, t0.Unix()/3600)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	old := report.MaxRows
	t.Cleanup(func() { report.MaxRows = old })
	report.MaxRows = 50
	partner := accounts.Account{Kind: accounts.Partner, ID: "k"}
	for _, req := range []report.Request{
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"hour", "criterion"}, Zone: berlin},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"hour", "criterion"}},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"day", "criterion"}, Zone: berlin},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"criterion"}, Zone: berlin},
	} {
		seen := &sumsSeen{Rollups: db.Rollups()}
		_, err := report.Run(ctx, seen, partner, req)
		var tooMany *report.TooManyRows
		if !errors.As(err, &tooMany) {
			t.Errorf("%v in %v: %v, want TooManyRows", req.GroupBy, req.Zone, err)
		}
		if len(seen.asked) != 1 {
			t.Errorf("%v in %v: %d sums asked of Postgres, want 1", req.GroupBy, req.Zone, len(seen.asked))
			continue
		}
		plan, err := pgstore.SumHoursAnalyzed(ctx, db, seen.asked[0])
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(plan, "\n")
		if want := fmt.Sprintf("Limit (actual rows=%d ", report.MaxRows+1); !strings.HasPrefix(first, want) {
			t.Errorf("%v in %v: the sums' plan\n%s\nwant it to start %q", req.GroupBy, req.Zone, plan, want)
		}
		if !strings.Contains(plan, "rollups_api_key") {
			t.Errorf("%v in %v: the sums' plan\n%s\nwant rollups_api_key", req.GroupBy, req.Zone, plan)
		}
	}
}
