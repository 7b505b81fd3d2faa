package pgstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// Shipping is idempotent by click id: a batch shipped twice (a crash
// between the commit and the spool's removal), a click shipped that a
// Record already holds (its answer lost), and the same batch shipped from
// two places at once are each recorded once, with one verdict, and the
// rollups and spend count them once. A spooled click that billed where it
// was spooled is settled again: its decision used in Postgres before
// makes it a repeat.
func TestShipRecordsEachClickOnce(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	exp := at.Add(time.Hour)
	click := func(id string, n int) clicks.Click {
		return clicks.Click{ID: id, Time: at.Add(time.Duration(n) * time.Second), AdID: "a", AdType: "advertiser", Type: "search",
			APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", n+1), Advertiser: "shop.example", BidMicros: 100, Currency: "EUR",
			Billable: true}
	}
	live := click("live", 0)
	if err := db.Ledger().Record(t.Context(), &live, clicks.Use{D: "d-live", Expires: exp}); err != nil || !live.Billable {
		t.Fatalf("Record: %v %q", err, live.Reason)
	}
	batch := func() []clicks.Spooled {
		unbilled := click("unbilled", 3)
		unbilled.Billable, unbilled.Reason = false, clicks.ReasonBot
		return []clicks.Spooled{
			{Click: click("live", 0), Use: clicks.Use{D: "d-live", Expires: exp}},   // Recorded already
			{Click: click("fresh", 1), Use: clicks.Use{D: "d-fresh", Expires: exp}}, // bills
			{Click: click("replay", 2), Use: clicks.Use{D: "d-live", Expires: exp}}, // the live click's decision
			{Click: unbilled, Use: clicks.Use{}},
		}
	}
	want := []string{"", "", clicks.ReasonRepeat, clicks.ReasonBot}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			// Concurrent shipments of one batch: one records it, the others
			// fail on the unique id or find it, and shipping again finds it.
			for {
				b := batch()
				err := db.Ledger().Ship(t.Context(), b)
				if err != nil {
					continue
				}
				for i, sp := range b {
					if sp.Click.Reason != want[i] || sp.Click.Billable != (want[i] == "") {
						t.Errorf("shipped %s: billable %v %q, want %q", sp.Click.ID, sp.Click.Billable, sp.Click.Reason, want[i])
					}
				}
				return
			}
		})
	}
	wg.Wait()
	if err := db.Ledger().Ship(t.Context(), batch()); err != nil {
		t.Fatalf("shipping again: %v", err)
	}
	seen := map[string]int{}
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error { seen[c.ID]++; return nil })
	if len(seen) != 4 || seen["live"] != 1 || seen["fresh"] != 1 || seen["replay"] != 1 || seen["unbilled"] != 1 {
		t.Errorf("the clicks table holds %v, want each id once", seen)
	}
	var rolled clicks.Measures
	db.Rollups().ScanRollups(t.Context(), clicks.Day, at.Truncate(24*time.Hour), at.Add(24*time.Hour), func(r *clicks.Rollup) error {
		rolled.Add(&r.Measures)
		return nil
	})
	if rolled.Clicks != 4 || rolled.Billable != 2 || rolled.SpendMicros != 200 {
		t.Errorf("the rollups count %+v, want 4 clicks, 2 billable, 200 spent", rolled)
	}
	if spent, err := db.Rollups().Spent(t.Context(), "shop.example", at); err != nil || spent != 200 {
		t.Errorf("spend %d %v, want 200", spent, err)
	}
	if err := db.Ledger().Ship(t.Context(), []clicks.Spooled{{Click: clicks.Click{Time: at}}}); err == nil {
		t.Error("a click without an id was shipped")
	}
}

// A beacon's impressions shipped twice under their batch's id are recorded
// once, and counted once in the rollups.
func TestShipImpressionsOnce(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	imps := []clicks.Impression{
		{Time: at, AdID: "a", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s", Page: "https://blog.example/1"},
		{Time: at, AdID: "b", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s", Page: "https://blog.example/1"},
	}
	for range 2 {
		if err := db.Impressions().Ship(t.Context(), "beacon-1", imps); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Impressions().Ship(t.Context(), "beacon-2", imps[:1]); err != nil {
		t.Fatal(err)
	}
	n := 0
	db.Impressions().Scan(t.Context(), time.Time{}, time.Time{}, func(clicks.Impression) error { n++; return nil })
	var rolled clicks.Measures
	db.Rollups().ScanRollups(t.Context(), clicks.Day, at.Truncate(24*time.Hour), at.Add(24*time.Hour), func(r *clicks.Rollup) error {
		rolled.Add(&r.Measures)
		return nil
	})
	if n != 3 || rolled.Impressions != 3 {
		t.Errorf("%d impressions recorded, %d counted; want 3 (a beacon of 2 shipped twice, one of 1)", n, rolled.Impressions)
	}
	if err := db.Impressions().Ship(t.Context(), "", imps); err == nil {
		t.Error("impressions shipped without a batch id")
	}
}
