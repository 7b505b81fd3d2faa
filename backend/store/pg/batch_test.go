package pgstore_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// A batch is judged as its clicks would be one after another: each of
// Ship's batches below gets the verdicts, spend and rollups the bbolt
// ledger gives the same clicks recorded in turn, in Ship's order. The
// first batch's clicks cannot change each other's verdicts but through
// their IPv6 /48's count (the set-wise path of adlink_record_clicks); the
// second's can: a network, a decision, an id and a budget twice or more
// (the path click after click).
func TestBatchJudgesAsClickAfterClick(t *testing.T) {
	at := recently()
	exp := at.Add(time.Hour)
	click := func(id, ip, ad, advertiser string, bid int64) clicks.Click {
		return clicks.Click{ID: id, Time: at, AdID: ad, AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
			YkTag: "t", IP: ip, UserAgent: "Mozilla/5.0", Advertiser: advertiser, BidMicros: bid, Currency: "EUR", Billable: true}
	}
	use := func(d string, limit int, budget int64) clicks.Use {
		return clicks.Use{D: d, Expires: exp, Limit: limit, Budget: budget}
	}
	// in48 is a Use of d under a cap of the IPv6 /48 of prefixLimit.
	in48 := func(d string, prefixLimit int) clicks.Use {
		u := use(d, 0, 0)
		u.PrefixLimit = prefixLimit
		return u
	}
	// onAd is a Use of d under a cap of the prefix's clicks on the ad of
	// adLimit and of prefixLimit on all ads.
	onAd := func(d string, adLimit, prefixLimit int) clicks.Use {
		u := in48(d, prefixLimit)
		u.PrefixAdLimit = adLimit
		return u
	}
	// What both ledgers hold before the batches.
	before := []clicks.Spooled{
		{Click: click("p-spent", "198.51.100.200", "p", "spent.example", 500), Use: use("p-spent", 0, 0)},
		{Click: click("p-window", "198.51.100.50", "w", "shop.example", 100), Use: use("p-window", 0, 0)},
		{Click: click("p-used", "198.51.100.60", "u", "shop.example", 100), Use: use("used", 0, 0)},
		{Click: click("p-cap", "198.51.100.70", "x", "shop.example", 100), Use: use("p-cap", 0, 0)},
		{Click: click("p-48", "2001:db8:48:1::1", "q", "shop.example", 100), Use: in48("p-48", 3)},
		{Click: click("p-ad", "2001:db8:4a:1::1", "r", "shop.example", 100), Use: onAd("p-ad", 2, 0)},
	}
	bot := click("i-bot", "198.51.100.8", "b", "shop.example", 100)
	bot.Billable, bot.Reason = false, clicks.ReasonBot
	bot2 := bot // a click refused already, of a network and decision another click of the batch has
	bot2.ID, bot2.IP = "i-bot2", "198.51.100.1"
	expired := use("i-expired", 0, 0)
	expired.Expires = at
	independent := []clicks.Spooled{
		{Click: click("i-fresh", "198.51.100.1", "a1", "shop.example", 100), Use: use("i-fresh", 0, 0)},
		{Click: click("i-over", "198.51.100.2", "a2", "spent.example", 100), Use: use("i-over", 0, 400)},
		{Click: click("i-under", "198.51.100.3", "a3", "rich.example", 100), Use: use("i-under", 0, 10_000)},
		{Click: click("i-expired", "198.51.100.4", "a4", "shop.example", 100), Use: expired},
		{Click: click("i-used", "198.51.100.5", "a5", "shop.example", 100), Use: use("used", 0, 0)},
		{Click: click("i-window", "198.51.100.50", "w", "shop.example", 100), Use: use("i-window", 0, 0)},
		{Click: click("i-cap", "198.51.100.70", "y", "shop.example", 100), Use: use("i-cap", 1, 0)},
		{Click: bot, Use: clicks.Use{}},
		{Click: click("i-nodecision", "2001:db8:9::1", "a9", "shop.example", 100), Use: use("", 0, 0)},
		{Click: click("p-used", "198.51.100.60", "u", "shop.example", 100), Use: use("used", 0, 0)}, // recorded before
		{Click: bot2, Use: use("i-fresh", 0, 0)},
		// Networks of one /48 with one click left of its cap of 3.
		{Click: click("i-48a", "2001:db8:48:2::1", "q", "shop.example", 100), Use: in48("i-48a", 3)},
		{Click: click("i-48b", "2001:db8:48:3::1", "q", "shop.example", 100), Use: in48("i-48b", 3)},
		{Click: click("i-48c", "2001:db8:48:4::1", "q", "shop.example", 100), Use: in48("i-48c", 3)},
		// Networks of one /48 with one click left of its cap on ad r.
		{Click: click("i-ada", "2001:db8:4a:2::1", "r", "shop.example", 100), Use: onAd("i-ada", 2, 0)},
		{Click: click("i-adb", "2001:db8:4a:3::1", "r", "shop.example", 100), Use: onAd("i-adb", 2, 0)},
		{Click: click("i-adc", "2001:db8:4a:4::1", "s", "shop.example", 100), Use: onAd("i-adc", 2, 0)},
		// Networks of one /48 under a cap of 1 on each ad and 2 on all.
		{Click: click("i-bothA", "2001:db8:4b:1::1", "t", "shop.example", 100), Use: onAd("i-bothA", 1, 2)},
		{Click: click("i-bothB", "2001:db8:4b:2::1", "t", "shop.example", 100), Use: onAd("i-bothB", 1, 2)},
		{Click: click("i-bothC", "2001:db8:4b:3::1", "v", "shop.example", 100), Use: onAd("i-bothC", 1, 2)},
		{Click: click("i-bothD", "2001:db8:4b:4::1", "x", "shop.example", 100), Use: onAd("i-bothD", 1, 2)},
	}
	interacting := []clicks.Spooled{
		{Click: click("n-a", "198.51.100.80", "m1", "shop.example", 100), Use: use("n-a", 0, 0)},
		{Click: click("n-b", "198.51.100.80", "m1", "shop.example", 100), Use: use("n-b", 0, 0)}, // same ad: repeat
		{Click: click("n-c", "2001:db8:1::1", "m1", "shop.example", 100), Use: use("n-c", 1, 0)},
		{Click: click("n-d", "2001:db8:1::2", "m2", "shop.example", 100), Use: use("n-d", 1, 0)}, // same /64: cap
		{Click: click("n-e", "198.51.100.81", "m3", "shop.example", 100), Use: use("twice", 0, 0)},
		{Click: click("n-f", "198.51.100.82", "m3", "shop.example", 100), Use: use("twice", 0, 0)}, // decision again
		{Click: click("n-g", "198.51.100.83", "m4", "tight.example", 100), Use: use("n-g", 0, 150)},
		{Click: click("n-h", "198.51.100.84", "m4", "tight.example", 100), Use: use("n-h", 0, 150)},
		{Click: click("n-i", "198.51.100.85", "m4", "tight.example", 100), Use: use("n-i", 0, 150)}, // over budget
		{Click: click("n-g", "198.51.100.83", "m4", "tight.example", 100), Use: use("n-g", 0, 150)}, // id again
		{Click: click("n-48a", "2001:db8:49:1::1", "z", "shop.example", 100), Use: in48("n-48a", 2)},
		{Click: click("n-48b", "2001:db8:49:1::2", "z", "shop.example", 100), Use: in48("n-48b", 2)}, // repeat: no count
		{Click: click("n-48c", "2001:db8:49:2::1", "z", "shop.example", 100), Use: in48("n-48c", 2)},
		{Click: click("n-48d", "2001:db8:49:3::1", "z", "shop.example", 100), Use: in48("n-48d", 2)}, // the /48's cap
		{Click: click("n-ada", "2001:db8:4c:1::1", "k", "shop.example", 100), Use: onAd("n-ada", 1, 0)},
		{Click: click("n-adb", "2001:db8:4c:1::2", "k", "shop.example", 100), Use: onAd("n-adb", 1, 0)}, // repeat: no count
		{Click: click("n-adc", "2001:db8:4c:2::1", "k", "shop.example", 100), Use: onAd("n-adc", 1, 0)}, // the cap on k
		{Click: click("n-add", "2001:db8:4c:3::1", "l", "shop.example", 100), Use: onAd("n-add", 1, 0)},
	}

	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bolt, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	ref, err := clicks.NewLedger(bolt)
	if err != nil {
		t.Fatal(err)
	}
	refRollups, err := clicks.NewRollups(bolt)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{} // the reference's verdict of each id
	for _, s := range before {
		c := s.Click
		if err := db.Ledger().Record(t.Context(), &c, s.Use); err != nil || !c.Billable {
			t.Fatalf("Record %s: %v %q", c.ID, err, c.Reason)
		}
		c = s.Click
		if err := ref.Record(t.Context(), &c, s.Use); err != nil || !c.Billable {
			t.Fatalf("reference Record %s: %v %q", c.ID, err, c.Reason)
		}
		recorded[c.ID] = ""
	}
	for name, batch := range map[string][]clicks.Spooled{"independent": independent, "interacting": interacting} {
		// Ship judges a network's clicks in their order, networks in the
		// order of their names.
		order := slices.Clone(batch)
		slices.SortStableFunc(order, func(a, b clicks.Spooled) int {
			return strings.Compare(clicks.Network(a.Click.IP), clicks.Network(b.Click.IP))
		})
		want := map[string]string{}
		for _, s := range order {
			if r, ok := recorded[s.Click.ID]; ok {
				want[s.Click.ID] = r
				continue
			}
			c := s.Click
			if err := ref.Record(t.Context(), &c, s.Use); err != nil {
				t.Fatal(err)
			}
			recorded[c.ID], want[c.ID] = c.Reason, c.Reason
		}
		shipped := slices.Clone(batch)
		if err := db.Ledger().Ship(t.Context(), shipped); err != nil {
			t.Fatalf("%s: Ship: %v", name, err)
		}
		for _, s := range shipped {
			if s.Click.Reason != want[s.Click.ID] || s.Click.Billable != (want[s.Click.ID] == "") {
				t.Errorf("%s: click %s: %q (billable %v), one after another %q", name, s.Click.ID, s.Click.Reason,
					s.Click.Billable, want[s.Click.ID])
			}
		}
	}
	for _, r := range []string{clicks.ReasonOverBudget, clicks.ReasonNetworkCap, clicks.ReasonPrefixCap, clicks.ReasonPrefixAdCap} {
		if n := len(slices.DeleteFunc(slices.Collect(maps.Values(recorded)), func(v string) bool { return v != r })); n == 0 {
			t.Fatalf("the batches judge no %s: %v", r, recorded)
		}
	}
	for _, id := range []string{"i-48a", "i-48b", "n-48a", "n-48c"} {
		if recorded[id] != "" {
			t.Errorf("click %s under its /48's cap: %q, want billable", id, recorded[id])
		}
	}
	for _, id := range []string{"i-48c", "n-48d", "i-bothD"} {
		if recorded[id] != clicks.ReasonPrefixCap {
			t.Errorf("click %s over its /48's cap: %q, want prefix_cap", id, recorded[id])
		}
	}
	for _, id := range []string{"i-ada", "i-adc", "i-bothA", "i-bothC", "n-ada", "n-add"} {
		if recorded[id] != "" {
			t.Errorf("click %s under its /48's caps: %q, want billable", id, recorded[id])
		}
	}
	for _, id := range []string{"i-adb", "i-bothB", "n-adc"} {
		if recorded[id] != clicks.ReasonPrefixAdCap {
			t.Errorf("click %s over its /48's cap on the ad: %q, want prefix_ad_cap", id, recorded[id])
		}
	}

	for _, adv := range []string{"shop.example", "spent.example", "rich.example", "tight.example"} {
		got, err := db.Rollups().Spent(t.Context(), adv, at)
		if err != nil {
			t.Fatal(err)
		}
		want, err := refRollups.Spent(t.Context(), adv, at)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("spend of %s: %d, one after another %d", adv, got, want)
		}
	}
	for _, g := range []clicks.Grain{clicks.Hour, clicks.Day, clicks.DaySite, clicks.DayAd} {
		rows := func(r clicks.RollupReader) map[string]clicks.Measures {
			m := map[string]clicks.Measures{}
			err := r.ScanRollups(t.Context(), g, at.Add(-24*time.Hour), at.Add(24*time.Hour), func(r *clicks.Rollup) error {
				k := *r
				k.Measures = clicks.Measures{}
				m[fmt.Sprint(k)] = r.Measures
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		got, want := rows(db.Rollups()), rows(refRollups)
		if len(want) == 0 || !maps.Equal(got, want) {
			t.Errorf("grain %d: rollups\n%v\none after another\n%v", g, got, want)
		}
	}
	var n int
	if err := db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM clicks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := len(before) + len(independent) + len(interacting) - 2; n != want {
		t.Errorf("%d click rows, want %d: an id recorded twice", n, want)
	}
}
