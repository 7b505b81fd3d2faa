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
