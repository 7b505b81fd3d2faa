package app

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// TestStaleFlagStopsNoReplica: two replicas of one Postgres and one
// Redis. A click on A spends an advertiser's budget and a credit gives it
// room again; both replicas read the spend again, take down the flag and
// show the advertiser. Then the flag lands once more, raised from a
// spend read before the credit (as a click on B that read the spend
// before the credit and raised its flag after the re-reads): each
// replica reads the flags, finds Postgres's spend under the budget, and
// keeps showing the advertiser. Once that flag is down, a click that
// spends the budget for real raises it again, and the other replica's
// next read of the flags stops the advertiser at once.
func TestStaleFlagStopsNoReplica(t *testing.T) {
	pgURL, redisURL := testpg.New(t), testredis.Start(t, testredis.Options{}).URL()
	set := func(cfg *config.Config) { cfg.PostgresURL, cfg.RedisURL = pgURL, redisURL }
	a := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	b := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	linkA := a.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	linkB := b.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	if first := a.follow(t, http.MethodGet, linkA, 1); !a.billed(t, first.id) {
		t.Fatal("shop-b.example's first click did not bill")
	}
	eventually(t, "shop-b.example out of both replicas' answers", func() bool {
		return !a.shows(t, "SHOP.2.B1") && !b.shows(t, "SHOP.2.B1")
	})
	rc, err := redisstore.Open(redisURL, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	flags := rc.BudgetFlags()
	day := clicks.BudgetDayIn(time.Now(), time.UTC)
	raised, err := flags.Raised(t.Context(), day)
	if err != nil || len(raised) != 1 {
		t.Fatalf("the click raised %v (%v), want shop-b.example's flag", raised, err)
	}
	flag := raised[0]

	db, err := pgstore.OpenMigrated(t.Context(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	inv := clicks.Invalidation{AdID: "SHOP.2.B1", From: now.Add(-time.Hour), To: now.Add(time.Hour), Note: "click farm"}
	credit, err := Invalidate(db.Invalidator(), func() *accounts.Book { return nil }, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))(t.Context(), inv)
	if err != nil || credit.Clicks != 1 {
		t.Fatalf("credit: %+v %v, want 1 click", credit, err)
	}
	eventually(t, "shop-b.example back in both replicas' answers", func() bool {
		return a.shows(t, "SHOP.2.B1") && b.shows(t, "SHOP.2.B1")
	})

	// The stale flag lands after both re-reads.
	if err := flags.Raise(t.Context(), flag, day); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*accountsServer{a, b} {
		if err := s.live.accounts().gate.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if !a.shows(t, "SHOP.2.B1") || !b.shows(t, "SHOP.2.B1") {
		t.Fatalf("a flag raised from the spend before the credit stops shop-b.example: shown on A %v, on B %v, its spend in Postgres under its budget",
			a.shows(t, "SHOP.2.B1"), b.shows(t, "SHOP.2.B1"))
	}
	// The flag is taken down, as B's own re-read does, and read so.
	if err := flags.Clear(t.Context(), "shop-b.example", day); err != nil {
		t.Fatal(err)
	}
	if err := a.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}

	// A click on B spends the budget for real: A stops at its next read
	// of the flags.
	if next := b.follow(t, http.MethodGet, linkB, 2); !b.billed(t, next.id) {
		t.Fatal("the click after the credit did not bill")
	}
	eventually(t, "the click's flag raised", func() bool {
		raised, err := flags.Raised(t.Context(), day)
		return err == nil && slices.Contains(raised, flag)
	})
	if err := a.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.shows(t, "SHOP.2.B1") || b.shows(t, "SHOP.2.B1") {
		t.Errorf("shop-b.example's budget spent again: shown on A %v, on B %v, want on neither", a.shows(t, "SHOP.2.B1"), b.shows(t, "SHOP.2.B1"))
	}
}
