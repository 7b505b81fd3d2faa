package storetest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// LedgerParts are a clicks.Ledger and the click log it appends to.
type LedgerParts struct {
	Ledger clicks.Ledger
	Log    clicks.Store
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
}
