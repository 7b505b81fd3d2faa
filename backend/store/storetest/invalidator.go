package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// InvalidatorParts are a clicks.Invalidator and the stores of the same
// backing it changes: the ledger that records the clicks, their log,
// rollups and spend, and the retainer that lets old days go.
type InvalidatorParts struct {
	Invalidator clicks.Invalidator
	Ledger      clicks.Ledger
	Log         clicks.Store
	Rollups     clicks.RollupReader
	Spend       clicks.SpendReader
	Retainer    clicks.Retainer
}

// Invalidator runs the contract of clicks.Invalidator against the stores
// fresh opens. fresh returns an Opener over a new, empty backing.
func Invalidator(t *testing.T, fresh func(t *testing.T) Opener[InvalidatorParts]) {
	t.Helper()
	day0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	const tokyo = "Asia/Tokyo"
	zone := func(adv string) string {
		if adv == "jp.example" {
			return tokyo
		}
		return ""
	}
	// Clicks on two sites of partner k over two days, each on its own
	// network; one of site s1's did not bill, and jp.example's budget
	// counts Tokyo's days.
	fill := func(t *testing.T, p InvalidatorParts) []clicks.Click {
		t.Helper()
		var out []clicks.Click
		for i := range 12 {
			at := day0.Add(time.Duration(i) * 4 * time.Hour)
			c := clicks.Click{ID: "inv" + strconv.Itoa(i), Time: at, AdID: "ad" + strconv.Itoa(i%3), AdType: "advertiser",
				Type: "search", APIKey: "k", SiteID: "s" + strconv.Itoa(1+i%2), Criterion: "c" + strconv.Itoa(i%4),
				IP: "192.0.2." + strconv.Itoa(i+1), UserAgent: "Mozilla/5.0", Country: "de",
				Advertiser: []string{"eu.example", "jp.example"}[i%4/2], BidMicros: int64(10_000 * (i + 1)),
				Currency: []string{"EUR", "JPY"}[i%4/2], Billable: false}
			if i == 4 {
				c.Reason = clicks.ReasonBot
			}
			u := clicks.Use{Zone: zone(c.Advertiser)}
			if err := p.Ledger.Record(within(t, 10*time.Second), &c, u); err != nil {
				t.Fatalf("Record: %v", err)
			}
			if c.Billable != (i != 4) {
				t.Fatalf("click %d: billable %v, reason %q", i, c.Billable, c.Reason)
			}
			out = append(out, c)
		}
		return out
	}
	all := func(t *testing.T, p InvalidatorParts) []clicks.Click {
		return scan(t, p.Log, time.Time{}, time.Time{})
	}
	spent := func(t *testing.T, p InvalidatorParts, adv string, at time.Time) int64 {
		t.Helper()
		n, err := p.Spend.SpentOn(t.Context(), adv, clicks.BudgetDayIn(at, clicks.Zone(zone(adv))))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	site1 := clicks.Invalidation{APIKey: "k", SiteID: "s1", From: day0, To: day0.AddDate(0, 0, 2), Note: "script navigates readers", Zone: zone}
	// What site s1's billable clicks credit.
	want := func(cs []clicks.Click) clicks.Credit {
		w := clicks.Credit{Micros: map[string]int64{}}
		for _, c := range cs {
			if c.SiteID == "s1" && c.Billable {
				w.Clicks++
				w.Micros[c.Currency] += c.BidMicros
			}
		}
		return w
	}
	sameCredit := func(t *testing.T, got, want clicks.Credit) {
		t.Helper()
		if got.Clicks != want.Clicks || !maps.Equal(got.Micros, want.Micros) {
			t.Fatalf("credit %+v, want %+v", got, want)
		}
	}

	t.Run("CreditsExactlyTheSelectedBilledClicks", func(t *testing.T) {
		o := fresh(t)
		p, closeFn := open(t, o)
		before := fill(t, p)
		spentBefore := map[string]int64{}
		for _, c := range before {
			spentBefore[c.Advertiser+"/"+c.Time.String()] = spent(t, p, c.Advertiser, c.Time)
		}
		got, err := p.Invalidator.Invalidate(within(t, 30*time.Second), site1)
		if err != nil {
			t.Fatalf("Invalidate: %v", err)
		}
		sameCredit(t, got, want(before))
		if got.Clicks != 5 {
			t.Fatalf("credited %d clicks, want site s1's 5 billable", got.Clicks)
		}
		closeFn()
		p, _ = open(t, o) // what a restart reads
		after := all(t, p)
		if len(after) != len(before) {
			t.Fatalf("%d clicks after, %d before", len(after), len(before))
		}
		// Each advertiser's spend of each day drops by its credited bids.
		credited := map[string]int64{}
		for i, c := range after {
			b := before[i]
			switch {
			case b.SiteID == "s1" && b.Billable:
				if c.Billable || c.Reason != clicks.ReasonInvalidated {
					t.Errorf("click %s of s1: billable %v reason %q, want %q", c.ID, c.Billable, c.Reason, clicks.ReasonInvalidated)
				}
				day := clicks.BudgetDayIn(c.Time, clicks.Zone(zone(c.Advertiser)))
				credited[c.Advertiser+"/"+strconv.FormatInt(int64(day), 10)] += c.BidMicros
			case c.Billable != b.Billable || c.Reason != b.Reason:
				t.Errorf("click %s (site %s): billable %v reason %q, was %v %q", c.ID, c.SiteID, c.Billable, c.Reason, b.Billable, b.Reason)
			}
			c.Billable, c.Reason = b.Billable, b.Reason
			checkClick(t, c, b)
		}
		for _, c := range before {
			day := clicks.BudgetDayIn(c.Time, clicks.Zone(zone(c.Advertiser)))
			if got, w := spent(t, p, c.Advertiser, c.Time), spentBefore[c.Advertiser+"/"+c.Time.String()]-credited[c.Advertiser+"/"+strconv.FormatInt(int64(day), 10)]; got != w {
				t.Errorf("%s spent %d on day %d, want %d", c.Advertiser, got, day, w)
			}
			// The day's spend read at once, as a gate reads it after a
			// credit, drops the same.
			if got, w := spentAll(t, p.Spend, day, c.Advertiser)[c.Advertiser], spentBefore[c.Advertiser+"/"+c.Time.String()]-credited[c.Advertiser+"/"+strconv.FormatInt(int64(day), 10)]; got != w {
				t.Errorf("SpentAllOn: %s spent %d on day %d, want %d", c.Advertiser, got, day, w)
			}
		}
		rollupsAreTheLog(t, p.Log, p.Rollups, day0, day0.AddDate(0, 0, 3))

		// Again: nothing more is credited.
		got, err = p.Invalidator.Invalidate(within(t, 30*time.Second), site1)
		if err != nil {
			t.Fatalf("Invalidate again: %v", err)
		}
		sameCredit(t, got, clicks.Credit{})
		rollupsAreTheLog(t, p.Log, p.Rollups, day0, day0.AddDate(0, 0, 3))
	})

	// The click keeps the budget day it billed on: a credit after its
	// advertiser's zone changed takes its bid off that day, not off the
	// date the new zone gives it.
	t.Run("CreditsTheDayTheClickBilledOn", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		at := day0.Add(20 * time.Hour) // the 21st in Tokyo, the 20th in UTC
		c := clicks.Click{ID: "zoned", Time: at, AdID: "ad", AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s1",
			IP: "192.0.2.200", UserAgent: "Mozilla/5.0", Advertiser: "jp.example", BidMicros: 70_000, Currency: "JPY"}
		u := clicks.Use{Zone: tokyo}
		if err := p.Ledger.Record(within(t, 10*time.Second), &c, u); err != nil || !c.Billable {
			t.Fatalf("Record: %v, billable %v %q", err, c.Billable, c.Reason)
		}
		tokyoDay, utcDay := clicks.BudgetDayIn(at, clicks.Zone(tokyo)), clicks.BudgetDayIn(at, time.UTC)
		if c.BudgetDay != tokyoDay {
			t.Errorf("the click recorded keeps budget day %d, want Tokyo's %d", c.BudgetDay, tokyoDay)
		}
		if got := scan(t, p.Log, time.Time{}, time.Time{}); len(got) != 1 || got[0].BudgetDay != tokyoDay {
			t.Fatalf("the log holds %+v, want the click with budget day %d", got, tokyoDay)
		}
		inv := clicks.Invalidation{IDs: []string{"zoned"}, From: day0, To: day0.AddDate(0, 0, 2), Note: "zone changed since",
			Zone: func(string) string { return "" }}
		if got, err := p.Invalidator.Invalidate(within(t, 30*time.Second), inv); err != nil || got.Clicks != 1 {
			t.Fatalf("Invalidate: %+v, %v; want 1 click", got, err)
		}
		for _, d := range []struct {
			name string
			day  clicks.BudgetDay
		}{{"Tokyo's", tokyoDay}, {"UTC's", utcDay}} {
			if n, err := p.Spend.SpentOn(t.Context(), "jp.example", d.day); err != nil || n != 0 {
				t.Errorf("after the credit, jp.example spent %d (%v) on %s day %d, want 0", n, err, d.name, d.day)
			}
			if n := spentAll(t, p.Spend, d.day, "jp.example")["jp.example"]; n != 0 {
				t.Errorf("after the credit, SpentAllOn gives jp.example %d on %s day %d, want 0", n, d.name, d.day)
			}
		}
	})

	t.Run("DryRunChangesNothing", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		before := fill(t, p)
		dry := site1
		dry.DryRun = true
		got, err := p.Invalidator.Invalidate(within(t, 30*time.Second), dry)
		if err != nil {
			t.Fatalf("Invalidate: %v", err)
		}
		sameCredit(t, got, want(before))
		for i, c := range all(t, p) {
			checkClick(t, c, before[i])
		}
		rollupsAreTheLog(t, p.Log, p.Rollups, day0, day0.AddDate(0, 0, 3))
		if got, err := p.Invalidator.Invalidate(within(t, 30*time.Second), site1); err != nil || got.Clicks != 5 {
			t.Fatalf("Invalidate after the dry run: %+v, %v; want 5 clicks", got, err)
		}
	})

	t.Run("SelectsByIDAndAdWithinTheRange", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		before := fill(t, p)
		// inv0 and inv3 by id, inv6 out of the range.
		byID := clicks.Invalidation{IDs: []string{"inv0", "inv3", "inv6", "nosuch"}, From: day0, To: before[6].Time, Note: "farm", Zone: zone}
		got, err := p.Invalidator.Invalidate(within(t, 30*time.Second), byID)
		if err != nil {
			t.Fatal(err)
		}
		sameCredit(t, got, clicks.Credit{Clicks: 2, Micros: map[string]int64{"EUR": before[0].BidMicros, "JPY": before[3].BidMicros}})
		// ad1's clicks are 1, 4 (not billable), 7 and 10.
		byAd := clicks.Invalidation{AdID: "ad1", From: day0, To: day0.AddDate(0, 0, 2), Note: "farm", Zone: zone}
		got, err = p.Invalidator.Invalidate(within(t, 30*time.Second), byAd)
		if err != nil {
			t.Fatal(err)
		}
		sameCredit(t, got, clicks.Credit{Clicks: 3, Micros: map[string]int64{"EUR": before[1].BidMicros, "JPY": before[7].BidMicros + before[10].BidMicros}})
	})

	t.Run("TheWidestRangeTakesEveryClick", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		before := fill(t, p)
		// From 1900 to 2200, the bounds ParseInvalidation takes: times
		// before 1970 are negative nanoseconds.
		wide := site1
		wide.From, wide.To = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2201, 1, 1, 0, 0, 0, 0, time.UTC)
		dry := wide
		dry.DryRun = true
		got, err := p.Invalidator.Invalidate(within(t, 30*time.Second), dry)
		if err != nil {
			t.Fatalf("Invalidate, dry run: %v", err)
		}
		sameCredit(t, got, want(before))
		if got, err = p.Invalidator.Invalidate(within(t, 30*time.Second), wide); err != nil {
			t.Fatalf("Invalidate: %v", err)
		}
		sameCredit(t, got, want(before))
		rollupsAreTheLog(t, p.Log, p.Rollups, day0, day0.AddDate(0, 0, 3))
	})

	t.Run("ManyBatchesTwiceAtOnceCreditOnce", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		const n = 1100 // more than a batch of either store
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					c := clicks.Click{Time: day0.Add(time.Duration(i) * time.Minute), AdID: "ad", AdType: "advertiser", Type: "search",
						APIKey: "k", SiteID: "s1", IP: "2001:db8:0:" + strconv.FormatInt(int64(i), 16) + "::1", UserAgent: "Mozilla/5.0",
						Advertiser: "eu.example", BidMicros: 1000, Currency: "EUR"}
					if err := p.Ledger.Record(within(t, time.Minute), &c, clicks.Use{}); err != nil || !c.Billable {
						errs <- fmt.Errorf("click %d: %v, billable %v %q", i, err, c.Billable, c.Reason)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		inv := clicks.Invalidation{AdID: "ad", From: day0, To: day0.AddDate(0, 0, 2), Note: "farm", Zone: zone}
		credits := make(chan clicks.Credit, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := p.Invalidator.Invalidate(within(t, time.Minute), inv)
				if err != nil {
					t.Error(err)
				}
				credits <- got
			}()
		}
		wg.Wait()
		close(credits)
		var total clicks.Credit
		for c := range credits {
			total.Clicks += c.Clicks
			total.Micros = map[string]int64{"EUR": total.Micros["EUR"] + c.Micros["EUR"]}
		}
		sameCredit(t, total, clicks.Credit{Clicks: n, Micros: map[string]int64{"EUR": n * 1000}})
		for _, c := range all(t, p) {
			if c.Billable || c.Reason != clicks.ReasonInvalidated {
				t.Fatalf("click at %v: billable %v %q", c.Time, c.Billable, c.Reason)
			}
		}
		rollupsAreTheLog(t, p.Log, p.Rollups, day0, day0.AddDate(0, 0, 3))
		if got := spent(t, p, "eu.example", day0); got != 0 {
			t.Errorf("eu.example spent %d on day 0 after the credit, want 0", got)
		}
	})

	t.Run("RefusesWithoutSelectorOrReason", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		before := fill(t, p)
		for _, c := range []struct {
			inv   clicks.Invalidation
			param string
		}{
			{clicks.Invalidation{From: day0, To: day0.AddDate(0, 0, 2), Note: "all"}, "site_id"},
			{clicks.Invalidation{SiteID: "s1", From: day0, To: day0.AddDate(0, 0, 2), Note: "x"}, "api_key"},
			{clicks.Invalidation{APIKey: "k", From: day0, To: day0.AddDate(0, 0, 2)}, "reason"},
			{clicks.Invalidation{APIKey: "k", From: day0, To: day0.AddDate(0, 0, 2), Note: strings.Repeat("x", 201)}, "reason"},
			{clicks.Invalidation{APIKey: "k", To: day0.AddDate(0, 0, 2), Note: "x"}, "from"},
		} {
			_, err := p.Invalidator.Invalidate(within(t, 10*time.Second), c.inv)
			var ie *clicks.InvalidationError
			if !errors.As(err, &ie) || ie.Param != c.param {
				t.Errorf("%+v: %v, want an InvalidationError of %s", c.inv, err, c.param)
			}
		}
		for i, c := range all(t, p) {
			checkClick(t, c, before[i])
		}
	})

	t.Run("RefusesARangeRetentionRemoved", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		fill(t, p)
		if _, err := p.Retainer.DeleteDay(within(t, 10*time.Second), clicks.ClickLog, day0); err != nil {
			t.Fatal(err)
		}
		_, err := p.Invalidator.Invalidate(within(t, 10*time.Second), site1)
		var ie *clicks.InvalidationError
		if !errors.As(err, &ie) || ie.Param != "from" || !strings.Contains(ie.Message, "2026-11-21") {
			t.Fatalf("Invalidate from a removed day: %v, want an InvalidationError of from naming 2026-11-21", err)
		}
		inv := site1
		inv.From = day0.AddDate(0, 0, 1)
		if got, err := p.Invalidator.Invalidate(within(t, 10*time.Second), inv); err != nil || got.Clicks != 3 {
			t.Fatalf("Invalidate from the oldest day held: %+v, %v; want 3 clicks", got, err)
		}
	})
}

// rollupsAreTheLog checks that each grain's rollups of clicks in [from, to)
// are what the click log's clicks add up to.
func rollupsAreTheLog(t *testing.T, log clicks.Store, rollups clicks.RollupReader, from, to time.Time) {
	t.Helper()
	cs := scan(t, log, from, to)
	for _, g := range []clicks.Grain{clicks.Hour, clicks.Day, clicks.DaySite, clicks.DayAd} {
		key := func(r clicks.Rollup) clicks.Rollup { return grainKey(g, r) }
		want := map[clicks.Rollup]clicks.Measures{}
		for _, c := range cs {
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
		got := map[clicks.Rollup]clicks.Measures{}
		if err := rollups.ScanRollups(t.Context(), g, from, to, func(r *clicks.Rollup) error {
			k := *r
			k.Measures = clicks.Measures{}
			k.Start = k.Start.UTC()
			m := got[k]
			m.Add(&r.Measures)
			got[k] = m
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
	}
}
