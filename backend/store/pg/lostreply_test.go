package pgstore_test

import (
	"fmt"
	"strings"
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

// The other writes that run again (rerun) on an ended connection, and a
// spooled beacon's impressions, each with its reply lost after its
// commit and then run again, as their callers do after the error: the
// day's export is recorded once and the first record is read back, a
// page's hold is extended and still the same Claim's, one job, the
// beacon's impressions count once, and the spend before a day is
// forgotten, the day's kept.
func TestLostReplyOfIdempotentWritesRunAgain(t *testing.T) {
	url := testpg.New(t)
	proxy := testpg.NewProxy(t, url)
	db := openPG(t, proxy.URL(url))
	ctx := t.Context()
	lose := func(what, pattern string, run func() error) {
		t.Helper()
		n := proxy.Lost()
		proxy.LoseReply(pattern, 1)
		if err := run(); err == nil {
			t.Errorf("%s whose reply was lost returned no error", what)
		}
		if proxy.Lost() != n+1 {
			t.Fatalf("%s: its reply was not lost", what)
		}
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := db.Pool().QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("RecordExport", func(t *testing.T) {
		day := recently().Truncate(24 * time.Hour).Add(-48 * time.Hour)
		e := clicks.Export{Log: clicks.ClickLog, Day: day, At: day, Host: "a", Path: "/exports/a", Rows: 3, Seq: 10}
		lose("RecordExport", "INSERT INTO exports", func() error { _, err := db.Retainer().RecordExport(ctx, e); return err })
		got, err := db.Retainer().RecordExport(ctx, e)
		if err != nil || got.Host != "a" || got.Rows != 3 || got.Seq != 10 {
			t.Errorf("RecordExport again: %+v %v, want the record of the first run", got, err)
		}
		other := e
		other.Host, other.Path = "b", "/exports/b"
		if got, err := db.Retainer().RecordExport(ctx, other); err != nil || got.Host != "a" {
			t.Errorf("RecordExport of another server: %+v %v, want the first record, host a", got, err)
		}
		if n := count(`SELECT count(*) FROM exports`); n != 1 {
			t.Errorf("%d export records, want 1", n)
		}
	})

	t.Run("Pages.Extend", func(t *testing.T) {
		p := db.Pages(0, 0)
		const u = "https://blog.example/held"
		if added, err := p.Push(ctx, u, time.Time{}, nil); !added || err != nil {
			t.Fatalf("Push: %v %v", added, err)
		}
		if got, err := p.Claim(ctx, time.Minute); got != u || err != nil {
			t.Fatalf("Claim: %q %v", got, err)
		}
		var holder int64
		db.Pool().QueryRow(ctx, `SELECT holder FROM page_jobs`).Scan(&holder)
		lose("Extend", "UPDATE page_jobs SET held_until", func() error { _, err := p.Extend(ctx, u, time.Hour); return err })
		if held, err := p.Extend(ctx, u, time.Hour); !held || err != nil {
			t.Errorf("Extend again: %v %v, want the hold extended", held, err)
		}
		if n := count(`SELECT count(*) FROM page_jobs WHERE holder = $1 AND held_until > clock_timestamp() + interval '30 minutes'`,
			holder); n != 1 || count(`SELECT count(*) FROM page_jobs`) != 1 {
			t.Errorf("%d jobs held by the Claim for the hour, of %d; want the one", n, count(`SELECT count(*) FROM page_jobs`))
		}
		if err := p.Complete(ctx, u); err != nil {
			t.Errorf("Complete after the extensions: %v", err)
		}
	})

	t.Run("Impressions.Ship", func(t *testing.T) {
		at := recently()
		imps := []clicks.Impression{
			{Time: at, AdID: "a", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s", Page: "https://blog.example/1"},
			{Time: at, AdID: "b", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s", Page: "https://blog.example/1"},
		}
		// Its transaction's: the reply to its COMMIT.
		lose("Impressions.Ship", "commit", func() error { _, err := db.Impressions().Ship(ctx, "beacon-lost", imps); return err })
		if _, err := db.Impressions().Ship(ctx, "beacon-lost", imps); err != nil {
			t.Errorf("Impressions.Ship again: %v", err)
		}
		if n := count(`SELECT count(*) FROM impressions`); n != 2 {
			t.Errorf("%d impressions, want the beacon's 2", n)
		}
		if n := count(`SELECT coalesce(sum(impressions), 0)::int FROM rollups WHERE grain = $1`, int16(clicks.Day)); n != 2 {
			t.Errorf("the daily rollups count %d impressions, want 2", n)
		}
	})

	t.Run("ForgetSpendBefore", func(t *testing.T) {
		today := recently()
		old := today.Add(-72 * time.Hour)
		for i, at := range []time.Time{old, today} {
			c := clicks.Click{ID: fmt.Sprintf("spend-%d", i), Time: at, AdID: "a", AdType: "advertiser", Type: "search",
				APIKey: "k", SiteID: "s", IP: fmt.Sprintf("203.0.113.%d", i+1), Advertiser: "forget.example", BidMicros: 100,
				Currency: "EUR", Billable: true}
			if err := db.Ledger().Record(ctx, &c, clicks.Use{Budget: 1000}); err != nil || !c.Billable {
				t.Fatalf("Record: %v %q", err, c.Reason)
			}
		}
		day := today.Truncate(24 * time.Hour)
		lose("ForgetSpendBefore", "DELETE FROM spend", func() error { return db.Retainer().ForgetSpendBefore(ctx, day) })
		if spent, err := db.Rollups().Spent(ctx, "forget.example", old); err != nil || spent != 0 {
			t.Errorf("the old day's spend after the lost reply: %d %v, want 0: the delete committed", spent, err)
		}
		if err := db.Retainer().ForgetSpendBefore(ctx, day); err != nil {
			t.Errorf("ForgetSpendBefore again: %v", err)
		}
		for at, want := range map[time.Time]int64{old: 0, today: 100} {
			if spent, err := db.Rollups().Spent(ctx, "forget.example", at); err != nil || spent != want {
				t.Errorf("spend of %v: %d %v, want %d", at, spent, err, want)
			}
		}
	})
}

// A URL that asks for the simple protocol is refused: by it pgx takes a
// reply lost after the statement was sent for one never sent, and a click
// would be recorded again. The other modes open.
func TestSimpleProtocolRefused(t *testing.T) {
	url := testpg.New(t)
	db, err := pgstore.Open(t.Context(), url+"&default_query_exec_mode=simple_protocol")
	if err == nil {
		db.Close()
		t.Fatal("Open with default_query_exec_mode=simple_protocol: no error")
	}
	if !strings.Contains(err.Error(), "simple_protocol") {
		t.Fatalf("Open: %v: want the error to name simple_protocol", err)
	}
	openPG(t, url+"&default_query_exec_mode=describe_exec")
}
