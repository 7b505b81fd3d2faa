package budget

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
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

// checkedGate is a gate of a.example and b.example, budgets of 10, over
// a shared store sp and flags f, at now.
func checkedGate(t *testing.T, sp *counted, f Flags, now time.Time) *Gate {
	t.Helper()
	g, err := New(t.Context(), Options{Budgets: map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP},
		"b.example": {DailyMicros: 10, Pacing: accounts.ASAP},
	}, Spent: sp, Flags: f, Shared: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// With a shared store, a flag of an advertiser the store holds under its
// budget (raised from a spend read before a credit) stops nothing, and
// the store is read once for it, not at each Sync; taken down and raised
// again once the budget is spent, it is read again and stops the
// advertiser. A flag of one whose spend the store holds at its budget
// stops it at once, and one the gate's own spend already stopped reads
// nothing.
func TestSyncChecksAFlagAgainstTheStore(t *testing.T) {
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	sp := &counted{spends: &spends{m: map[string]int64{}}}
	f := &flags{}
	g := checkedGate(t, sp, f, now)
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
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	sp := &counted{spends: &spends{m: map[string]int64{}}}
	f := &flags{}
	g := checkedGate(t, sp, f, now)
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
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	sp := &counted{spends: &spends{m: map[string]int64{}}}
	f := &flags{raised: []string{"a.example@10"}}
	g, err := New(t.Context(), Options{Budgets: map[string]accounts.Budget{"a.example": {DailyMicros: 10, Pacing: accounts.ASAP}},
		Spent: sp, Flags: f, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
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
	budgets := map[string]accounts.Budget{}
	const n = 8
	for k := range n {
		id := string(rune('a'+k)) + ".example"
		budgets[id] = accounts.Budget{DailyMicros: 10, Pacing: accounts.ASAP}
	}
	g, err := New(t.Context(), Options{Budgets: budgets, Spent: sp, Flags: f, Shared: true, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
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
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	var now atomic.Pointer[time.Time]
	at := day0.Add(10 * time.Hour)
	now.Store(&at)
	sp := &counted{spends: &spends{m: map[string]int64{}}}
	f := &flags{}
	g, err := New(t.Context(), Options{Budgets: map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP},
	}, Spent: sp, Flags: f, Shared: true, Now: func() time.Time { return *now.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", at, 4)
	f.raised = append(f.raised, "a.example@10") // stale: the store holds 4
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(ix); len(got) != 0 {
		t.Fatalf("a stale flag: Exclude %v, want none", got)
	}
	sp.add("a.example", at, 6) // another replica spends the budget; the flag stays as it was
	later := at.Add(recheckStale / 2)
	now.Store(&later)
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(ix); len(got) != 0 {
		t.Errorf("before recheckStale: Exclude %v, want none (the flag taken as stale, unread)", got)
	}
	later = at.Add(recheckStale + time.Second)
	now.Store(&later)
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["a.example"]}; !slices.Equal(got, want) {
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
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	var now atomic.Pointer[time.Time]
	at := day0.Add(10 * time.Hour)
	now.Store(&at)
	sp := &counted{spends: &spends{m: map[string]int64{}}}
	f := &flags{}
	g, err := New(t.Context(), Options{Budgets: map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP},
	}, Spent: sp, Flags: f, Shared: true, Now: func() time.Time { return *now.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", at, 4)
	f.raised = append(f.raised, "a.example@10") // stale: the store holds 4
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	sp.mu.Lock()
	sp.err = errors.New("down")
	sp.mu.Unlock()
	later := at.Add(recheckStale + time.Second)
	now.Store(&later)
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
	sp.add("a.example", at, 6) // other replicas spend the budget
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["a.example"]}; !slices.Equal(got, want) {
		t.Errorf("the store answering, the budget spent: Exclude %v, want %v", got, want)
	}
}
