package clicks_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/backend/store"
)

// givenRollups are a bbolt file's rollups that count the rows their
// scans and sums give.
type givenRollups struct {
	clicks.BoltRollups
	given *int
}

func (r givenRollups) count(fn func(*clicks.Rollup) error) func(*clicks.Rollup) error {
	return func(row *clicks.Rollup) error {
		*r.given++
		return fn(row)
	}
}

func (r givenRollups) SumHours(ctx context.Context, q clicks.HourSums, fn func(*clicks.Rollup) error) error {
	return r.BoltRollups.SumHours(ctx, q, r.count(fn))
}

func (r givenRollups) ScanAccountRollups(ctx context.Context, g clicks.Grain, from, to time.Time, kind clicks.Dimension, id string, fn func(*clicks.Rollup) error) error {
	return r.BoltRollups.ScanAccountRollups(ctx, g, from, to, kind, id, r.count(fn))
}

// A report of more rows than report.MaxRows is refused from bbolt, by
// the hour, by a zone's days, over the whole range and by UTC days, and
// the scan stops at the row past the bound: the rest of the partner's
// rows are not read.
func TestReportOfTooManyRowsStopsTheScan(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// 3 days of 4 hourly rows an hour of partner k, each its own
	// criterion, beside another partner's.
	var rows []clicks.Rollup
	for h := range 3 * 24 {
		for r := range 8 {
			key := "k"
			if r >= 4 {
				key = "other"
			}
			rows = append(rows, clicks.Rollup{Start: t0.Add(time.Duration(h) * time.Hour), APIKey: key, SiteID: "s",
				Advertiser: "shop.example", AdID: "AD.1", Context: "search", Currency: "EUR",
				Criterion: "criterion " + strconv.Itoa(h) + "-" + strconv.Itoa(r), Country: "de",
				Measures: clicks.Measures{Clicks: 1, Billable: 1, SpendMicros: 10_000}})
		}
	}
	if err := clicks.AddHourRows(db, rows); err != nil {
		t.Fatal(err)
	}
	if err := clicks.AddDayRows(db, rows); err != nil {
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
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"hour", "criterion"}},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"day", "criterion"}, Zone: berlin},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"criterion"}, Zone: berlin},
		{From: t0, To: t0.AddDate(0, 0, 2), GroupBy: []string{"criterion"}},
	} {
		report.MaxRows = old
		given := 0
		all, err := report.Run(t.Context(), givenRollups{clicks.ReadRollups(db), &given}, partner, req)
		// Berlin's days start 1 hour before UTC's: the first hour of
		// November is not in them.
		if err != nil || len(all) < 4*(3*24-1) {
			t.Fatalf("%v in %v: %d rows, %v; want the partner's", req.GroupBy, req.Zone, len(all), err)
		}
		report.MaxRows = 50
		given = 0
		_, err = report.Run(t.Context(), givenRollups{clicks.ReadRollups(db), &given}, partner, req)
		var tooMany *report.TooManyRows
		if !errors.As(err, &tooMany) || tooMany.Max != 50 {
			t.Errorf("%v in %v: %v, want TooManyRows of 50", req.GroupBy, req.Zone, err)
		}
		if given != 51 {
			t.Errorf("%v in %v: %d rows read for a report refused past 50, want 51", req.GroupBy, req.Zone, given)
		}
	}
}
