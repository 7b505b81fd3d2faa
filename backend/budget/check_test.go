package budget

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// counted is a Spender that counts its reads of one advertiser's spend.
type counted struct {
	*spends
	reads atomic.Int64
}

func (c *counted) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	c.reads.Add(1)
	return c.spends.SpentOn(ctx, adv, day)
}

// With a shared store, a flag of an advertiser the store holds under its
// budget (raised from a spend read before a credit) stops nothing, and
// the store is read once for it, not at each Sync; taken down and raised
// again once the budget is spent, it is read again and stops the
// advertiser. A flag of one whose spend the store holds at its budget
// stops it at once, and one the gate's own spend already stopped reads
// nothing.
func TestSyncChecksAFlagAgainstTheStore(t *testing.T) {
	c := flaggedGate(t, true, "a.example", "b.example")
	g, sp, f, ix, groups, now := c.g, c.sp, c.f, c.ix, c.groups, c.at
	sp.add("b.example", now, 10)
	if err := g.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: "b.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", now, 4)
	f.raised = append(f.raised, "a.example@10") // stale: the store holds 4
	sp.reads.Store(0)
	for range 3 {
		if err := g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := g.Exclude(ix), []uint32{groups["b.example"]}; !slices.Equal(got, want) {
		t.Errorf("a stale flag of a.example: Exclude %v, want %v", got, want)
	}
	if n := sp.reads.Load(); n != 1 {
		t.Errorf("3 Syncs read the store %d times, want once: for a.example's flag, none for b.example's own stop", n)
	}
	if got := g.Spent("a.example"); got != 4 {
		t.Errorf("a.example spent %d after the store's read, want 4", got)
	}

	f.Clear(t.Context(), "a.example", 0)
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", now, 6) // another replica's click spends the budget
	f.raised = append(f.raised, "a.example@10")
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["b.example"], groups["a.example"]}; !slices.Equal(got, want) {
		t.Errorf("a.example's flag raised again, its budget spent: Exclude %v, want %v", got, want)
	}
	if n := sp.reads.Load(); n != 2 {
		t.Errorf("the store read %d times, want twice: once more for the flag raised again", n)
	}
}

// While the shared store does not answer, a flag stops the advertiser as
// without one, and a Sync reads the store once whatever the flags; once
// the store answers, the advertiser it holds under its budget is shown
// again, its flag stale, and read no more; the one whose budget is
// spent stays stopped.
func TestSyncTrustsAFlagWhileTheStoreIsDown(t *testing.T) {
	c := flaggedGate(t, true, "a.example", "b.example")
	g, sp, f, ix, groups, now := c.g, c.sp, c.f, c.ix, c.groups, c.at
	sp.add("a.example", now, 4)
	sp.add("b.example", now, 10) // another replica's clicks
	sp.err = errors.New("down")
	f.raised = []string{"a.example@10", "b.example@10"}
	both := []uint32{groups["a.example"], groups["b.example"]}
	for range 2 {
		sp.reads.Store(0)
		if err := g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := g.Exclude(ix); !slices.Equal(got, both) {
			t.Errorf("the store down: Exclude %v, want %v", got, both)
		}
		if n := sp.reads.Load(); n != 1 {
			t.Errorf("a Sync read the store %d times while it is down, want once", n)
		}
	}

	sp.err = nil
	for range 2 {
		if err := g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, want := g.Exclude(ix), []uint32{groups["b.example"]}; !slices.Equal(got, want) {
			t.Errorf("the store answering: Exclude %v, want %v", got, want)
		}
	}
	if n := sp.reads.Load(); n != 3 {
		t.Errorf("the store read %d times since it answers, want 3: the failed one, then once for each advertiser", n)
	}
	if got := g.Spent("a.example"); got != 4 {
		t.Errorf("a.example spent %d, want the store's 4", got)
	}
}

// Without a shared store (Options.Shared unset: each replica's spend is
// its own), a flag stops the advertiser and reads no store, as before.
func TestSyncReadsNoStoreUnshared(t *testing.T) {
	c := flaggedGate(t, false, "a.example")
	g, sp, ix, groups := c.g, c.sp, c.ix, c.groups
	c.f.raised = []string{"a.example@10"}
	sp.reads.Store(0)
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["a.example"]}; !slices.Equal(got, want) || sp.reads.Load() != 0 {
		t.Errorf("unshared: Exclude %v, want %v; %d reads of the store, want none", got, want, sp.reads.Load())
	}
}

// slow is a Spender whose reads of an advertiser's spend each take delay,
// or end with their context.
type slow struct {
	*counted
	delay time.Duration
}

func (s *slow) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.counted.SpentOn(ctx, adv, day)
}

// A Sync whose flags each need a read of a slow shared store (each read
// answering, under checkTimeout) reads it for at most checkTimeout in all,
// not once for every flag one after another: the flags left are trusted,
// and stop their advertisers at once, each budget spent in the store.
func TestSyncReadsASlowStoreForOneCheckTimeout(t *testing.T) {
	now := day0.Add(10 * time.Hour)
	sp := &slow{counted: &counted{spends: &spends{m: map[string]int64{}}}, delay: checkTimeout * 2 / 5}
	f := &flags{}
	const n = 8
	var ids []string
	for k := range n {
		ids = append(ids, string(rune('a'+k))+".example")
	}
	budgets := asap(10, ids...)
	g := newGate(t, Options{Budgets: budgets, Spent: sp, Flags: f, Shared: true, Now: func() time.Time { return now }})
	for id := range budgets {
		sp.add(id, now, 10) // other replicas' clicks
		f.raised = append(f.raised, id+"@10")
	}
	sp.reads.Store(0)
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := sp.reads.Load(); r >= n {
		t.Errorf("a Sync of %d flags read the slow store %d times, one after another", n, r)
	}
	for id := range budgets {
		if got := g.Spent(id); got != 10 {
			t.Errorf("%s spent %d after the Sync, want its budget, 10", id, got)
		}
	}
}

// A flag found stale is read again once recheckStale has passed: its
// text names only the advertiser and its budget, so a stale flag left up
// all day would otherwise hide a real crossing of that budget later on.
func TestSyncReadsAStaleFlagAgainLater(t *testing.T) {
	s := staleFlag(t)
	g, groups := s.g, s.groups
	s.sp.add("a.example", s.at, 6) // another replica spends the budget; the flag stays as it was
	s.set(s.at.Add(recheckStale / 2))
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(s.ix); len(got) != 0 {
		t.Errorf("before recheckStale: Exclude %v, want none (the flag taken as stale, unread)", got)
	}
	s.set(s.at.Add(recheckStale + time.Second))
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(s.ix), []uint32{groups["a.example"]}; !slices.Equal(got, want) {
		t.Errorf("after recheckStale, the budget spent: Exclude %v, want %v", got, want)
	}
}

// A flag found stale that is due to be read again while the shared store
// does not answer stays stale: the read it missed would only have told
// whether the budget has since been spent, and trusting it would stop an
// advertiser the store last held under its budget for as long as the
// store is down. Once the store answers with the budget spent, it stops
// the advertiser.
func TestSyncKeepsAStaleFlagWhileTheStoreIsDown(t *testing.T) {
	s := staleFlag(t)
	g, sp, ix, groups := s.g, s.sp, s.ix, s.groups
	sp.mu.Lock()
	sp.err = errors.New("down")
	sp.mu.Unlock()
	s.set(s.at.Add(recheckStale + time.Second))
	for range 2 {
		sp.reads.Store(0)
		if err := g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := g.Exclude(ix); len(got) != 0 {
			t.Errorf("a stale flag due again, the store down: Exclude %v, want none", got)
		}
		if n := sp.reads.Load(); n != 1 {
			t.Errorf("a Sync read the store %d times while it is down, want once", n)
		}
	}
	sp.mu.Lock()
	sp.err = nil
	sp.mu.Unlock()
	sp.add("a.example", s.at, 6) // other replicas spend the budget
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["a.example"]}; !slices.Equal(got, want) {
		t.Errorf("the store answering, the budget spent: Exclude %v, want %v", got, want)
	}
}

// flagged is a gate of budgets of 10 a day, ASAP, whose spend sp reads
// and whose flags are f, with an index of the advertisers' ads, for the
// tests of the flags.
type flagged struct {
	g      *Gate
	o      Options // g's
	sp     *counted
	f      *flags
	ix     *match.Index
	groups map[string]uint32
	at     time.Time           // the gate's time until set moves it
	set    func(now time.Time) // moves the gate's clock
}

// flaggedGate is the flagged gate of advertisers' budgets, of a shared
// store or not (Options.Shared).
func flaggedGate(t *testing.T, shared bool, advertisers ...string) flagged {
	t.Helper()
	var now atomic.Pointer[time.Time]
	c := flagged{sp: &counted{spends: &spends{m: map[string]int64{}}}, f: &flags{}, ix: testIndex(t),
		at: day0.Add(10 * time.Hour), set: func(at time.Time) { now.Store(&at) }}
	c.groups = c.ix.AdvertiserGroups()
	c.set(c.at)
	c.o = Options{Budgets: asap(10, advertisers...), Spent: c.sp, Flags: c.f, Shared: shared,
		Now: func() time.Time { return *now.Load() }}
	c.g = newGate(t, c.o)
	return c
}

// another is a second gate of c's budgets, flags and clock, as another
// replica has: over spent, or c's store when nil.
func (c flagged) another(t *testing.T, spent Spender) *Gate {
	t.Helper()
	o := c.o
	if spent != nil {
		o.Spent = spent
	}
	return newGate(t, o)
}

// staleFlag is the shared flagged gate of a.example that found the flag
// of a.example stale at its first Sync: the store holds 4 of its 10.
func staleFlag(t *testing.T) flagged {
	t.Helper()
	c := flaggedGate(t, true, "a.example")
	c.sp.add("a.example", c.at, 4)
	c.f.raised = append(c.f.raised, "a.example@10")
	if err := c.g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.g.Exclude(c.ix); len(got) != 0 {
		t.Fatalf("a stale flag: Exclude %v, want none", got)
	}
	return c
}
