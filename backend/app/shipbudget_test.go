package app

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// TestShippedClicksSpendTheBudget: two replicas of one Postgres and one
// Redis. While Postgres is down, A spools two clicks on shop-b.example's
// ad, each bidding its whole daily budget: the spool keeps no spend, so
// both bill there and the ad stays in the answers. Once Postgres is back
// and A's spool shipped, Postgres bills the first and refuses the second
// as over_budget, and the shipment stops the advertiser as a live click
// spending the budget does: out of A's answers at once, its flag raised
// in Redis, and out of B's answers at B's next read of the flags, though
// no click reached B. The replicas' clock stands still, so that the
// clicks and the shipment are of one day even across midnight UTC.
func TestShippedClicksSpendTheBudget(t *testing.T) {
	pg, redisURL := testpg.Start(t), testredis.Start(t, testredis.Options{}).URL()
	set := func(cfg *config.Config) { cfg.PostgresURL, cfg.RedisURL = pg.URL(), redisURL }
	at := time.Now().UTC()
	clock := func() time.Time { return at }
	a := startAccountsAt(t, listingPartners, invalidateAdvertisers, listingAds(), set, clock)
	b := startAccountsAt(t, listingPartners, invalidateAdvertisers, listingAds(), set, clock)
	links := a.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 2)

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, l := range links {
		ids = append(ids, a.follow(t, http.MethodGet, l, i+1).id)
	}
	if got := metric(t, a.App, "adlink_clicks_spooled_total"); got != "2" {
		t.Fatalf("A spooled %s clicks, want 2", got)
	}
	if !a.shows(t, "SHOP.2.B1") {
		t.Fatal("the spooled clicks stopped shop-b.example before they shipped: the test shows nothing")
	}
	restartAndShip(t, pg, a.App)

	if !a.billed(t, ids[0]) || a.billed(t, ids[1]) {
		t.Fatalf("shipped: the first click billed %v, the second %v; want the first alone", a.billed(t, ids[0]), a.billed(t, ids[1]))
	}
	if a.shows(t, "SHOP.2.B1") {
		t.Error("A still shows shop-b.example once its shipped clicks spent the budget")
	}
	rc, err := redisstore.Open(redisURL, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	raised, err := rc.BudgetFlags().Raised(t.Context(), clicks.BudgetDayIn(at, time.UTC))
	if err != nil || !slices.ContainsFunc(raised, func(f string) bool { return strings.HasPrefix(f, "shop-b.example@300000#") }) {
		t.Errorf("the flags raised: %v (%v), want shop-b.example's", raised, err)
	}
	if err := b.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b.shows(t, "SHOP.2.B1") {
		t.Error("B still shows shop-b.example after reading the flags, its budget spent by A's shipped clicks")
	}
}

// TestClicksShippedAtStartSpendTheBudget: a replica stopped with clicks
// spooled ships them at its next start, Postgres back. The spooler starts
// once the gate is served, after its read of the day's spend: the
// shipment, whose clicks spend the advertiser's budget, tells the gate,
// and the advertiser leaves the answers. The clock stands still, as in
// TestShippedClicksSpendTheBudget.
func TestClicksShippedAtStartSpendTheBudget(t *testing.T) {
	pg := testpg.Start(t)
	at := time.Now().UTC()
	a := startAccountsAt(t, listingPartners, invalidateAdvertisers, listingAds(), func(cfg *config.Config) { cfg.PostgresURL = pg.URL() },
		func() time.Time { return at })
	links := a.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 2)
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	for i, l := range links {
		a.follow(t, http.MethodGet, l, i+1)
	}
	a.pub.Close()
	a.admin.Close()
	if err := a.App.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	a.start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := a.spooler.WaitShipped(ctx); err != nil {
		t.Fatalf("the spool left by the stop did not ship: %v", err)
	}
	if got := metric(t, a.App, "adlink_clicks_shipped_total"); got != "2" {
		t.Fatalf("shipped %s clicks at the start, want 2", got)
	}
	if a.shows(t, "SHOP.2.B1") {
		t.Error("the replica still shows shop-b.example once the clicks it shipped at its start spent the budget")
	}
}
