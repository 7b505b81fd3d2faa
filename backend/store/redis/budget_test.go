package redisstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testredis"
	"github.com/adlink/adlink/match"
)

// spends is a budget.Spender of one replica's own.
type spends struct {
	mu sync.Mutex
	m  map[string]int64
}

func (s *spends) SpentOn(_ context.Context, adv string, _ clicks.BudgetDay) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[adv], nil
}

func (s *spends) SpentAllOn(_ context.Context, _ clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := map[string]int64{}
	for _, adv := range advertisers {
		if n, ok := s.m[adv]; ok {
			all[adv] = n
		}
	}
	return all, nil
}

func (s *spends) add(adv string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[adv] += n
}

// TestBudgetReachedOnOneReplicaStopsTheAdsOnAnother: a click on replica A
// that spends an advertiser's budget raises its flag in Redis, and
// replica B's next Sync leaves the advertiser out of its answers.
func TestBudgetReachedOnOneReplicaStopsTheAdsOnAnother(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ix, err := match.Build([]match.Ad{
		{ID: "a.example", Kind: match.KindAdvertiser, Title: "A", Keywords: []string{"x"}, Advertiser: "a.example", Landing: "https://a.example/"},
		{ID: "b.example", Kind: match.KindAdvertiser, Title: "B", Keywords: []string{"x"}, Advertiser: "b.example", Landing: "https://b.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	budgets := map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP},
		"b.example": {DailyMicros: 10, Pacing: accounts.Even},
	}
	gate := func() (*budget.Gate, *spends) {
		sp := &spends{m: map[string]int64{}}
		c := open(t, patient(srv.URL()), redisstore.Options{Now: clock})
		g, err := budget.New(t.Context(), budget.Options{Budgets: budgets, Spent: sp, Now: clock, Flags: c.BudgetFlags()})
		if err != nil {
			t.Fatal(err)
		}
		return g, sp
	}
	a, spA := gate()
	b, _ := gate()
	if err := b.Sync(t.Context()); err != nil || b.Exclude(ix) != nil {
		t.Fatalf("before any click, B excludes %v (%v)", b.Exclude(ix), err)
	}
	for _, adv := range []string{"a.example", "b.example"} {
		spA.add(adv, 10)
		if err := a.Clicked(t.Context(), &clicks.Click{Time: now, Advertiser: adv, Billable: true, BidMicros: 10}); err != nil {
			t.Fatal(err)
		}
	}
	groups := ix.AdvertiserGroups()
	want := []uint32{groups["a.example"], groups["b.example"]}
	if got := a.Exclude(ix); !slices.Equal(got, want) {
		t.Fatalf("A excludes %v, want %v", got, want)
	}
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(ix); !slices.Equal(got, want) {
		t.Errorf("after Sync, B excludes %v, want %v: both budgets, spent on A", got, want)
	}
	if s := b.Spent("a.example"); s != 10 {
		t.Errorf("B says a.example spent %d, want its budget of 10", s)
	}
}

// TestBudgetFlagLastsTheAdvertisersDay: replica A's click at 23:30 UTC
// spends the budget of an advertiser in Los Angeles (15:30 there); at
// 00:30 UTC, a new UTC day but the same one in Los Angeles, replica B's
// Sync still stops it, and after midnight in Los Angeles (08:00 UTC) it
// does not.
func TestBudgetFlagLastsTheAdvertisersDay(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	var mu sync.Mutex
	now := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(at time.Time) { mu.Lock(); defer mu.Unlock(); now = at }
	ix, err := match.Build([]match.Ad{
		{ID: "la.example", Kind: match.KindAdvertiser, Title: "LA", Keywords: []string{"x"}, Advertiser: "la.example", Landing: "https://la.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	budgets := map[string]accounts.Budget{"la.example": {DailyMicros: 10, Pacing: accounts.ASAP, Zone: "America/Los_Angeles"}}
	gate := func() (*budget.Gate, *spends) {
		sp := &spends{m: map[string]int64{}}
		c := open(t, patient(srv.URL()), redisstore.Options{Now: clock})
		g, err := budget.New(t.Context(), budget.Options{Budgets: budgets, Spent: sp, Now: clock, Flags: c.BudgetFlags()})
		if err != nil {
			t.Fatal(err)
		}
		return g, sp
	}
	a, spA := gate()
	b, _ := gate()
	at := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC)
	set(at)
	spA.add("la.example", 10)
	if err := a.Clicked(t.Context(), &clicks.Click{Time: at, Advertiser: "la.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	stopped := []uint32{ix.AdvertiserGroups()["la.example"]}
	for _, tt := range []struct {
		at   time.Time
		want []uint32
	}{
		{time.Date(2026, 11, 23, 0, 30, 0, 0, time.UTC), stopped},
		{time.Date(2026, 11, 23, 7, 59, 0, 0, time.UTC), stopped},
		{time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), nil},
	} {
		set(tt.at)
		if err := b.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := b.Exclude(ix); !slices.Equal(got, tt.want) {
			t.Errorf("B at %s UTC: excludes %v, want %v", tt.at.Format("Jan 2 15:04"), got, tt.want)
		}
	}
}

// Clear takes down every flag of one advertiser on one day, whatever
// budget it names, with a raise's nonce (a replica's id in it or not) or
// without, and no other
// advertiser's (one whose id begins with it, or holds "@"), nor the
// advertiser's flags of another day; on one Redis and on a cluster.
func TestBudgetFlagsClear(t *testing.T) {
	onOneAndCluster(t, func(t *testing.T, url string) {
		c := open(t, patient(url), redisstore.Options{Prefix: "clear:"})
		f := c.BudgetFlags()
		day := clicks.BudgetDay(20_500)
		for _, fl := range []string{"a.example@10", "a.example@20", "a.example", "a.example@10#k3x9", "a.example@10#1z",
			"a.example@10#0000000000r1d00000000000x9", "a.example@b@10", "a.example.org@10", "a.example.org@10#k3x9", "b.example@10", "a.example@10#K", "a.example@10#"} {
			if err := f.Raise(t.Context(), fl, day); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Raise(t.Context(), "a.example@10", day+1); err != nil {
			t.Fatal(err)
		}
		if err := f.Clear(t.Context(), "a.example", day); err != nil {
			t.Fatal(err)
		}
		got, err := f.Raised(t.Context(), day)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := []string{"a.example.org@10", "a.example.org@10#k3x9", "a.example@10#", "a.example@10#K", "a.example@b@10", "b.example@10"}; !slices.Equal(got, want) {
			t.Errorf("after Clear, the day's flags %v, want %v", got, want)
		}
		if got, _ := f.Raised(t.Context(), day+1); !slices.Equal(got, []string{"a.example@10"}) {
			t.Errorf("after Clear, the next day's flags %v, want a.example's", got)
		}
	})
}

// Remove takes down the flags it is given, a replica's own raises, and
// no other: not another raise of the same budget, nor another
// advertiser's, nor the same flag on another day; on one Redis and on a
// cluster.
func TestBudgetFlagsRemove(t *testing.T) {
	onOneAndCluster(t, func(t *testing.T, url string) {
		c := open(t, patient(url), redisstore.Options{Prefix: "remove:"})
		f := c.BudgetFlags()
		day := clicks.BudgetDay(20_500)
		mine, theirs := "a.example@10#0000000000r1a00000000000x9", "a.example@10#0000000000r1b00000000000x9"
		for _, fl := range []string{mine, theirs, "a.example@10", "b.example@10#0000000000r1a00000000000x9"} {
			if err := f.Raise(t.Context(), fl, day); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Raise(t.Context(), mine, day+1); err != nil {
			t.Fatal(err)
		}
		if err := f.Remove(t.Context(), []string{mine}, day); err != nil {
			t.Fatal(err)
		}
		got, err := f.Raised(t.Context(), day)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := []string{"a.example@10", theirs, "b.example@10#0000000000r1a00000000000x9"}; !slices.Equal(got, want) {
			t.Errorf("after Remove, the day's flags %v, want %v", got, want)
		}
		if got, _ := f.Raised(t.Context(), day+1); !slices.Equal(got, []string{mine}) {
			t.Errorf("after Remove, the next day's flags %v, want %v", got, []string{mine})
		}
	})
}

// onOneAndCluster runs f on one Redis and on a cluster, as subtests
// "one" and "cluster", with the server's URL.
func onOneAndCluster(t *testing.T, f func(t *testing.T, url string)) {
	t.Run("one", func(t *testing.T) { f(t, testredis.Start(t, testredis.Options{}).URL()) })
	t.Run("cluster", func(t *testing.T) { f(t, testredis.StartCluster(t, testredis.Options{}).URL()) })
}
