package redisstore_test

import (
	"context"
	"errors"
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

// shared is a budget.Spender every replica bills against (Postgres), whose
// reads by one replica fail while that replica's down is set.
type shared struct {
	*spends
	mu   sync.Mutex
	down bool
}

func (s *shared) failing() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("down")
	}
	return nil
}

func (s *shared) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	if err := s.failing(); err != nil {
		return 0, err
	}
	return s.spends.SpentOn(ctx, adv, day)
}

func (s *shared) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	if err := s.failing(); err != nil {
		return nil, err
	}
	return s.spends.SpentAllOn(ctx, day, advertisers)
}

// staleReplicas are replicas over one shared store and one Redis, with a
// budget of 10 a day for a.example: A raised its flag, a credit then took
// the spend back to 4 and A went before its own read took the flag down,
// and B's Sync found the flag stale. C crosses the budget for real later.
type staleReplicas struct {
	a, b, c  *budget.Gate
	sp       *spends
	bStore   *shared // B's reads of sp
	ix       *match.Index
	stopped  []uint32 // a.example's group
	now      time.Time
	set      func(time.Time)
	clickNow func(g *budget.Gate)
}

func newStaleReplicas(t *testing.T) *staleReplicas {
	t.Helper()
	srv := testredis.Start(t, testredis.Options{})
	var mu sync.Mutex
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ix, err := match.Build([]match.Ad{
		{ID: "a.example", Kind: match.KindAdvertiser, Title: "A", Keywords: []string{"x"}, Advertiser: "a.example", Landing: "https://a.example/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &staleReplicas{sp: &spends{m: map[string]int64{}}, ix: ix, now: now,
		stopped: []uint32{ix.AdvertiserGroups()["a.example"]},
		set:     func(at time.Time) { mu.Lock(); defer mu.Unlock(); now = at }}
	r.bStore = &shared{spends: r.sp}
	budgets := map[string]accounts.Budget{"a.example": {DailyMicros: 10, Pacing: accounts.ASAP}}
	gate := func(spent budget.Spender) *budget.Gate {
		c := open(t, patient(srv.URL()), redisstore.Options{Now: clock})
		g, err := budget.New(t.Context(), budget.Options{Budgets: budgets, Spent: spent, Flags: c.BudgetFlags(),
			Shared: true, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	r.a, r.b, r.c = gate(r.sp), gate(r.bStore), gate(r.sp)
	r.clickNow = func(g *budget.Gate) {
		t.Helper()
		if err := g.Clicked(t.Context(), &clicks.Click{Time: clock(), Advertiser: "a.example", Billable: true, BidMicros: 6}); err != nil {
			t.Fatal(err)
		}
	}
	r.sp.add("a.example", 10)
	r.clickNow(r.a)           // A raises the flag
	r.sp.add("a.example", -6) // a credit; A goes before reading it
	r.sync(t, r.b)
	if got := r.b.Exclude(ix); got != nil {
		t.Fatalf("B, the store at 4 of 10: excludes %v, want none (the flag stale)", got)
	}
	return r
}

func (r *staleReplicas) sync(t *testing.T, g *budget.Gate) {
	t.Helper()
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A budget crossed for real on C while a stale flag of the same budget is
// still up stops the advertiser on B at its next Sync: neither within
// recheckStale of B's check of the stale flag, nor, past it, while B's
// store does not answer.
func TestBudgetFlagRaisedAgainWhileAStaleOneIsUp(t *testing.T) {
	for _, tt := range []struct {
		name string
		down bool
	}{{"store up", false}, {"store down", true}} {
		t.Run(tt.name, func(t *testing.T) {
			r := newStaleReplicas(t)
			r.sp.add("a.example", 6)
			r.clickNow(r.c) // the budget spent for real
			if tt.down {
				r.bStore.mu.Lock()
				r.bStore.down = true
				r.bStore.mu.Unlock()
				r.set(r.now.Add(time.Minute)) // the stale flag due to be read again
			}
			r.sync(t, r.b)
			if got := r.b.Exclude(r.ix); !slices.Equal(got, r.stopped) {
				t.Errorf("C spent the budget: B excludes %v, want %v", got, r.stopped)
			}
		})
	}
}

// A stale flag taken down by a credit's read on C and raised again by a
// real crossing there, both between two of B's Syncs, stops the
// advertiser on B at the second.
func TestBudgetFlagTakenDownAndRaisedAgainBetweenSyncs(t *testing.T) {
	r := newStaleReplicas(t)
	if err := r.c.Reread(t.Context(), "a.example"); err != nil {
		t.Fatal(err)
	}
	r.sp.add("a.example", 6)
	r.clickNow(r.c)
	r.sync(t, r.b)
	if got := r.b.Exclude(r.ix); !slices.Equal(got, r.stopped) {
		t.Errorf("C spent the budget again: B excludes %v, want %v", got, r.stopped)
	}
}
