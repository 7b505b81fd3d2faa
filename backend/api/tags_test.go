package api

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
)

// TestTagGateAdmitsNoDayTheStoreForgot: the tags' store forgets the days
// before yesterday, so a click token shown then (an expired token's MAC
// still holds) would find its day empty and admit new yk_tags without
// end, a day's limit again after every forgetting. The gate admits no
// new tag for such a day.
func TestTagGateAdmitsNoDayTheStoreForgot(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "adlink.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store, err := clicks.NewTags(db)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 3
	g := newTagGate(store, limit)
	ctx := context.Background()
	now := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	site := clicks.TagSite("key", "site")

	// Today and yesterday each admit their limit, as the store counts them.
	for _, at := range []time.Time{now, now.Add(-24 * time.Hour)} {
		for i := range limit + 2 {
			ok, err := g.admit(ctx, site, fmt.Sprintf("%s-%d", at.Format(time.DateOnly), i), at, now)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (i < limit) {
				t.Errorf("%s, tag %d: admitted %v, want %v", at.Format(time.DateOnly), i, ok, i < limit)
			}
		}
	}
	// Days before yesterday, which the store has forgotten: no new tag,
	// however many are tried.
	for days := 2; days <= 30; days++ {
		at := now.Add(-time.Duration(days) * 24 * time.Hour)
		for i := range limit {
			if ok, err := g.admit(ctx, site, fmt.Sprintf("old-%d-%d", days, i), at, now); err != nil || ok {
				t.Fatalf("%d days back, tag %d: admitted %v (%v), want false", days, i, ok, err)
			}
		}
	}
}
