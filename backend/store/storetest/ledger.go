package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// LedgerParts are a clicks.Ledger and the click log it appends to. A
// ledger that keeps rollups and spend (and so holds budgets) gives them
// and the impression log that adds to them too; the suite then checks
// budgets and that the rollups equal the logs.
type LedgerParts struct {
	Ledger      clicks.Ledger
	Log         clicks.Store
	Rollups     clicks.RollupReader
	Impressions clicks.Impressions
	// Spend reads the spend the ledger keeps; given with Rollups.
	Spend clicks.SpendReader
}

// Ledger runs the contract of clicks.Ledger against the ledgers fresh
// opens. fresh returns an Opener over a new, empty backing.
func Ledger(t *testing.T, fresh func(t *testing.T) Opener[LedgerParts]) {
	t.Helper()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	exp := t0.Add(24 * time.Hour)
	click := func(ip, ad string, at time.Time) clicks.Click {
		return clicks.Click{Time: at, AdID: ad, AdType: "advertiser", Type: "search", APIKey: "k",
			SiteID: "s", Criterion: "handy", IP: ip, UserAgent: "Mozilla/5.0 (X11) Firefox/133.0"}
	}
	record := func(t *testing.T, l clicks.Ledger, c clicks.Click, u clicks.Use) clicks.Click {
		t.Helper()
		if err := l.Record(within(t, 10*time.Second), &c, u); err != nil {
			t.Fatalf("Record: %v", err)
		}
		return c
	}
	logged := func(t *testing.T, p LedgerParts) []clicks.Click { return scan(t, p.Log, time.Time{}, time.Time{}) }
	use := func(d string) clicks.Use { return clicks.Use{D: d, Expires: exp} }

	t.Run("DecisionBillsOnce", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		if c := record(t, p.Ledger, click("192.0.2.1", "a", t0), use("d1")); !c.Billable || c.Reason != "" {
			t.Fatalf("first click of d1: billable %v %q", c.Billable, c.Reason)
		}
		if c := record(t, p.Ledger, click("192.0.2.2", "a", t0.Add(time.Second)), use("d1")); c.Billable || c.Reason != clicks.ReasonRepeat {
			t.Errorf("d1 again from another network: billable %v %q, want repeat", c.Billable, c.Reason)
		}
		if c := record(t, p.Ledger, click("192.0.2.3", "a", exp), use("d2")); c.Billable || c.Reason != clicks.ReasonRepeat {
			t.Errorf("a decision used at its expiry: billable %v %q, want repeat", c.Billable, c.Reason)
		}
		got := logged(t, p)
		if len(got) != 3 || !got[0].Billable || got[1].Billable || got[1].Reason != clicks.ReasonRepeat {
			t.Errorf("logged %+v", got)
		}
	})

	t.Run("WindowsByNetwork", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		record(t, p.Ledger, click("2001:db8:1:2::1", "a", t0), use("d1"))
		if c := record(t, p.Ledger, click("2001:db8:1:2::99", "a", t0.Add(time.Hour)), use("d2")); c.Reason != clicks.ReasonRepeat {
			t.Errorf("another address of the /64, same ad: %q, want repeat", c.Reason)
		}
		if c := record(t, p.Ledger, click("2001:db8:1:2::99", "b", t0.Add(time.Hour)), use("d3")); !c.Billable {
			t.Errorf("same network, another ad: %q, want billable", c.Reason)
		}
		u := use("d4")
		u.Limit = 2
		if c := record(t, p.Ledger, click("2001:db8:1:2::5", "c", t0.Add(2*time.Hour)), u); c.Reason != clicks.ReasonNetworkCap {
			t.Errorf("third ad of a network capped at 2: %q, want network_cap", c.Reason)
		}
		// The capped click used its decision: it stays used.
		if c := record(t, p.Ledger, click("192.0.2.9", "c", t0.Add(2*time.Hour)), use("d4")); c.Reason != clicks.ReasonRepeat {
			t.Errorf("a decision the cap refused, again: %q, want repeat", c.Reason)
		}
	})

	t.Run("RefusedClicksSpendNothing", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		c := click("192.0.2.1", "a", t0)
		c.Reason = clicks.ReasonNoIntent
		if got := record(t, p.Ledger, c, use("d1")); got.Billable || got.Reason != clicks.ReasonNoIntent {
			t.Errorf("a refused click: billable %v %q", got.Billable, got.Reason)
		}
		if got := record(t, p.Ledger, click("192.0.2.1", "a", t0.Add(time.Second)), use("d1")); !got.Billable {
			t.Errorf("the person's click after a refused one: %q, want billable", got.Reason)
		}
		if n := len(logged(t, p)); n != 2 {
			t.Errorf("%d clicks logged, want 2", n)
		}
	})

	t.Run("OneOfConcurrentClicksBills", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		const n = 16
		var wg sync.WaitGroup
		billable := make(chan bool, n)
		for i := range n {
			wg.Go(func() {
				c := click("198.51.100."+strconv.Itoa(i+1), "a", t0)
				if err := p.Ledger.Record(within(t, 10*time.Second), &c, use("same")); err != nil {
					t.Errorf("Record: %v", err)
				}
				billable <- c.Billable
			})
		}
		wg.Wait()
		close(billable)
		got := 0
		for b := range billable {
			if b {
				got++
			}
		}
		if got != 1 {
			t.Errorf("%d of %d concurrent clicks of one decision billable, want 1", got, n)
		}
		if l := len(logged(t, p)); l != n {
			t.Errorf("%d clicks logged, want %d", l, n)
		}
	})

	t.Run("SurvivesRestart", func(t *testing.T) {
		o := fresh(t)
		p, closeFn := open(t, o)
		record(t, p.Ledger, click("192.0.2.1", "a", t0), use("d1"))
		closeFn()
		p, _ = open(t, o)
		if c := record(t, p.Ledger, click("192.0.2.2", "a", t0.Add(time.Minute)), use("d1")); c.Reason != clicks.ReasonRepeat {
			t.Errorf("a decision used before the restart: %q, want repeat", c.Reason)
		}
		if c := record(t, p.Ledger, click("192.0.2.1", "a", t0.Add(time.Minute)), use("d2")); c.Reason != clicks.ReasonRepeat {
			t.Errorf("a window claimed before the restart: %q, want repeat", c.Reason)
		}
		if n := len(logged(t, p)); n != 3 {
			t.Errorf("%d clicks logged across the restart, want 3", n)
		}
	})

	// in48 is the address of the i-th /64 of the /48 2001:db8:7::/48, and
	// capped a Use of d under a prefix cap of limit, as Check makes it.
	in48 := func(i int) string { return "2001:db8:7:" + strconv.FormatInt(int64(i), 16) + "::1" }
	capped := func(d string, limit int) clicks.Use {
		u := use(d)
		u.PrefixLimit, u.IPv4Capped = limit, true
		return u
	}

	// billedAtOnce records n clicks on one ad at once, the i-th from
	// addr(i), each on a decision of its own under a prefix cap of limit,
	// and returns how many billed; a click refused for another reason than
	// the prefix's cap fails t.
	billedAtOnce := func(t *testing.T, p LedgerParts, n, limit int, addr func(int) string) int {
		t.Helper()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c := click(addr(i), "a", t0)
				if err := p.Ledger.Record(within(t, 10*time.Second), &c, capped("d"+strconv.Itoa(i), limit)); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		billed := 0
		for _, c := range logged(t, p) {
			switch {
			case c.Billable:
				billed++
			case c.Reason != clicks.ReasonPrefixCap:
				t.Errorf("a click from %s refused as %q, want prefix_cap", c.IP, c.Reason)
			}
		}
		return billed
	}

	t.Run("PrefixCapHoldsConcurrentClicks", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		const n, limit = 40, 7
		if billed := billedAtOnce(t, p, n, limit, in48); billed != limit {
			t.Errorf("%d of %d concurrent clicks from the /64s of one /48 billed, want its cap %d", billed, n, limit)
		}
		if c := record(t, p.Ledger, click("2001:db8:8::1", "a", t0), capped("other", limit)); !c.Billable {
			t.Errorf("another /48: %q, want billable", c.Reason)
		}
		if c := record(t, p.Ledger, click("192.0.2.1", "a", t0), capped("v4", 1)); !c.Billable {
			t.Errorf("an IPv4 client, the first of its /24: %q, want billable", c.Reason)
		}
		next := capped("next-day", limit)
		next.Expires = t0.Add(48 * time.Hour)
		if c := record(t, p.Ledger, click(in48(99), "a", t0.Add(24*time.Hour)), next); !c.Billable {
			t.Errorf("the next UTC day: %q, want billable", c.Reason)
		}
	})

	// An IPv4 /24 is counted as a /48 is, whichever way its addresses are
	// spelled: the ledger takes each click's Prefix of its address (an
	// IPv4-mapped or 6to4 one is its IPv4 address), as the redirect does.
	t.Run("PrefixCapHoldsConcurrentClicksOfAnIPv4s24", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		const n, limit = 30, 7
		in24 := func(i int) string {
			switch i % 3 {
			case 1:
				return "::ffff:192.0.2." + strconv.Itoa(i+1)
			case 2:
				return fmt.Sprintf("2002:c000:2%02x:%x::1", i+1, i) // 192.0.2.(i+1)
			}
			return "192.0.2." + strconv.Itoa(i+1)
		}
		if billed := billedAtOnce(t, p, n, limit, in24); billed != limit {
			t.Errorf("%d of %d concurrent clicks from the addresses of one /24 billed, want its cap %d", billed, n, limit)
		}
		for _, ip := range []string{"192.0.2.200", "::ffff:192.0.2.201", "2002:c000:2ca::1"} {
			if c := record(t, p.Ledger, click(ip, "a", t0), capped("again-"+ip, limit)); c.Reason != clicks.ReasonPrefixCap {
				t.Errorf("%s of the /24 at its cap: %q, want %q", ip, c.Reason, clicks.ReasonPrefixCap)
			}
		}
		// A click spooled by a version that capped no /24: its Use's cap is
		// the /48's, and the /24 is not checked.
		old := capped("spooled-before", limit)
		old.IPv4Capped = false
		if c := record(t, p.Ledger, click("192.0.2.210", "a", t0), old); !c.Billable {
			t.Errorf("a click spooled before /24 caps, of the /24 at its cap: %q, want billable", c.Reason)
		}
		for _, ip := range []string{"192.0.3.1", "2002:c000:302::1", in48(0)} {
			if c := record(t, p.Ledger, click(ip, "a", t0), capped("other-"+ip, limit)); !c.Billable {
				t.Errorf("%s, out of the /24: %q, want billable", ip, c.Reason)
			}
		}
	})

	t.Run("PrefixCapSurvivesRestart", func(t *testing.T) {
		o := fresh(t)
		p, closeFn := open(t, o)
		record(t, p.Ledger, click(in48(0), "a", t0), capped("d0", 2))
		record(t, p.Ledger, click(in48(1), "a", t0), capped("d1", 2))
		closeFn()
		p, _ = open(t, o)
		if c := record(t, p.Ledger, click(in48(2), "a", t0.Add(time.Minute)), capped("d2", 2)); c.Reason != clicks.ReasonPrefixCap {
			t.Errorf("a /48 at its cap before the restart: %q, want prefix_cap", c.Reason)
		}
	})

	t.Run("RefusedClicksSpendNothingOfThePrefix", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		const limit = 3
		want := func(c clicks.Click, u clicks.Use, reason, what string) {
			t.Helper()
			if got := record(t, p.Ledger, c, u); got.Reason != reason {
				t.Errorf("%s: %q, want %q", what, got.Reason, reason)
			}
		}
		want(click(in48(0), "a", t0), capped("d1", limit), "", "the /48's first click")
		want(click(in48(1), "a", t0), capped("d1", limit), clicks.ReasonRepeat, "its decision again")
		want(click(in48(0), "a", t0), capped("d2", limit), clicks.ReasonRepeat, "its network and ad again")
		u := capped("d3", limit)
		u.Limit = 1
		want(click(in48(0), "b", t0), u, clicks.ReasonNetworkCap, "its network over its own cap")
		noted := click(in48(5), "a", t0)
		noted.Reason = clicks.ReasonBot
		want(noted, capped("d4", limit), clicks.ReasonBot, "a bot")
		if p.Rollups != nil {
			bought := func(i int, d string) (clicks.Click, clicks.Use) {
				c := click(in48(i), "c", t0)
				c.Advertiser, c.BidMicros, c.Currency = "shop.example", 100, "EUR"
				u := capped(d, limit)
				u.Budget = 100
				return c, u
			}
			c, u := bought(2, "d5")
			want(c, u, "", "the advertiser's click within its budget")
			c, u = bought(3, "d6")
			want(c, u, clicks.ReasonOverBudget, "the advertiser's click over its budget")
		} else {
			want(click(in48(2), "c", t0), capped("d5", limit), "", "the /48's second click")
		}
		want(click(in48(4), "d", t0), capped("d7", limit), "", "the /48's third click, after refused ones")
		want(click(in48(6), "d", t0), capped("d8", limit), clicks.ReasonPrefixCap, "the /48's fourth click")
	})

	// adCapped is a Use of d under a cap of its prefix's clicks on the ad
	// of adLimit, and of prefixLimit on all ads, as Check makes it.
	adCapped := func(d string, adLimit, prefixLimit int) clicks.Use {
		u := capped(d, prefixLimit)
		u.PrefixAdLimit = adLimit
		return u
	}

	t.Run("PrefixAdCapHoldsConcurrentClicks", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		const n, limit = 30, 7
		in24 := func(i int) string { return "198.51.100." + strconv.Itoa(i+1) }
		var wg sync.WaitGroup
		for i := range n {
			for _, ad := range []string{"a", "b"} {
				wg.Go(func() {
					c := click(in48(i), ad, t0)
					if err := p.Ledger.Record(within(t, 10*time.Second), &c, adCapped(ad+"6-"+strconv.Itoa(i), limit, 1000)); err != nil {
						t.Errorf("Record: %v", err)
					}
				})
			}
			wg.Go(func() {
				c := click(in24(i), "a", t0)
				if err := p.Ledger.Record(within(t, 10*time.Second), &c, adCapped("a4-"+strconv.Itoa(i), limit, 1000)); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		billed := map[string]int{}
		for _, c := range logged(t, p) {
			switch {
			case c.Billable:
				billed[clicks.Prefix(c.IP)+" "+c.AdID]++
			case c.Reason != clicks.ReasonPrefixAdCap:
				t.Errorf("a click from %s on %s refused as %q, want prefix_ad_cap", c.IP, c.AdID, c.Reason)
			}
		}
		for _, k := range []string{"2001:db8:7::/48 a", "2001:db8:7::/48 b", "198.51.100.0/24 a"} {
			if billed[k] != limit {
				t.Errorf("%d of %d concurrent clicks of %s billed, want its cap on the ad %d", billed[k], n, k, limit)
			}
		}
		if c := record(t, p.Ledger, click("2001:db8:8::1", "a", t0), adCapped("other", limit, 1000)); !c.Billable {
			t.Errorf("another /48 on the ad: %q, want billable", c.Reason)
		}
		next := adCapped("next-day", limit, 1000)
		next.Expires = t0.Add(48 * time.Hour)
		if c := record(t, p.Ledger, click(in48(99), "a", t0.Add(24*time.Hour)), next); !c.Billable {
			t.Errorf("the next UTC day: %q, want billable", c.Reason)
		}
	})

	t.Run("PrefixCapsOnTheAdAndOnAll", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		for i, c := range []struct{ ad, want string }{
			{"a", ""}, {"a", ""}, {"a", clicks.ReasonPrefixAdCap}, {"b", ""},
			{"b", clicks.ReasonPrefixCap}, {"a", clicks.ReasonPrefixAdCap}, {"c", clicks.ReasonPrefixCap},
		} {
			got := record(t, p.Ledger, click(in48(i), c.ad, t0), adCapped("d"+strconv.Itoa(i), 2, 3))
			if got.Reason != c.want {
				t.Errorf("/64 %d on ad %s under caps of 2 on the ad and 3 on all: %q, want %q", i, c.ad, got.Reason, c.want)
			}
		}
	})

	// A click spooled by a version without the cap per ad has none in its
	// Use: the prefix's clicks on the ad are neither checked nor counted.
	t.Run("PrefixAdCapSkipsAUseWithout", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		want := func(i int, u clicks.Use, reason, what string) {
			t.Helper()
			if got := record(t, p.Ledger, click(in48(i), "a", t0), u); got.Reason != reason {
				t.Errorf("%s: %q, want %q", what, got.Reason, reason)
			}
		}
		want(0, adCapped("d0", 1, 1000), "", "the /48's first click on the ad")
		want(1, adCapped("d1", 0, 1000), "", "a click spooled before the cap, at the cap")
		want(2, adCapped("d2", 0, 1000), "", "another click spooled before the cap")
		want(3, adCapped("d3", 2, 1000), "", "a cap of 2, which the spooled clicks did not count toward")
		want(4, adCapped("d4", 2, 1000), clicks.ReasonPrefixAdCap, "over a cap of 2")
	})

	t.Run("PrefixAdCapSurvivesRestart", func(t *testing.T) {
		o := fresh(t)
		p, closeFn := open(t, o)
		record(t, p.Ledger, click(in48(0), "a", t0), adCapped("d0", 2, 0))
		record(t, p.Ledger, click(in48(1), "a", t0), adCapped("d1", 2, 0))
		closeFn()
		p, _ = open(t, o)
		if c := record(t, p.Ledger, click(in48(2), "a", t0.Add(time.Minute)), adCapped("d2", 2, 0)); c.Reason != clicks.ReasonPrefixAdCap {
			t.Errorf("a /48 at its cap on the ad before the restart: %q, want prefix_ad_cap", c.Reason)
		}
		if c := record(t, p.Ledger, click(in48(3), "b", t0.Add(time.Minute)), adCapped("d3", 2, 0)); !c.Billable {
			t.Errorf("the /48 on another ad after the restart: %q, want billable", c.Reason)
		}
	})

	t.Run("BudgetsHold", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		if p.Rollups == nil {
			t.Skip("the ledger keeps no spend")
		}
		const bid, budget, n = 450_000, 10 * 450_000, 40
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c := click("198.51.100."+strconv.Itoa(i+1), "ad"+strconv.Itoa(i%3), t0)
				c.Advertiser, c.BidMicros, c.Currency = "shop.example", bid, "EUR"
				u := use("b" + strconv.Itoa(i))
				u.Budget = budget
				if err := p.Ledger.Record(within(t, 10*time.Second), &c, u); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		billed, spent := 0, int64(0)
		for _, c := range logged(t, p) {
			switch {
			case c.Billable:
				billed++
				spent += c.Spend()
			case c.Reason != clicks.ReasonOverBudget:
				t.Errorf("a click refused as %q, want over_budget", c.Reason)
			}
		}
		if billed != budget/bid || spent > budget+bid {
			t.Errorf("%d clicks of %d at once billed %d, against a budget of %d: want %d", n, bid, spent, budget, budget/bid)
		}
		c := click("198.51.100.200", "ad0", t0.Add(24*time.Hour))
		c.Advertiser, c.BidMicros = "shop.example", bid
		u := use("next-day")
		u.Budget, u.Expires = budget, t0.Add(48*time.Hour)
		if got := record(t, p.Ledger, c, u); !got.Billable {
			t.Errorf("the next UTC day's first click: %q, want billable", got.Reason)
		}
	})

	// BudgetsKeepTheAdvertisersDay: an advertiser whose budget counts the
	// days of Los Angeles (UTC-8 in November) spends on its own date, by
	// the click's time: a budget spent at 05:00 UTC (21:00 the day
	// before there) stays spent at 07:59 UTC and is back at 08:00 UTC,
	// and spend at 07:30 and 08:30 UTC falls on two days. A click whose
	// Use names no zone (spooled before budgets had zones) keeps the UTC
	// day.
	t.Run("BudgetsKeepTheAdvertisersDay", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		if p.Rollups == nil {
			t.Skip("the ledger keeps no spend")
		}
		const bid = 300_000
		la, err := time.LoadLocation("America/Los_Angeles")
		if err != nil {
			t.Fatal(err)
		}
		day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
		n := 0
		clickAt := func(adv, zone string, at time.Time) clicks.Click {
			t.Helper()
			n++
			c := click("198.51.100."+strconv.Itoa(n), "ad"+strconv.Itoa(n), at)
			c.Advertiser, c.BidMicros, c.Currency = adv, bid, "EUR"
			u := use("z" + strconv.Itoa(n))
			u.Budget, u.Currency, u.Zone, u.Expires = bid, "EUR", zone, at.Add(time.Hour)
			return record(t, p.Ledger, c, u)
		}
		spent := func(adv string, d clicks.BudgetDay) int64 {
			t.Helper()
			s, err := p.Spend.SpentOn(t.Context(), adv, d)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		for _, tt := range []struct {
			at   time.Duration
			want string
		}{
			{5 * time.Hour, ""},
			{7*time.Hour + 59*time.Minute, clicks.ReasonOverBudget},
			{8 * time.Hour, ""},
			{8*time.Hour + time.Minute, clicks.ReasonOverBudget},
		} {
			if c := clickAt("la.example", "America/Los_Angeles", day.Add(tt.at)); c.Reason != tt.want || c.Billable != (tt.want == "") {
				t.Errorf("a click at %s UTC: billable %v %q, want %q", day.Add(tt.at).Format("15:04"), c.Billable, c.Reason, tt.want)
			}
		}
		clickAt("other.example", "America/Los_Angeles", day.Add(7*time.Hour+30*time.Minute))
		clickAt("other.example", "America/Los_Angeles", day.Add(8*time.Hour+30*time.Minute))
		before, after := clicks.BudgetDayIn(day.Add(7*time.Hour+30*time.Minute), la), clicks.BudgetDayIn(day.Add(8*time.Hour+30*time.Minute), la)
		if after != before+1 || before != clicks.BudgetDayIn(day, time.UTC)-1 {
			t.Fatalf("the budget days of 07:30 and 08:30 UTC in Los Angeles: %d and %d", before, after)
		}
		for _, adv := range []string{"la.example", "other.example"} {
			if b, a := spent(adv, before), spent(adv, after); b != bid || a != bid {
				t.Errorf("%s spent %d on its 21 November and %d on its 22nd; want %d each", adv, b, a, bid)
			}
		}
		// No zone: the UTC day, which 05:00 and 08:00 UTC share.
		clickAt("utc.example", "", day.Add(5*time.Hour))
		if c := clickAt("utc.example", "", day.Add(8*time.Hour)); c.Reason != clicks.ReasonOverBudget {
			t.Errorf("a UTC advertiser's second click of the UTC day: %q, want over_budget", c.Reason)
		}
		if s := spent("utc.example", clicks.BudgetDayIn(day, time.UTC)); s != bid {
			t.Errorf("the UTC advertiser spent %d on its day, want %d", s, bid)
		}
		// SpentAllOn reads the spends of a day of the advertisers asked
		// for at once, whatever the advertiser's zone, and nothing of
		// another day or of an advertiser not asked for; one without
		// spend is absent.
		every := []string{"la.example", "other.example", "utc.example", "unknown.example"}
		for _, tt := range []struct {
			day  clicks.BudgetDay
			advs []string
			want map[string]int64
		}{
			{before - 1, every, map[string]int64{}},
			{before, every, map[string]int64{"la.example": bid, "other.example": bid}},
			{after, every, map[string]int64{"la.example": bid, "other.example": bid, "utc.example": bid}},
			{after, []string{"utc.example", "unknown.example"}, map[string]int64{"utc.example": bid}},
			{after, []string{"other.example"}, map[string]int64{"other.example": bid}},
			{after, nil, map[string]int64{}},
		} {
			if got := spentAll(t, p.Spend, tt.day, tt.advs...); !sameSpend(got, tt.want) {
				t.Errorf("SpentAllOn of day %d for %v: %v, want %v", tt.day, tt.advs, got, tt.want)
			}
		}
	})

	// BudgetsHoldOnEachDayAtOnce: clicks of one advertiser that arrive
	// together fall on two of its dates and under two zones, as when a
	// reload changes its zone: at 07:59 UTC on 22 November a click in Los
	// Angeles spends on the 21st and one in UTC on the 22nd, which a click
	// in Los Angeles at 08:01 UTC spends on too. Each date bills its
	// budget and no more, whichever zone named it.
	t.Run("BudgetsHoldOnEachDayAtOnce", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		if p.Rollups == nil {
			t.Skip("the ledger keeps no spend")
		}
		const bid, budget, n = 200_000, 3 * 200_000, 60
		la, err := time.LoadLocation("America/Los_Angeles")
		if err != nil {
			t.Fatal(err)
		}
		day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
		kinds := []struct {
			at   time.Time
			zone string
		}{
			{day.Add(7*time.Hour + 59*time.Minute), "America/Los_Angeles"}, // the 21st
			{day.Add(7*time.Hour + 59*time.Minute), ""},                    // the 22nd
			{day.Add(8*time.Hour + time.Minute), "America/Los_Angeles"},    // the 22nd
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				k := kinds[i%len(kinds)]
				c := click("198.51.100."+strconv.Itoa(i+1), "ad"+strconv.Itoa(i%5), k.at)
				c.Advertiser, c.BidMicros, c.Currency = "shop.example", bid, "EUR"
				u := use("days" + strconv.Itoa(i))
				u.Budget, u.Currency, u.Zone, u.Expires = budget, "EUR", k.zone, k.at.Add(time.Hour)
				if err := p.Ledger.Record(within(t, 10*time.Second), &c, u); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		first, second := clicks.BudgetDayIn(kinds[0].at, la), clicks.BudgetDayIn(day, time.UTC)
		if first != second-1 {
			t.Fatalf("the dates of 07:59 UTC in Los Angeles and in UTC: %d and %d", first, second)
		}
		var billed int64
		for _, c := range logged(t, p) {
			switch {
			case c.Billable:
				billed += c.Spend()
			case c.Reason != clicks.ReasonOverBudget:
				t.Errorf("a click refused as %q, want over_budget", c.Reason)
			}
		}
		for _, d := range []clicks.BudgetDay{first, second} {
			s, err := p.Spend.SpentOn(t.Context(), "shop.example", d)
			if err != nil {
				t.Fatal(err)
			}
			if s != budget {
				t.Errorf("the advertiser spent %d on day %d, want its budget, %d, exactly", s, d, budget)
			}
		}
		if billed != 2*budget {
			t.Errorf("the clicks billed %d in all, want two days' budgets, %d", billed, 2*budget)
		}
	})

	// BudgetsHoldTheirCurrency: an advertiser with a budget in EUR whose
	// clicks come in GBP too (a catalog that slipped a GBP ad past the
	// load's check, a link of an older catalog) bills none of them: were
	// they counted, GBP would spend the EUR budget as if they were euros;
	// were they left out of the check, they would bill without a bound.
	// Clicked at once with EUR clicks, the EUR ones bill the budget and
	// no more, and the rollups keep each currency's clicks apart.
	t.Run("BudgetsHoldTheirCurrency", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		if p.Rollups == nil {
			t.Skip("the ledger keeps no spend")
		}
		const bid, budget, n = 450_000, 4 * 450_000, 24
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c := click("198.51.100."+strconv.Itoa(i+1), "ad"+strconv.Itoa(i%2), t0)
				c.Advertiser, c.BidMicros, c.Currency = "shop.example", bid, []string{"GBP", "EUR"}[i%2]
				u := use("cur" + strconv.Itoa(i))
				u.Budget, u.Currency = budget, "EUR"
				if err := p.Ledger.Record(within(t, 10*time.Second), &c, u); err != nil {
					t.Errorf("Record: %v", err)
				}
			})
		}
		wg.Wait()
		billed := map[string]int64{}
		for _, c := range logged(t, p) {
			switch {
			case c.Billable:
				billed[c.Currency] += c.Spend()
			case c.Reason != clicks.ReasonOverBudget:
				t.Errorf("a %s click refused as %q, want over_budget", c.Currency, c.Reason)
			}
		}
		if billed["GBP"] != 0 || billed["EUR"] != budget {
			t.Errorf("%d clicks at once, half of them in GBP, against a budget of %d EUR: billed %v, want %d EUR and no GBP",
				n, budget, billed, budget)
		}
		rows := map[string]clicks.Measures{}
		if err := p.Rollups.ScanRollups(t.Context(), clicks.DayAd, t0.Truncate(24*time.Hour), t0.Add(24*time.Hour),
			func(r *clicks.Rollup) error {
				m := rows[r.Currency]
				m.Clicks += r.Clicks
				m.Billable += r.Billable
				m.SpendMicros += r.SpendMicros
				m.Unbilled[slices.Index(clicks.Reasons, clicks.ReasonOverBudget)] += r.Unbilled[slices.Index(clicks.Reasons, clicks.ReasonOverBudget)]
				rows[r.Currency] = m
				return nil
			}); err != nil {
			t.Fatal(err)
		}
		over := slices.Index(clicks.Reasons, clicks.ReasonOverBudget)
		if g := rows["GBP"]; g.Clicks != n/2 || g.Billable != 0 || g.SpendMicros != 0 || g.Unbilled[over] != n/2 {
			t.Errorf("the GBP rollup: %d clicks, %d billable, spend %d, %d over_budget; want %d clicks, all over_budget",
				g.Clicks, g.Billable, g.SpendMicros, g.Unbilled[over], n/2)
		}
		if e := rows["EUR"]; e.Clicks != n/2 || e.SpendMicros != budget || e.Billable != budget/bid {
			t.Errorf("the EUR rollup: %d clicks, %d billable, spend %d; want %d clicks, %d billable, spend %d",
				e.Clicks, e.Billable, e.SpendMicros, n/2, budget/bid, budget)
		}
		// A click spooled before budgets named their currency checks none.
		c := click("198.51.100.250", "ad9", t0.Add(24*time.Hour))
		c.Advertiser, c.BidMicros, c.Currency = "shop.example", bid, "GBP"
		u := use("no-currency")
		u.Budget, u.Expires = budget, t0.Add(48*time.Hour)
		if got := record(t, p.Ledger, c, u); !got.Billable {
			t.Errorf("a click whose Use names no currency: %q, want billable", got.Reason)
		}
	})

	t.Run("RollupsEqualTheLogs", func(t *testing.T) {
		o := fresh(t)
		p, closeFn := open(t, o)
		if p.Rollups == nil {
			t.Skip("the ledger keeps no rollups")
		}
		reasons := []string{"", clicks.ReasonBot, clicks.ReasonNoIntent, "", clicks.ReasonForged}
		for i := range 300 {
			at := t0.Add(time.Duration(i) * 7 * time.Minute) // over a day and a half
			c := click("2001:db8:"+strconv.Itoa(i%50)+"::1", "ad"+strconv.Itoa(i%7), at)
			c.Advertiser, c.BidMicros, c.Currency = "shop"+strconv.Itoa(i%3)+".example", int64(10_000*(1+i%5)), []string{"EUR", "GBP"}[i%2]
			c.SiteID, c.YkTag, c.Country, c.Criterion = "s"+strconv.Itoa(i%2), "t"+strconv.Itoa(i%4), []string{"de", "gb", ""}[i%3], "c"+strconv.Itoa(i%6)
			c.Reason = reasons[i%len(reasons)]
			if i%11 == 5 {
				c.APIKey = "k2" // a second partner's
			}
			if i%13 == 7 {
				c.SiteID = "" // a page of no site's
			}
			record(t, p.Ledger, c, use("r"+strconv.Itoa(i)))
			if i%2 == 0 {
				imp := clicks.Impression{Time: at, AdID: c.AdID, AdType: c.AdType, Type: c.Type, APIKey: c.APIKey, SiteID: c.SiteID,
					Criterion: c.Criterion, YkTag: c.YkTag, Country: c.Country, Advertiser: c.Advertiser, Currency: c.Currency}
				if _, err := p.Impressions.Append(within(t, 10*time.Second), []clicks.Impression{imp, imp}); err != nil {
					t.Fatal(err)
				}
			}
		}
		closeFn()
		p, _ = open(t, o) // what a restart reads
		for _, g := range []clicks.Grain{clicks.Hour, clicks.Day, clicks.DaySite, clicks.DayAd} {
			want := map[clicks.Rollup]clicks.Measures{}
			key := func(r clicks.Rollup) clicks.Rollup { return grainKey(g, r) }
			for _, c := range logged(t, p) {
				k := key(clicks.Rollup{Start: c.Time, APIKey: c.APIKey, SiteID: c.SiteID, Advertiser: c.Advertiser, AdID: c.AdID,
					Context: c.Type, Currency: c.Currency, Criterion: c.Criterion, YkTag: c.YkTag, Country: c.Country})
				m := want[k]
				m.Clicks++
				if c.Billable {
					m.Billable++
					m.SpendMicros += c.BidMicros
				} else {
					m.Unbilled[slices.Index(clicks.Reasons, c.Reason)]++
				}
				want[k] = m
			}
			p.Impressions.Scan(t.Context(), time.Time{}, time.Time{}, func(i clicks.Impression) error {
				k := key(clicks.Rollup{Start: i.Time, APIKey: i.APIKey, SiteID: i.SiteID, Advertiser: i.Advertiser, AdID: i.AdID,
					Context: i.Type, Currency: i.Currency, Criterion: i.Criterion, YkTag: i.YkTag, Country: i.Country})
				m := want[k]
				m.Impressions++
				want[k] = m
				return nil
			})
			got := map[clicks.Rollup]clicks.Measures{}
			if err := p.Rollups.ScanRollups(t.Context(), g, t0.Truncate(24*time.Hour), t0.Add(72*time.Hour), func(r *clicks.Rollup) error {
				k := *r
				k.Measures = clicks.Measures{}
				k.Start = k.Start.UTC()
				if _, dup := got[k]; dup {
					t.Errorf("grain %d: row %+v twice", g, k)
				}
				got[k] = r.Measures
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("grain %d: %d rows, want %d", g, len(got), len(want))
			}
			for k, m := range want {
				if got[k] != m {
					t.Errorf("grain %d row %+v: %+v, want %+v", g, k, got[k], m)
				}
			}
			// An account's scan gives its rows, and no other's.
			for _, a := range []struct {
				kind clicks.Dimension
				id   string
				has  bool // whether the account has rows
			}{{clicks.DimAPIKey, "k", true}, {clicks.DimAPIKey, "k2", true}, {clicks.DimAPIKey, "none", false},
				{clicks.DimAdvertiser, "shop0.example", true}, {clicks.DimAdvertiser, "shop2.example", true}, {clicks.DimAdvertiser, "k", false}} {
				of := func(r clicks.Rollup) string {
					if a.kind == clicks.DimAPIKey {
						return r.APIKey
					}
					return r.Advertiser
				}
				mine := map[clicks.Rollup]clicks.Measures{}
				for k, m := range want {
					if of(k) == a.id {
						mine[k] = m
					}
				}
				got := map[clicks.Rollup]clicks.Measures{}
				var last time.Time
				if err := p.Rollups.ScanAccountRollups(t.Context(), g, t0.Truncate(24*time.Hour), t0.Add(72*time.Hour), a.kind, a.id,
					func(r *clicks.Rollup) error {
						if r.Start.Before(last) {
							t.Errorf("grain %d, %s: a period of %v after %v", g, a.id, r.Start, last)
						}
						last = r.Start
						k := *r
						k.Measures = clicks.Measures{}
						k.Start = k.Start.UTC()
						if _, dup := got[k]; dup {
							t.Errorf("grain %d, %s: row %+v twice", g, a.id, k)
						}
						got[k] = r.Measures
						return nil
					}); err != nil {
					t.Fatal(err)
				}
				if len(got) != len(mine) || (len(mine) > 0) != a.has {
					t.Errorf("grain %d, %s: %d rows, want %d", g, a.id, len(got), len(mine))
				}
				for k, m := range mine {
					if got[k] != m {
						t.Errorf("grain %d, %s, row %+v: %+v, want %+v", g, a.id, k, got[k], m)
					}
				}
			}
		}
		// A range reads only the periods that start in it.
		var hours []time.Time
		p.Rollups.ScanRollups(t.Context(), clicks.Hour, t0.Add(time.Hour), t0.Add(3*time.Hour), func(r *clicks.Rollup) error {
			hours = append(hours, r.Start)
			return nil
		})
		for _, h := range hours {
			if h.Before(t0.Add(time.Hour)) || !h.Before(t0.Add(3*time.Hour)) {
				t.Errorf("an hour from %v in a scan of [%v, %v)", h, t0.Add(time.Hour), t0.Add(3*time.Hour))
			}
		}
		if len(hours) == 0 {
			t.Error("a scan of two hours read nothing")
		}
		// SumHours gives the sums of the hours' rows of its account in its
		// periods, by its dimensions, in order of period: of a partner and
		// an advertiser, of a partner, of an advertiser.
		for _, acc := range [][2]string{{"k", "shop1.example"}, {"k2", ""}, {"", "shop2.example"}} {
			q := clicks.HourSums{Starts: []time.Time{t0.Add(time.Hour), t0.Add(6 * time.Hour), t0.Add(7 * time.Hour), t0.Add(20 * time.Hour)},
				End: t0.Add(30 * time.Hour), APIKey: acc[0], Advertiser: acc[1],
				Dims: []clicks.Dimension{clicks.DimAPIKey, clicks.DimAdvertiser, clicks.DimCurrency, clicks.DimSiteID}}
			want := map[clicks.Rollup]clicks.Measures{}
			i := 0
			p.Rollups.ScanRollups(t.Context(), clicks.Hour, q.Starts[0], q.End, func(r *clicks.Rollup) error {
				if q.APIKey != "" && r.APIKey != q.APIKey || q.Advertiser != "" && r.Advertiser != q.Advertiser {
					return nil
				}
				i = q.Period(r.Start, i)
				k := clicks.Rollup{Start: q.Starts[i], APIKey: r.APIKey, Advertiser: r.Advertiser, Currency: r.Currency, SiteID: r.SiteID}
				m := want[k]
				m.Add(&r.Measures)
				want[k] = m
				return nil
			})
			got := map[clicks.Rollup]clicks.Measures{}
			var last time.Time
			if err := p.Rollups.SumHours(t.Context(), q, func(r *clicks.Rollup) error {
				if r.Start.Before(last) || !slices.ContainsFunc(q.Starts, r.Start.Equal) {
					t.Errorf("%v: SumHours gave a period of %v after %v", acc, r.Start, last)
				}
				last = r.Start
				k := *r
				k.Measures = clicks.Measures{}
				k.Start = q.Starts[slices.IndexFunc(q.Starts, r.Start.Equal)]
				m := got[k]
				m.Add(&r.Measures)
				got[k] = m
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(want) < 8 || len(got) != len(want) {
				t.Errorf("%v: SumHours gave %d sums, the hours make %d", acc, len(got), len(want))
			}
			for k, m := range want {
				if got[k] != m {
					t.Errorf("%v: SumHours %+v: %+v, want %+v", acc, k, got[k], m)
				}
			}
		}
		// SumSites gives what SumHours of the range's hours by site,
		// context and currency gives, sites without a partner or an id
		// left out, reading days by the day: for a range of whole days,
		// of a day and hours before it, of days and hours after them,
		// and of hours within a day.
		day := t0.Truncate(24 * time.Hour)
		for _, r := range [][2]time.Time{{day, day.Add(48 * time.Hour)}, {t0.Add(5 * time.Hour), t0.Add(37 * time.Hour)},
			{day.Add(-24 * time.Hour), t0.Add(30 * time.Hour)}, {t0.Add(time.Hour), t0.Add(5 * time.Hour)}} {
			key := func(r *clicks.Rollup) clicks.Rollup {
				return clicks.Rollup{APIKey: r.APIKey, SiteID: r.SiteID, Context: r.Context, Currency: r.Currency}
			}
			want := map[clicks.Rollup]clicks.Measures{}
			q := clicks.HourSums{Starts: []time.Time{r[0]}, End: r[1],
				Dims: []clicks.Dimension{clicks.DimAPIKey, clicks.DimSiteID, clicks.DimContext, clicks.DimCurrency}}
			if err := p.Rollups.SumHours(t.Context(), q, func(r *clicks.Rollup) error {
				if r.APIKey != "" && r.SiteID != "" {
					m := want[key(r)]
					m.Add(&r.Measures)
					want[key(r)] = m
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got := map[clicks.Rollup]clicks.Measures{}
			if err := p.Rollups.SumSites(t.Context(), r[0], r[1], func(row *clicks.Rollup) error {
				if !row.Start.Equal(r[0]) || row.APIKey == "" || row.SiteID == "" || row.Advertiser != "" || row.AdID != "" || row.Country != "" {
					t.Errorf("%v..%v: SumSites gave %+v", r[0], r[1], *row)
				}
				m := got[key(row)]
				m.Add(&row.Measures)
				got[key(row)] = m
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(want) < 4 || len(got) != len(want) {
				t.Errorf("%v..%v: SumSites gave %d sums, the hours make %d", r[0], r[1], len(got), len(want))
			}
			for k, m := range want {
				if got[k] != m {
					t.Errorf("%v..%v: SumSites %+v: %+v, want %+v", r[0], r[1], k, got[k], m)
				}
			}
		}
	})

	t.Run("DoneContextRecordsNothing", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		c := click("192.0.2.1", "a", t0)
		if err := p.Ledger.Record(ctx, &c, use("d1")); err == nil {
			t.Fatal("Record with a done context succeeded")
		}
		if c.Billable {
			t.Error("a click that was not recorded is billable")
		}
		if n := len(logged(t, p)); n != 0 {
			t.Errorf("%d clicks logged", n)
		}
		if c := record(t, p.Ledger, click("192.0.2.1", "a", t0), use("d1")); !c.Billable {
			t.Errorf("the decision after a refused Record: %q, want billable", c.Reason)
		}
	})

	t.Run("ReportCTRCountsPageClicks", func(t *testing.T) { reportCTR(t, fresh) })
}

// grainKey is r as a row of grain g holds it: its start at the grain's
// hour or UTC day, and the dimensions g does not keep empty.
// spentAll is sp's SpentAllOn of day for advs, checked against its
// SpentOn of each of advs: it names none that advs does not.
func spentAll(t *testing.T, sp clicks.SpendReader, day clicks.BudgetDay, advs ...string) map[string]int64 {
	t.Helper()
	all, err := sp.SpentAllOn(t.Context(), day, advs)
	if err != nil {
		t.Fatalf("SpentAllOn: %v", err)
	}
	for adv := range all {
		if !slices.Contains(advs, adv) {
			t.Errorf("SpentAllOn of day %d for %v gives %s, not asked for", day, advs, adv)
		}
	}
	for _, adv := range advs {
		if one, err := sp.SpentOn(t.Context(), adv, day); err != nil || one != all[adv] {
			t.Errorf("SpentAllOn of day %d gives %s %d, SpentOn %d (%v)", day, adv, all[adv], one, err)
		}
	}
	return all
}

// sameSpend reports whether two spends by advertiser are the same, an
// advertiser left out the same as one that spent nothing.
func sameSpend(a, b map[string]int64) bool {
	for adv, n := range a {
		if b[adv] != n {
			return false
		}
	}
	for adv, n := range b {
		if a[adv] != n {
			return false
		}
	}
	return true
}

func grainKey(g clicks.Grain, r clicks.Rollup) clicks.Rollup {
	if g.Hourly() {
		r.Start = r.Start.Truncate(time.Hour)
	} else {
		r.Start = r.Start.Truncate(24 * time.Hour)
	}
	for d, f := range map[clicks.Dimension]*string{clicks.DimSiteID: &r.SiteID, clicks.DimAdID: &r.AdID,
		clicks.DimCriterion: &r.Criterion, clicks.DimYkTag: &r.YkTag, clicks.DimCountry: &r.Country, clicks.DimContext: &r.Context} {
		if !g.Keeps(d) {
			*f = ""
		}
	}
	return r
}
