package budget

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
)

// flags are Flags in memory, with the errors a test sets.
type flags struct {
	raised   []string
	raiseErr error
	readErr  error
	tries    int // of Raise
}

var _ Flags = (*flags)(nil)

func (f *flags) Raise(_ context.Context, adv string, _ clicks.BudgetDay) error {
	f.tries++
	if f.raiseErr != nil {
		return f.raiseErr
	}
	f.raised = append(f.raised, adv)
	return nil
}

func (f *flags) Clear(_ context.Context, adv string, _ clicks.BudgetDay) error {
	f.raised = slices.DeleteFunc(f.raised, func(fl string) bool { id, _ := parseFlag(fl); return id == adv })
	return nil
}

func (f *flags) Remove(_ context.Context, down []string, _ clicks.BudgetDay) error {
	f.raised = slices.DeleteFunc(f.raised, func(fl string) bool { return slices.Contains(down, fl) })
	return nil
}

func (f *flags) Raised(context.Context, clicks.BudgetDay) ([]string, error) {
	return slices.Clone(f.raised), f.readErr
}

// texts are the texts of flags (flagOf), each raise's nonce left out.
func texts(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = flagOf(parseFlag(f))
	}
	return out
}

// A gate raises an advertiser's flag once, on the click that spends its
// budget, says when it could not, and Sync stops what other gates raised.
func TestGateFlags(t *testing.T) {
	c := flaggedGate(t, false, "a.example", "b.example")
	g, sp, f, ix, groups, now := c.g, c.sp, c.f, c.ix, c.groups, c.at
	click := func(adv string) error {
		sp.add(adv, now, 5)
		return g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: adv, Billable: true, BidMicros: 5})
	}
	for range 3 {
		if err := click("a.example"); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(texts(f.raised), []string{"a.example@10"}) {
		t.Errorf("raised %v, want a.example once, on the click that spent its budget", f.raised)
	}

	f.raiseErr = errors.New("down")
	click("b.example")
	if err := click("b.example"); err == nil {
		t.Error("a flag that could not be raised: no error")
	}
	if got := g.Exclude(ix); !slices.Equal(got, []uint32{groups["a.example"], groups["b.example"]}) {
		t.Errorf("Exclude %v: the gate's own stop must not wait for the flag", got)
	}

	// Another gate on the same flags, whose own clicks spent nothing.
	other := c.another(t, &spends{m: map[string]int64{}})
	f.readErr = errors.New("down")
	if err := other.Sync(context.Background()); err == nil || other.Exclude(ix) != nil {
		t.Errorf("Sync with the flags unreadable: %v, Exclude %v", err, other.Exclude(ix))
	}
	f.readErr = nil
	if err := other.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := other.Exclude(ix); !slices.Equal(got, []uint32{groups["a.example"]}) {
		t.Errorf("after Sync, Exclude %v, want a.example's", got)
	}
	var none *Gate
	if none.Sync(context.Background()) != nil {
		t.Error("a nil Gate's Sync failed")
	}
}

// A shipment of clicks that spends several budgets at once, while the
// flags cannot be raised, stops every advertiser here and tries one flag:
// each try waits out Redis's timeout while a credit waits for the locks.
func TestShipmentTriesOneFlagWhileFlagsFail(t *testing.T) {
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	advs := []string{"a.example", "b.example", "c.example"}
	budgets := map[string]accounts.Budget{}
	sp := &spends{m: map[string]int64{}}
	var shipped []*clicks.Click
	for _, adv := range advs {
		budgets[adv] = accounts.Budget{DailyMicros: 10, Pacing: accounts.ASAP}
		shipped = append(shipped, &clicks.Click{Time: now, Advertiser: adv, Billable: true, BidMicros: 10})
	}
	f := &flags{raiseErr: errors.New("down")}
	g := newGate(t, Options{Budgets: budgets, Spent: sp, Now: func() time.Time { return now }, Flags: f})
	for _, adv := range advs {
		sp.add(adv, now, 10) // what the shipment billed
	}
	if err := g.Clicked(context.Background(), shipped...); err == nil {
		t.Error("flags that could not be raised: no error")
	}
	if f.tries != 1 {
		t.Errorf("tried %d flags, want 1", f.tries)
	}
	want := []uint32{groups["a.example"], groups["b.example"], groups["c.example"]}
	slices.Sort(want)
	if got := g.Exclude(ix); !slices.Equal(got, want) {
		t.Errorf("Exclude %v, want %v: the gate's own stop must not wait for the flags", got, want)
	}
}

// A flag raised against a smaller budget than a gate's does not stop the
// advertiser there (a reload raised its budget); one raised against the
// same or a larger budget, or one that names no budget, does.
func TestGateFlagsCarryTheirBudget(t *testing.T) {
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	budgets := asap(20, "a.example", "b.example", "c.example")
	f := &flags{raised: []string{"a.example@10", "b.example@20", "c.example"}}
	g := newGate(t, Options{Budgets: budgets, Spent: &spends{m: map[string]int64{}},
		Now: func() time.Time { return now }, Flags: f})
	if err := g.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["b.example"], groups["c.example"]}; !slices.Equal(got, want) {
		t.Errorf("Exclude %v, want %v: b.example's and c.example's, not a.example's", got, want)
	}
}

// FuzzParseFlag: a flag read back from the shared store never panics,
// and one the gate raised, or an older replica raised without a nonce,
// reads back as its advertiser and budget; two raises are two flags.
func FuzzParseFlag(f *testing.F) {
	f.Add("a.example", int64(10))
	f.Add("x@y", int64(1))
	f.Add("x@1#a", int64(2))
	f.Fuzz(func(t *testing.T, id string, daily int64) {
		parseFlag(id)
		if daily <= 0 {
			return
		}
		if got, n := parseFlag(flagOf(id, daily)); got != id || n != daily {
			t.Errorf("parseFlag(flagOf(%q, %d)) = %q, %d", id, daily, got, n)
		}
		r := raiseOf(id, daily, "")
		if got, n := parseFlag(r); got != id || n != daily {
			t.Errorf("parseFlag(raiseOf(%q, %d)) = %q, %d (%q)", id, daily, got, n, r)
		}
		if r == raiseOf(id, daily, "") {
			t.Errorf("two raises of %q, %d are one flag, %q", id, daily, r)
		}
	})
}

// dayFlags are Flags in memory by day, whose reads of a day fail with
// the error a test sets for it.
type dayFlags struct {
	raised  map[clicks.BudgetDay][]string
	readErr map[clicks.BudgetDay]error
}

func (f *dayFlags) Raise(_ context.Context, flag string, day clicks.BudgetDay) error {
	f.raised[day] = append(f.raised[day], flag)
	return nil
}

func (f *dayFlags) Clear(context.Context, string, clicks.BudgetDay) error { return nil }

func (f *dayFlags) Remove(context.Context, []string, clicks.BudgetDay) error { return nil }

func (f *dayFlags) Raised(_ context.Context, day clicks.BudgetDay) ([]string, error) {
	return slices.Clone(f.raised[day]), f.readErr[day]
}

// Sync reads each day's flags when another day's read fails (on a Redis
// Cluster each day's set may live on a master of its own, one of them
// down): it stops the advertisers the days it read raised, and says that
// a read failed.
func TestSyncReadsTheDaysItCan(t *testing.T) {
	now := day0.Add(12 * time.Hour) // already the next day in Kiritimati
	clock := func() time.Time { return now }
	budgets := map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP},
		"b.example": {DailyMicros: 10, Pacing: accounts.ASAP, Zone: "Pacific/Kiritimati"},
	}
	kiritimati, err := time.LoadLocation("Pacific/Kiritimati")
	if err != nil {
		t.Fatal(err)
	}
	days := map[string]clicks.BudgetDay{
		"a.example": clicks.BudgetDayIn(now, time.UTC),
		"b.example": clicks.BudgetDayIn(now, kiritimati),
	}
	if days["a.example"] == days["b.example"] {
		t.Fatal("both advertisers' days are one")
	}
	for _, tc := range []struct{ failing, raised string }{{"a.example", "b.example"}, {"b.example", "a.example"}} {
		f := &dayFlags{
			raised:  map[clicks.BudgetDay][]string{days[tc.raised]: {tc.raised + "@10"}},
			readErr: map[clicks.BudgetDay]error{days[tc.failing]: errors.New("down")},
		}
		g := newGate(t, Options{Budgets: budgets, Spent: &spends{m: map[string]int64{}}, Now: clock, Flags: f})
		if err := g.Sync(context.Background()); err == nil {
			t.Errorf("%s's day could not be read: no error", tc.failing)
		}
		if got := g.Spent(tc.raised); got != 10 {
			t.Errorf("%s's day unread: %s spent %d, want its flag's 10", tc.failing, tc.raised, got)
		}
	}
}
