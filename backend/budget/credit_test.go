package budget

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// A credit that takes an advertiser's spend below its budget shows its
// ads again once the gate reads the spend again, takes down its flag, and
// the click that spends the budget again stops it and raises the flag
// again.
func TestGateRereadAfterACredit(t *testing.T) {
	c := flaggedGate(t, false, "a.example", "b.example")
	g, sp, f, ix, groups, now := c.g, c.sp, c.f, c.ix, c.groups, c.at
	click := func(adv string) {
		t.Helper()
		sp.add(adv, now, 5)
		if err := g.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: adv, Billable: true, BidMicros: 5}); err != nil {
			t.Fatal(err)
		}
	}
	click("a.example")
	click("a.example")
	click("b.example")
	click("b.example")
	if got, want := g.Exclude(ix), []uint32{groups["a.example"], groups["b.example"]}; !slices.Equal(got, want) {
		t.Fatalf("both spent: Exclude %v, want %v", got, want)
	}
	sp.add("a.example", now, -5) // the credit of a click
	if err := g.Reread(t.Context(), "a.example"); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["b.example"]}; !slices.Equal(got, want) {
		t.Errorf("after a.example's credit: Exclude %v, want %v", got, want)
	}
	if g.Spent("a.example") != 5 {
		t.Errorf("after the credit, a.example spent %d, want 5", g.Spent("a.example"))
	}
	if !slices.Equal(texts(f.raised), []string{"b.example@10"}) {
		t.Errorf("after a.example's credit, the flags %v, want b.example's alone", f.raised)
	}
	if err := g.Sync(t.Context()); err != nil || len(g.Exclude(ix)) != 1 {
		t.Errorf("a Sync after the credit stops %v again (%v)", g.Exclude(ix), err)
	}
	// A Reread of every advertiser keeps b.example, still spent.
	if err := g.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := g.Exclude(ix), []uint32{groups["b.example"]}; !slices.Equal(got, want) {
		t.Errorf("after a Reread of all: Exclude %v, want %v", got, want)
	}
	click("a.example")
	if got, want := g.Exclude(ix), []uint32{groups["b.example"], groups["a.example"]}; !slices.Equal(got, want) {
		t.Errorf("a.example spent again: Exclude %v, want %v", got, want)
	}
	if !slices.Equal(texts(f.raised), []string{"b.example@10", "a.example@10"}) {
		t.Errorf("a.example spent again: flags %v", f.raised)
	}
}

// hooked is a Spender whose next read calls hook, once, after reading.
type hooked struct {
	Spender
	mu   sync.Mutex
	hook func()
}

func (h *hooked) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	s, err := h.Spender.SpentOn(ctx, adv, day)
	h.mu.Lock()
	hook := h.hook
	h.hook = nil
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
	return s, err
}

// A click recorded while Reread reads the spend is not lost under the
// lower spend Reread read before it: the gate ends with the store's.
func TestGateRereadKeepsAClickMeanwhile(t *testing.T) {
	now := day0.Add(10 * time.Hour)
	sp := &spends{m: map[string]int64{}}
	h := &hooked{Spender: sp}
	g := newGate(t, Options{Budgets: asap(100, "a.example"),
		Spent: h, Now: func() time.Time { return now }})
	sp.add("a.example", now, 60)
	if err := g.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: "a.example", Billable: true, BidMicros: 60}); err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", now, -50) // the credit: 10 left
	clicked := make(chan error, 1)
	h.hook = func() {
		// Reread has read 10; a click of 5 lands and is counted now.
		sp.add("a.example", now, 5)
		go func() {
			clicked <- g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "a.example", Billable: true, BidMicros: 5})
		}()
		select {
		case <-clicked:
			clicked <- nil
		case <-time.After(200 * time.Millisecond): // it waits for Reread
		}
	}
	if err := g.Reread(t.Context(), "a.example"); err != nil {
		t.Fatal(err)
	}
	if err := <-clicked; err != nil {
		t.Fatal(err)
	}
	if got := g.Spent("a.example"); got != 15 {
		t.Errorf("after the credit and a click during its read: spent %d, want 15", got)
	}
}

// A day whose spend could not be read at its midnight starts with
// nothing spent, and is read again in the background until the store
// answers: an advertiser that had spent its budget is stopped then, and
// what clicks counted meanwhile is neither lowered nor counted twice.
func TestGateReadsALateDayAgain(t *testing.T) {
	defer func(r time.Duration) { lateRetry = r }(lateRetry)
	lateRetry = 10 * time.Millisecond
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	var mu sync.Mutex
	now := day0.Add(23 * time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := &spends{m: map[string]int64{}}
	g := newGate(t, Options{Budgets: asap(10, "a.example", "b.example"), Spent: sp, Now: clock})
	next := day0.Add(24*time.Hour + time.Minute)
	sp.mu.Lock()
	sp.err = context.DeadlineExceeded
	sp.m[key("a.example", next)] = 12 // spent on another replica since midnight
	sp.m[key("b.example", next)] = 4
	sp.mu.Unlock()
	mu.Lock()
	now = next
	mu.Unlock()
	if got := g.Exclude(ix); len(got) != 0 {
		t.Fatalf("the new day unread: Exclude %v, want none", got)
	}
	// A click of b.example counts while the store still fails.
	sp.add("b.example", next, 3)
	sp.mu.Lock()
	sp.err = nil
	sp.mu.Unlock()
	if err := g.Clicked(t.Context(), &clicks.Click{Time: next, Advertiser: "b.example", Billable: true, BidMicros: 3}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); !slices.Equal(g.Exclude(ix), []uint32{groups["a.example"]}) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := g.Spent("a.example"); got != 12 {
		t.Errorf("a.example's late read: spent %d, want 12", got)
	}
	if got := g.Spent("b.example"); got != 7 {
		t.Errorf("b.example: spent %d, want 7, the store's", got)
	}
}

// Reread holds back only the clicks of the advertiser whose spend it
// reads: a click of another advertiser, counted while the store answers
// Reread, does not wait for it.
func TestGateRereadHoldsNoOtherAdvertisersClick(t *testing.T) {
	now := day0.Add(10 * time.Hour)
	sp := &spends{m: map[string]int64{}}
	h := &hooked{Spender: sp}
	g := newGate(t, Options{Budgets: asap(100, "a.example", "b.example"), Spent: h, Now: func() time.Time { return now }})
	sp.add("b.example", now, 40)
	var counted bool
	h.hook = func() {
		// Reread is reading a.example's spend; b.example's click lands.
		done := make(chan error, 1)
		go func() {
			done <- g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "b.example", Billable: true, BidMicros: 40})
		}()
		select {
		case err := <-done:
			counted = err == nil
		case <-time.After(10 * time.Second):
		}
	}
	if err := g.Reread(t.Context(), "a.example"); err != nil {
		t.Fatal(err)
	}
	if !counted {
		t.Error("b.example's click waited for Reread's read of a.example's spend")
	}
	if got := g.Spent("b.example"); got != 40 {
		t.Errorf("b.example spent %d, want 40", got)
	}
}

// lateReading reports whether a goroutine runs g's lateRead.
func lateReading(g *Gate) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fmt.Sprintf("budget.(*Gate).lateRead(%p", g))
}

// The late read of a day ends with the day, even on a gate no request
// reads any more (a reload replaced it, or the server closed) while the
// store still does not answer.
func TestGateLateReadEndsWithItsDay(t *testing.T) {
	defer func(r, m time.Duration) { lateRetry, lateRetryMax = r, m }(lateRetry, lateRetryMax)
	lateRetry, lateRetryMax = time.Millisecond, 5*time.Millisecond
	var mu sync.Mutex
	now := day0.Add(23 * time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := &spends{m: map[string]int64{}}
	g := newGate(t, Options{Budgets: asap(10, "a.example"),
		Spent: sp, Now: clock})
	sp.mu.Lock()
	sp.err = context.DeadlineExceeded
	sp.mu.Unlock()
	mu.Lock()
	now = day0.Add(24*time.Hour + time.Minute)
	mu.Unlock()
	if g.Spent("a.example") != 0 {
		t.Fatal("the day unread at its midnight holds a spend")
	}
	for end := time.Now().Add(time.Minute); !lateReading(g); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the day unread at its midnight is not read again")
		}
	}
	mu.Lock()
	now = day0.Add(48*time.Hour + time.Minute) // that day is over; nothing asks for the next
	mu.Unlock()
	for end := time.Now().Add(time.Minute); lateReading(g); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the late read of a day over still runs")
		}
	}
}

// A credit takes down a flag another replica raised just before it, which
// this gate had not read yet: a Sync after this gate's Reread does not
// stop the advertiser again with it for the rest of the day, whichever
// replica reads the credit first.
func TestGateRereadClearsAFlagNotSyncedYet(t *testing.T) {
	c := flaggedGate(t, true, "a.example")
	a, b := c.g, c.another(t, nil)
	sp, f, ix, now := c.sp, c.f, c.ix, c.at
	sp.add("a.example", now, 10)
	if err := a.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: "a.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	if len(f.raised) != 1 || len(b.Exclude(ix)) != 0 {
		t.Fatalf("the click on A raised %v; B, not synced, leaves out %v", f.raised, b.Exclude(ix))
	}
	sp.add("a.example", now, -10) // the credit
	if err := b.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(ix); len(got) != 0 || b.Spent("a.example") != 0 {
		t.Errorf("after the credit, B leaves out %v, spent %d, want none, 0", got, b.Spent("a.example"))
	}
	if got := a.Exclude(ix); len(got) != 0 || len(f.raised) != 0 {
		t.Errorf("after the credit, A leaves out %v, flags %v, want none", got, f.raised)
	}
}

// A Reread that could not read the flags (Redis did not answer) says so,
// so that the server runs it again: the one after Redis answers takes
// down a flag raised before the credit, which the next Sync would
// otherwise stop the advertiser with for the rest of the day.
func TestGateRereadWithoutTheFlagsIsRunAgain(t *testing.T) {
	c := flaggedGate(t, true, "a.example")
	g, sp, f, ix, now := c.g, c.sp, c.f, c.ix, c.at
	sp.add("a.example", now, 10)
	f.raised = []string{"a.example@10"} // another replica's click, not synced here yet
	f.readErr = errors.New("redis does not answer")
	sp.add("a.example", now, -10) // the credit
	done := g.Reread(t.Context()) == nil
	f.readErr = nil
	// The server's next tick: Reread again unless it was done, then Sync.
	if !done {
		if err := g.Reread(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(ix); len(got) != 0 || len(f.raised) != 0 {
		t.Errorf("after the credit and Redis back, Exclude %v, flags %v; want none", got, f.raised)
	}
}

// A Reread whose read of the day's spend fails says so and keeps what the
// gate holds; the next, once the store answers, shows the credited
// advertiser again.
func TestGateRereadWithoutTheDaysSpendIsRunAgain(t *testing.T) {
	now := day0.Add(10 * time.Hour)
	sp := &spends{m: map[string]int64{}}
	g := newGate(t, Options{Budgets: asap(10, "a.example"),
		Spent: sp, Now: func() time.Time { return now }})
	sp.add("a.example", now, 10)
	if err := g.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: "a.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", now, -10) // the credit
	sp.mu.Lock()
	sp.err = errors.New("the store does not answer")
	sp.mu.Unlock()
	if err := g.Reread(t.Context()); err == nil || g.Spent("a.example") != 10 {
		t.Fatalf("a Reread without the store: %v, spent %d; want an error, 10 kept", err, g.Spent("a.example"))
	}
	sp.mu.Lock()
	sp.err = nil
	sp.mu.Unlock()
	if err := g.Reread(t.Context()); err != nil || g.Spent("a.example") != 0 {
		t.Errorf("the Reread after: %v, spent %d; want 0", err, g.Spent("a.example"))
	}
}

// A click whose read of the spend came before a credit, and whose store
// comes after a Reread of every advertiser read the day's spend, does not
// keep the advertiser out: Reread waits for it, and reads the spend again.
// Here the gate holds little of the day's spend (other replicas' clicks),
// so the day's read alone would find no credit to read again.
func TestGateRereadWaitsForAClickReadBeforeTheCredit(t *testing.T) {
	ix := testIndex(t)
	now := day0.Add(10 * time.Hour)
	sp := &spends{m: map[string]int64{}}
	h := &hooked{Spender: sp}
	g := newGate(t, Options{Budgets: asap(100, "a.example"),
		Spent: h, Now: func() time.Time { return now }})
	sp.add("a.example", now, 60) // other replicas' clicks
	sp.add("a.example", now, 40) // this one's, which spends the budget
	reread := make(chan error, 1)
	h.hook = func() {
		// The click has read 100; the credit of 30 commits, and a
		// Reread reads the day's spend before the click stores its read.
		sp.add("a.example", now, -30)
		go func() { reread <- g.Reread(context.Background()) }()
		select {
		case err := <-reread:
			reread <- err
		case <-time.After(200 * time.Millisecond): // it waits for the click
		}
	}
	if err := g.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: "a.example", Billable: true, BidMicros: 40}); err != nil {
		t.Fatal(err)
	}
	if err := <-reread; err != nil {
		t.Fatal(err)
	}
	if got, ex := g.Spent("a.example"), g.Exclude(ix); got != 70 || len(ex) != 0 {
		t.Errorf("after the credit: spent %d, Exclude %v; want 70, none", got, ex)
	}
}
