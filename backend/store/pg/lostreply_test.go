package pgstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// The reply to adlink_record_clicks lost after its commit (the network
// failed between the commit and the answer) fails the call, though the
// clicks are recorded; recording them again under their ids, as the
// spool ships them, writes nothing and gives the verdicts of the first
// run, on the same pool and after a restart: the ledger holds each click
// once, and the rollups and the budget's spend count each bid once.
func TestLostRecordReplyBillsOnce(t *testing.T) {
	url := testpg.New(t)
	proxy := testpg.NewProxy(t, url)
	db := openPG(t, proxy.URL(url))
	at := recently()
	exp := at.Add(time.Hour)
	click := func(id string, n int) clicks.Click {
		return clicks.Click{ID: id, Time: at.Add(time.Duration(n) * time.Second), AdID: "a", AdType: "advertiser",
			Type: "search", APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", n+1), Advertiser: "shop.example",
			BidMicros: 100, Currency: "EUR", Billable: true}
	}
	// Its budget has room for three bids: a second count of the first
	// ones would stop the last.
	use := func(d string) clicks.Use { return clicks.Use{D: d, Expires: exp, Budget: 300} }

	// One click, recorded alone.
	proxy.LoseReply("adlink_record_clicks", 1)
	live := click("live", 0)
	if err := db.Ledger().Record(t.Context(), &live, use("d-live")); err == nil {
		t.Fatal("Record whose reply was lost returned no error")
	}
	if proxy.Lost() != 1 {
		t.Fatalf("%d replies lost, want 1", proxy.Lost())
	}
	again := click("live", 0)
	if err := db.Ledger().Record(t.Context(), &again, use("d-live")); err != nil || !again.Billable {
		t.Fatalf("Record again: %v, billable %v %q: want the first run's verdict, billable", err, again.Billable, again.Reason)
	}

	// A batch, shipped from the spool: its verdicts, the first run's.
	batch := func() []clicks.Spooled {
		bot := click("bot", 3)
		bot.Billable, bot.Reason = false, clicks.ReasonBot
		return []clicks.Spooled{
			{Click: click("live", 0), Use: use("d-live")}, // recorded already
			{Click: click("fresh", 1), Use: use("d-fresh")},
			{Click: click("replay", 2), Use: use("d-live")}, // the live click's decision
			{Click: bot},
			{Click: click("last", 4), Use: use("d-last")},
		}
	}
	want := []string{"", "", clicks.ReasonRepeat, clicks.ReasonBot, ""}
	check := func(what string, b []clicks.Spooled) {
		t.Helper()
		for i, sp := range b {
			if sp.Click.Reason != want[i] || sp.Click.Billable != (want[i] == "") {
				t.Errorf("%s: %s billable %v %q, want %q", what, sp.Click.ID, sp.Click.Billable, sp.Click.Reason, want[i])
			}
		}
	}
	proxy.LoseReply("adlink_record_clicks", 1)
	if err := db.Ledger().Ship(t.Context(), batch()); err == nil {
		t.Fatal("Ship whose reply was lost returned no error")
	}
	if proxy.Lost() != 2 {
		t.Fatalf("%d replies lost, want 2", proxy.Lost())
	}
	b := batch()
	if err := db.Ledger().Ship(t.Context(), b); err != nil {
		t.Fatalf("shipping again: %v", err)
	}
	check("shipped again", b)
	ledgerHoldsEachOnce(t, db, at, []string{"live", "fresh", "replay", "bot", "last"}, 3)

	// After a restart: a new pool, the same verdicts, nothing added.
	db.Close()
	db = openPG(t, proxy.URL(url))
	b = batch()
	if err := db.Ledger().Ship(t.Context(), b); err != nil {
		t.Fatalf("shipping after a restart: %v", err)
	}
	check("shipped after a restart", b)
	ledgerHoldsEachOnce(t, db, at, []string{"live", "fresh", "replay", "bot", "last"}, 3)
}

// ledgerHoldsEachOnce checks that db's clicks table holds each of ids
// once, and that the rollups and the spend of at's day count billed
// clicks of 100 micros each, once.
func ledgerHoldsEachOnce(t *testing.T, db *pgstore.DB, at time.Time, ids []string, billed int) {
	t.Helper()
	seen := map[string]int{}
	if err := db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error { seen[c.ID]++; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("the clicks table holds %v, want each of %v once", seen, ids)
			break
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("the clicks table holds %v, want %v", seen, ids)
	}
	var rolled clicks.Measures
	day := at.Truncate(24 * time.Hour)
	if err := db.Rollups().ScanRollups(t.Context(), clicks.Day, day, day.Add(24*time.Hour), func(r *clicks.Rollup) error {
		rolled.Add(&r.Measures)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rolled.Clicks != int64(len(ids)) || rolled.Billable != int64(billed) || rolled.SpendMicros != int64(100*billed) {
		t.Errorf("the day's rollups count %d clicks, %d billable, %d spent; want %d, %d, %d",
			rolled.Clicks, rolled.Billable, rolled.SpendMicros, len(ids), billed, 100*billed)
	}
	if spent, err := db.Rollups().Spent(t.Context(), "shop.example", at); err != nil || spent != int64(100*billed) {
		t.Errorf("the budget's spend is %d (%v), want %d", spent, err, 100*billed)
	}
}

// A batch of the group commit whose reply was lost is not recorded again
// click by click when a click has no id, which nothing could find: such
// a click fails, and the ledger holds it once. A click with an id is
// recorded again alone, finds itself and gets the batch's verdict.
func TestLostBatchReplyRecordsOnce(t *testing.T) {
	url := testpg.New(t)
	proxy := testpg.NewProxy(t, url)
	db := openPG(t, proxy.URL(url))
	at := recently()
	click := func(id string, n int) *clicks.Click {
		return &clicks.Click{ID: id, Time: at.Add(time.Duration(n) * time.Second), AdID: fmt.Sprintf("a%d", n),
			AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", n+1),
			Advertiser: "shop.example", BidMicros: 100, Currency: "EUR", Billable: true}
	}
	uses := []clicks.Use{{Budget: 1000}, {Budget: 1000}}

	proxy.LoseReply("adlink_record_clicks", 1)
	errs := db.Ledger().RecordTogether([]*clicks.Click{click("", 0), click("", 1)}, uses)
	if proxy.Lost() != 1 {
		t.Fatalf("%d replies lost, want 1", proxy.Lost())
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("click %d without an id: no error after its batch's reply was lost", i)
		}
	}
	rows := 0
	if err := db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(clicks.Click) error { rows++; return nil }); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Errorf("the clicks table holds %d rows, want the batch's 2 once", rows)
	}
	if spent, err := db.Rollups().Spent(t.Context(), "shop.example", at); err != nil || spent != 200 {
		t.Errorf("the budget's spend is %d (%v), want 200", spent, err)
	}

	// A batch of both.
	proxy.LoseReply("adlink_record_clicks", 1)
	cs := []*clicks.Click{click("", 2), click("y", 3)}
	errs = db.Ledger().RecordTogether(cs, uses)
	if errs[0] == nil {
		t.Error("the click without an id: no error after its batch's reply was lost")
	}
	if errs[1] != nil || !cs[1].Billable {
		t.Errorf("the click with an id: %v, billable %v %q; want the batch's verdict, billable", errs[1], cs[1].Billable, cs[1].Reason)
	}
	if proxy.Lost() != 2 {
		t.Fatalf("%d replies lost, want 2", proxy.Lost())
	}
	rows = 0
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(clicks.Click) error { rows++; return nil })
	if rows != 4 {
		t.Errorf("the clicks table holds %d rows, want 4", rows)
	}
	if spent, err := db.Rollups().Spent(t.Context(), "shop.example", at); err != nil || spent != 400 {
		t.Errorf("the budget's spend is %d (%v), want 400", spent, err)
	}
}
