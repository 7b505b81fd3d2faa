package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
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
	db := openPG(t, testpg.New(t))
	at := recently()
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
	db := openPG(t, testpg.New(t))
	at := recently()
	imps := []clicks.Impression{
		{Time: at, AdID: "a", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s", Page: "https://blog.example/1"},
		{Time: at, AdID: "b", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s", Page: "https://blog.example/1"},
	}
	for range 2 {
		if _, err := db.Impressions().Ship(t.Context(), "beacon-1", imps); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Impressions().Ship(t.Context(), "beacon-2", imps[:1]); err != nil {
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
	if _, err := db.Impressions().Ship(t.Context(), "", imps); err == nil {
		t.Error("impressions shipped without a batch id")
	}
}

// A spooled beacon with a malformed impression key (a file written by
// hand, or damaged) is refused, set aside and logged, and the beacons
// after it are shipped: it does not hold the spool back.
func TestSpoolerSetsAsideABeaconOfAMalformedKey(t *testing.T) {
	db := openPG(t, testpg.New(t))
	file, spool := newSpool(t)
	at := recently()
	imp := func(ad, key string) clicks.Impression {
		return clicks.Impression{Time: at, AdID: ad, AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s",
			Page: "https://blog.example/", Key: key}
	}
	if _, err := db.Impressions().Ship(t.Context(), "direct", []clicks.Impression{imp("x", "zz")}); !errors.Is(err, clicks.ErrRefused) {
		t.Errorf("shipping a malformed key: %v, want clicks.ErrRefused", err)
	}
	for i, key := range []string{clicks.ImpressionKey("a0", "k", "s", "net", at, time.Hour), "not-a-key",
		clicks.ImpressionKey("a2", "k", "s", "net", at, time.Hour)} {
		if err := spool.AddImpressions(t.Context(), fmt.Sprint("beacon-", i), []clicks.Impression{imp(fmt.Sprint("a", i), key)}); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	s := clicks.NewSpooler(db.Ledger(), db.Ledger(), spool, clicks.SpoolerOptions{Impressions: db.Impressions(),
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	s.Start()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool was not shipped: %v, %d beacons left", err, spool.ImpressionDepth())
	}
	s.Stop()
	seen := map[string]bool{}
	db.Impressions().Scan(t.Context(), time.Time{}, time.Time{}, func(i clicks.Impression) error { seen[i.AdID] = true; return nil })
	if len(seen) != 2 || !seen["a0"] || !seen["a2"] {
		t.Errorf("Postgres holds impressions of %v, want a0 and a2", seen)
	}
	var refused int
	file.View(func(tx *bolt.Tx) error {
		refused = tx.Bucket([]byte("spool-refused")).Stats().KeyN
		return nil
	})
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if refused != 1 || !strings.Contains(log, "postgres refuses a spooled impression beacon") || !strings.Contains(log, "beacon=beacon-1") {
		t.Errorf("%d beacons set aside, log:\n%s", refused, log)
	}
}

// A spooled click Postgres refuses for what it is (here a bid that
// overflows the spend its advertiser already has, the ad of c1) is found, set aside in
// the file's spool-refused bucket and logged, and the clicks around it are
// shipped: one bad click does not hold the spool, and the server, back.
func TestSpoolerSetsAsideWhatPostgresRefuses(t *testing.T) {
	// One connection: every transaction adds to the same shard of spend.
	db := openPG(t, testpg.New(t)+"&pool_max_conns=1")
	file, spool := newSpool(t)
	at := recently()
	for i, bid := range []int64{100, math.MaxInt64, math.MaxInt64, 100} {
		c := clicks.Click{ID: fmt.Sprint("c", i), Time: at, AdID: fmt.Sprint("a", i), AdType: "advertiser", Type: "search",
			APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", i+1), Advertiser: fmt.Sprint("shop", bid, ".example"), BidMicros: bid,
			Currency: "EUR", Billable: true}
		if err := spool.Add(t.Context(), c, clicks.Use{D: fmt.Sprint("d", i), Expires: at.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	s := clicks.NewSpooler(db.Ledger(), db.Ledger(), spool, clicks.SpoolerOptions{
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	s.Start()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool was not shipped: %v, %d left", err, s.Depth())
	}
	s.Stop()
	seen := map[string]bool{}
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error { seen[c.ID] = true; return nil })
	if len(seen) != 3 || !seen["c0"] || !seen["c1"] || !seen["c3"] {
		t.Errorf("Postgres holds %v, want c0, c1 and c3", seen)
	}
	var refused int
	file.View(func(tx *bolt.Tx) error {
		refused = tx.Bucket([]byte("spool-refused")).Stats().KeyN
		return nil
	})
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if refused != 1 || !strings.Contains(log, "postgres refuses a spooled click") || !strings.Contains(log, "click=c2") {
		t.Errorf("%d clicks set aside, log:\n%s", refused, log)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A click in another currency than its advertiser's budget bills nowhere
// while Postgres is down: spooled, it is over_budget at once; shipped
// marked billable (a judgement that missed its currency), Postgres
// settles it over_budget again and its bid spends nothing of the budget,
// which the next click in the budget's currency still bills. (A click
// spooled by a version whose Use names no currency is not checked: see
// storetest's BudgetsHoldTheirCurrency.)
func TestSpoolHoldsTheBudgetsCurrency(t *testing.T) {
	db := openPG(t, testpg.New(t))
	_, spool := newSpool(t)
	at := recently()
	click := func(n int, currency string) clicks.Click {
		return clicks.Click{ID: fmt.Sprint("c", n), Time: at, AdID: fmt.Sprint("a", n), AdType: "advertiser", Type: "search",
			APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", n+1), Advertiser: "shop.example", BidMicros: 1_000_000,
			Currency: currency}
	}
	use := func(n int) clicks.Use {
		return clicks.Use{D: fmt.Sprint("d", n), Expires: at.Add(time.Hour), Budget: 1_000_000, Currency: "EUR"}
	}
	local := click(0, "GBP")
	if err := spool.Record(t.Context(), &local, use(0)); err != nil || local.Billable || local.Reason != clicks.ReasonOverBudget {
		t.Fatalf("a GBP click spooled against a EUR budget: %v, billable %v %q, want over_budget", err, local.Billable, local.Reason)
	}
	judged := click(1, "GBP")
	judged.Billable = true
	if err := spool.Add(t.Context(), judged, use(1)); err != nil {
		t.Fatal(err)
	}
	s := clicks.NewSpooler(db.Ledger(), db.Ledger(), spool, clicks.SpoolerOptions{})
	s.Start()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool was not shipped: %v, %d left", err, s.Depth())
	}
	s.Stop()
	got := map[string]string{}
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		got[c.ID] = fmt.Sprint(c.Billable, " ", c.Reason, " ", c.Currency)
		return nil
	})
	if len(got) != 2 || got["c0"] != "false over_budget GBP" || got["c1"] != "false over_budget GBP" {
		t.Errorf("Postgres holds %v, want both GBP clicks over_budget", got)
	}
	if spent, err := db.Rollups().Spent(t.Context(), "shop.example", at); err != nil || spent != 0 {
		t.Errorf("the EUR budget has spent %d %v, want 0", spent, err)
	}
	eur := click(2, "EUR")
	if err := db.Ledger().Record(t.Context(), &eur, use(2)); err != nil || !eur.Billable {
		t.Errorf("the first EUR click: %v, billable %v %q", err, eur.Billable, eur.Reason)
	}
}

// TestSpoolShipsTheBudgetsDay: a click spooled while Postgres is down
// spends, once shipped, on the day of its own time in the zone of the
// budget it was judged under, and a second one of that day is over the
// budget. The zone is one whose date is not UTC's at the click's hour.
func TestSpoolShipsTheBudgetsDay(t *testing.T) {
	db := openPG(t, testpg.New(t))
	_, spool := newSpool(t)
	at := recently()
	zone := "Pacific/Kiritimati" // UTC+14: tomorrow from 10:00 UTC
	if at.Hour() < 10 {
		zone = "Pacific/Pago_Pago" // UTC-11: yesterday until 11:00 UTC
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	day := clicks.BudgetDayIn(at, loc)
	if day == clicks.BudgetDayIn(at, time.UTC) {
		t.Fatalf("%s is on UTC's date at %v", zone, at)
	}
	for n := range 2 {
		c := clicks.Click{ID: fmt.Sprint("z", n), Time: at.Add(time.Duration(n) * time.Minute), AdID: fmt.Sprint("a", n),
			AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", n+1),
			Advertiser: "shop.example", BidMicros: 1_000_000, Currency: "EUR"}
		u := clicks.Use{D: fmt.Sprint("zd", n), Expires: at.Add(time.Hour), Budget: 1_000_000, Currency: "EUR", Zone: zone}
		if err := spool.Record(t.Context(), &c, u); err != nil || !c.Billable {
			t.Fatalf("spooling %s: %v, billable %v %q", c.ID, err, c.Billable, c.Reason)
		}
	}
	s := clicks.NewSpooler(db.Ledger(), db.Ledger(), spool, clicks.SpoolerOptions{})
	s.Start()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool was not shipped: %v, %d left", err, s.Depth())
	}
	s.Stop()
	got := map[string]string{}
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		got[c.ID] = fmt.Sprint(c.Billable, " ", c.Reason)
		return nil
	})
	if got["z0"] != "true " || got["z1"] != "false over_budget" {
		t.Errorf("Postgres holds %v, want the first click billed and the second over_budget", got)
	}
	for _, tt := range []struct {
		day  clicks.BudgetDay
		want int64
	}{{day, 1_000_000}, {clicks.BudgetDayIn(at, time.UTC), 0}} {
		if spent, err := db.Rollups().SpentOn(t.Context(), "shop.example", tt.day); err != nil || spent != tt.want {
			t.Errorf("the spend of day %d: %d %v, want %d (%s's day is %d)", tt.day, spent, err, tt.want, zone, day)
		}
	}
}

// recently is a whole hour of the last two: clicks of it shipped now are
// well inside clicks.ShipHorizon.
func recently() time.Time { return time.Now().UTC().Truncate(time.Hour).Add(-time.Hour) }

// A spool shipped after an outage longer than clicks.ShipHorizon cannot
// bill its older clicks: Postgres has forgotten their /48's count of the
// day (as its occasional clean-up does), and judged from zero a /48 at
// its cap that day would bill again. Those clicks are recorded as late,
// whatever the caps; a click that did not bill keeps its reason, one the
// record holds already keeps its verdict, and within the horizon the
// /48's cap still holds.
func TestShipRefusesClicksOlderThanTheCounts(t *testing.T) {
	url := testpg.New(t)
	db := openPG(t, url)
	old := recently().Add(-3 * 24 * time.Hour)
	click := func(id string, at time.Time, net int) clicks.Click {
		return clicks.Click{ID: id, Time: at, AdID: "a" + id, AdType: "advertiser", Type: "search", APIKey: "k",
			SiteID: "s", IP: fmt.Sprintf("2001:db8:48:%x::1", net), UserAgent: "Mozilla/5.0", Advertiser: "shop.example",
			BidMicros: 100, Currency: "EUR", Billable: true}
	}
	in48 := func(id string) clicks.Use {
		return clicks.Use{D: id, Expires: time.Now().Add(time.Hour), PrefixLimit: 2}
	}
	// The /48 bills its cap of two on the old day, live.
	var live []clicks.Click
	for i := range 2 {
		c := click(fmt.Sprint("live", i), old, i+1)
		if err := db.Ledger().Record(t.Context(), &c, in48(c.ID)); err != nil || !c.Billable {
			t.Fatalf("Record: %v, billable %v %q", err, c.Billable, c.Reason)
		}
		live = append(live, c)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `DELETE FROM prefix_clicks`); err != nil {
		t.Fatal(err)
	}
	bot := click("old-bot", old, 9)
	bot.Billable, bot.Reason = false, clicks.ReasonBot
	batch := []clicks.Spooled{
		{Click: live[0], Use: in48(live[0].ID)}, // shipped again: the record holds it
		{Click: bot, Use: in48(bot.ID)},
		{Click: click("edge-out", time.Now().Add(-clicks.ShipHorizon-time.Minute), 20), Use: in48("edge-out")},
		{Click: click("edge-in", time.Now().Add(-clicks.ShipHorizon+time.Minute), 21), Use: in48("edge-in")},
	}
	want := map[string]string{live[0].ID: "", bot.ID: clicks.ReasonBot, "edge-out": clicks.ReasonLate, "edge-in": ""}
	for i := range 5 {
		id := fmt.Sprint("old", i)
		batch, want[id] = append(batch, clicks.Spooled{Click: click(id, old.Add(time.Duration(i)*time.Second), 10+i), Use: in48(id)}), clicks.ReasonLate
	}
	for i := range 3 {
		id := fmt.Sprint("now", i)
		batch = append(batch, clicks.Spooled{Click: click(id, recently().Add(time.Duration(i)*time.Second), 30+i), Use: in48(id)})
		want[id] = map[bool]string{true: clicks.ReasonPrefixCap}[i == 2]
	}
	if err := db.Ledger().Ship(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	for _, sp := range batch {
		if w := want[sp.Click.ID]; sp.Click.Reason != w || sp.Click.Billable != (w == "") {
			t.Errorf("shipped %s: billable %v %q, want %q", sp.Click.ID, sp.Click.Billable, sp.Click.Reason, w)
		}
	}
	recorded := map[string]string{}
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		recorded[c.ID] = c.Reason
		if c.Billable != (c.Reason == "") {
			t.Errorf("recorded %s: billable %v %q", c.ID, c.Billable, c.Reason)
		}
		return nil
	})
	for id, w := range want {
		if r, ok := recorded[id]; !ok || r != w {
			t.Errorf("recorded %s: %q (held %v), want %q", id, r, ok, w)
		}
	}
	late := slices.Index(clicks.Reasons, clicks.ReasonLate)
	var rolled clicks.Measures
	day := old.Truncate(24 * time.Hour)
	db.Rollups().ScanRollups(t.Context(), clicks.Day, day, day.Add(24*time.Hour), func(r *clicks.Rollup) error {
		rolled.Add(&r.Measures)
		return nil
	})
	if late < 0 || rolled.Unbilled[late] != 5 || rolled.Billable != 2 {
		t.Errorf("the old day's rollups count %+v, want 2 billable and 5 late", rolled)
	}
}

// A link's decision is kept as long as a click on it may be shipped: a
// replay of a live click, billed and spooled from another network while
// Postgres did not answer, shipped hours after the link expired and after
// the decisions' clean-up ran, is a repeat, not a second bill. Ids long
// past that are forgotten.
func TestShipFindsDecisionsWithinTheHorizon(t *testing.T) {
	db := openPG(t, testpg.New(t))
	now := time.Now()
	exp := now.Add(-5 * time.Hour) // the link expired five hours ago
	click := func(id, ip string, at time.Time) clicks.Click {
		return clicks.Click{ID: id, Time: at, AdID: "a", AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
			IP: ip, UserAgent: "Mozilla/5.0", Advertiser: "shop.example", BidMicros: 100, Currency: "EUR", Billable: true}
	}
	live := click("live", "198.51.100.7", exp.Add(-10*time.Minute))
	if err := db.Ledger().Record(t.Context(), &live, clicks.Use{D: "d1", Expires: exp}); err != nil || !live.Billable {
		t.Fatalf("Record: %v, billable %v %q", err, live.Billable, live.Reason)
	}
	old := now.Add(-4 * 24 * time.Hour)
	if first, err := db.Decisions().Use(t.Context(), "d-old", old, old.Add(time.Hour)); err != nil || !first {
		t.Fatalf("Use d-old: %v %v", first, err)
	}
	if err := pgstore.ForgetDecisions(t.Context(), db, now); err != nil {
		t.Fatal(err)
	}
	if first, err := db.Decisions().Use(t.Context(), "d-old", old, old.Add(time.Hour)); err != nil || !first {
		t.Errorf("d-old, four days past its expiry, was not forgotten: %v %v", first, err)
	}
	batch := []clicks.Spooled{{Click: click("replay", "203.0.113.9", exp.Add(-5*time.Minute)), Use: clicks.Use{D: "d1", Expires: exp}}}
	if err := db.Ledger().Ship(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if c := batch[0].Click; c.Billable || c.Reason != clicks.ReasonRepeat {
		t.Errorf("the replay shipped after the clean-up: billable %v %q, want %q", c.Billable, c.Reason, clicks.ReasonRepeat)
	}
	if spent, err := db.Rollups().Spent(t.Context(), "shop.example", live.Time); err != nil || spent != 100 {
		t.Errorf("spend %d %v, want the live click's 100", spent, err)
	}
}

// openPG opens the Postgres store at url for t, closed when t ends.
func openPG(t testing.TB, url string) *pgstore.DB {
	t.Helper()
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// newSpool is a click spool in a bbolt file of t's own, closed when t
// ends.
func newSpool(t *testing.T) (*bolt.DB, *clicks.Spool) {
	t.Helper()
	file, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	spool, err := clicks.NewSpool(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, spool
}
