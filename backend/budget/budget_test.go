package budget

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

var day0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func TestPace(t *testing.T) {
	const b = 24_000_000 // an hour's budget is 1,000,000
	for _, tt := range []struct {
		at    time.Duration
		spent int64
		want  float64
	}{
		{0, 0, 1},
		{0, 500_000, 0.5},
		{0, 1_000_000, 0},
		{6 * time.Hour, 6_000_000, 1},    // on the line
		{6 * time.Hour, 3_000_000, 1},    // behind it
		{6 * time.Hour, 6_250_000, 0.75}, // a quarter hour ahead
		{6 * time.Hour, 7_000_000, 0},    // an hour ahead
		{23*time.Hour + 30*time.Minute, 23_500_000, 1},
	} {
		if got := Pace(b, tt.spent, day0, day0.Add(24*time.Hour), day0.Add(tt.at)); got != tt.want {
			t.Errorf("Pace at %v having spent %d: %v, want %v", tt.at, tt.spent, got, tt.want)
		}
	}
	end := day0.Add(24 * time.Hour)
	if Pace(b, 2_000_000, day0, end, day0.Add(time.Hour)) >= Pace(b, 2_000_000, day0, end, day0.Add(12*time.Hour)) {
		t.Error("the same spend is not paced harder early in the day")
	}
}

// spends is a Spender over a map, keyed by advertiser and budget day.
type spends struct {
	mu  sync.Mutex
	m   map[string]int64
	err error
	// hung, set, has SpentOn wait for its context's end, as a store that
	// takes the query and never answers.
	hung bool
}

// key is the advertiser's spend of at's UTC day.
func key(adv string, at time.Time) string { return keyOf(adv, clicks.BudgetDayIn(at, time.UTC)) }

func keyOf(adv string, day clicks.BudgetDay) string {
	return adv + "@" + strconv.FormatInt(int64(day), 10)
}

func (s *spends) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	s.mu.Lock()
	hung := s.hung
	s.mu.Unlock()
	if hung {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[keyOf(adv, day)], s.err
}

func (s *spends) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	s.mu.Lock()
	hung := s.hung
	s.mu.Unlock()
	if hung {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	all := map[string]int64{}
	for _, adv := range advertisers {
		if n, ok := s.m[keyOf(adv, day)]; ok {
			all[adv] = n
		}
	}
	return all, nil
}

// addOn adds n to the advertiser's spend of day.
func (s *spends) addOn(adv string, day clicks.BudgetDay, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[keyOf(adv, day)] += n
}

func (s *spends) add(adv string, at time.Time, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key(adv, at)] += n
}

func testIndex(t *testing.T) *match.Index {
	t.Helper()
	ix, err := match.Build([]match.Ad{
		{ID: "a.example", Kind: match.KindAdvertiser, Title: "A", Keywords: []string{"x"}, Advertiser: "a.example", Landing: "https://a.example/"},
		{ID: "b.example", Kind: match.KindAdvertiser, Title: "B", Keywords: []string{"x"}, Advertiser: "b.example", Landing: "https://b.example/"},
		{ID: "c.example", Kind: match.KindAdvertiser, Title: "C", Keywords: []string{"x"}, Advertiser: "c.example", Landing: "https://c.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// The gate reads the day's spend when it starts and at midnight, reads it
// again after a click that changes it, and excludes what is spent.
func TestGate(t *testing.T) {
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	sp := &spends{m: map[string]int64{key("a.example", now): 5}}
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	budgets := map[string]accounts.Budget{
		"a.example": {DailyMicros: 5, Pacing: accounts.ASAP},
		"b.example": {DailyMicros: 10, Pacing: accounts.ASAP},
		"z.example": {DailyMicros: 10, Pacing: accounts.ASAP}, // not in the catalog
	}
	g, err := New(context.Background(), Options{Budgets: budgets, Spent: sp, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(ix); !slices.Equal(got, []uint32{groups["a.example"]}) {
		t.Fatalf("spent at start: Exclude %v, want a.example's", got)
	}
	// A click the ledger billed: b.example reaches its budget.
	sp.add("b.example", now, 10)
	if err := g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "b.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	ex, paced := g.Page(ix)
	if want := []uint32{groups["a.example"], groups["b.example"]}; !slices.Equal(ex, want) || paced != nil {
		t.Errorf("Page %v %v, want %v", ex, paced, want)
	}
	// An unbilled click reads nothing.
	sp.err = errors.New("store closed")
	if err := g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "c.example", Reason: clicks.ReasonRepeat}); err != nil {
		t.Errorf("unbilled click: %v", err)
	}
	// The next day cannot be read: it starts with nothing spent, and the
	// next billed click reads its advertiser's spend.
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	if got := g.Exclude(ix); got != nil {
		t.Errorf("the next day unread: Exclude %v, want none", got)
	}
	sp.err = nil
	sp.add("b.example", now, 10)
	if err := g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "b.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(ix); !slices.Equal(got, []uint32{groups["b.example"]}) {
		t.Errorf("the next day, b.example spent: Exclude %v, want b.example's", got)
	}
	var none *Gate
	if none.Exclude(ix) != nil || none.Clicked(context.Background(), &clicks.Click{Billable: true}) != nil {
		t.Error("a nil Gate excludes")
	}
}

// An even advertiser that is ahead of its pace is left out of answers as
// often as Pace says, by the gate's draw, and pages get the share.
func TestGatePaced(t *testing.T) {
	ix := testIndex(t)
	now := day0.Add(6 * time.Hour)
	sp := &spends{m: map[string]int64{key("c.example", now): 6_250_000}}
	draws := []float64{0.1, 0.8, 0.74, 0.75}
	g, err := New(context.Background(), Options{
		Budgets: map[string]accounts.Budget{"c.example": {DailyMicros: 24_000_000, Pacing: accounts.Even}},
		Spent:   sp, Now: func() time.Time { return now },
		Rand: func() float64 { d := draws[0]; draws = draws[1:]; return d },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ix.AdvertiserGroups()["c.example"]
	var got []bool
	for range 4 {
		got = append(got, g.Exclude(ix) == nil)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(got, want) {
		t.Errorf("shown %v with p 0.75, want %v", got, want)
	}
	if ex, paced := g.Page(ix); ex != nil || !slices.Equal(paced, []Paced{{Group: c, Show: 0.75}}) {
		t.Errorf("Page %v %v", ex, paced)
	}
}

// A gate built from a spend read a while ago takes, from the gate it
// replaces, what that one learnt since: per advertiser, the larger spend
// of the same UTC day.
func TestGateCarry(t *testing.T) {
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	now := day0.Add(10 * time.Hour)
	clock := func() time.Time { return now }
	sp := &spends{m: map[string]int64{}}
	budgets := map[string]accounts.Budget{
		"a.example": {DailyMicros: 20, Pacing: accounts.ASAP},
		"b.example": {DailyMicros: 10, Pacing: accounts.ASAP},
	}
	stale, err := New(context.Background(), Options{Budgets: budgets, Spent: sp, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	old, err := New(context.Background(), Options{Budgets: budgets, Spent: sp, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	// b.example spends its budget after stale read the spend.
	sp.add("b.example", now, 10)
	if err := old.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "b.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	sp.add("a.example", now, 3)
	if got := stale.Exclude(ix); got != nil {
		t.Fatalf("the stale gate: Exclude %v, want none", got)
	}
	// a.example: the new gate knows more than the old one.
	if err := stale.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: "a.example", Billable: true, BidMicros: 3}); err != nil {
		t.Fatal(err)
	}
	stale.Carry(old)
	if got := stale.Exclude(ix); !slices.Equal(got, []uint32{groups["b.example"]}) {
		t.Errorf("carried: Exclude %v, want b.example's", got)
	}
	if a, b := stale.Spent("a.example"), stale.Spent("b.example"); a != 3 || b != 10 {
		t.Errorf("carried: spent a %d, b %d; want 3 and 10", a, b)
	}

	// Another day's spend is not carried.
	tomorrow := now.Add(24 * time.Hour)
	next, err := New(context.Background(), Options{Budgets: budgets, Spent: sp, Now: func() time.Time { return tomorrow }})
	if err != nil {
		t.Fatal(err)
	}
	next.Carry(old)
	if got := next.Spent("b.example"); got != 0 {
		t.Errorf("yesterday's spend carried: %d", got)
	}
	var none *Gate
	none.Carry(old)
	stale.Carry(nil)
}

// A store that hangs at midnight (takes the query, never answers) holds
// no answer past rollTimeout: the new day starts with nothing spent, so
// the budget spent the day before no longer keeps its ads out.
func TestGateRollsOverPastAHungStore(t *testing.T) {
	ix := testIndex(t)
	now := day0.Add(23 * time.Hour)
	sp := &spends{m: map[string]int64{key("a.example", now): 5}}
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g, err := New(context.Background(), Options{Budgets: map[string]accounts.Budget{"a.example": {DailyMicros: 5, Pacing: accounts.ASAP}}, Spent: sp, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Exclude(ix); len(got) != 1 {
		t.Fatalf("spent before midnight: Exclude %v, want a.example's group", got)
	}
	sp.mu.Lock()
	sp.hung = true
	sp.mu.Unlock()
	mu.Lock()
	now = day0.Add(24*time.Hour + time.Minute)
	mu.Unlock()
	done := make(chan []uint32, 1)
	go func() { done <- g.Exclude(ix) }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Errorf("after midnight, the store hung: Exclude %v, want none (a new day)", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("after midnight, an answer still waits on the hung store")
	}
}

// asap is a daily budget of micros, spent as soon as may be, of each of
// advertisers.
func asap(micros int64, advertisers ...string) map[string]accounts.Budget {
	b := make(map[string]accounts.Budget, len(advertisers))
	for _, adv := range advertisers {
		b[adv] = accounts.Budget{DailyMicros: micros, Pacing: accounts.ASAP}
	}
	return b
}

// newGate is the gate New makes of o, failing t if it cannot.
func newGate(t *testing.T, o Options) *Gate {
	t.Helper()
	g, err := New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
