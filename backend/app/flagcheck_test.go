package app

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
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
// spends the budget for real raises a new one, and the other replica's
// next read of the flags stops the advertiser at once.
func TestStaleFlagStopsNoReplica(t *testing.T) {
	r := spendOnTwoReplicas(t)
	a, b := r.a, r.b
	flags, day := budgetFlags(t, r.redisURL)
	raised, err := flags.Raised(t.Context(), day)
	if err != nil || len(raised) != 1 {
		t.Fatalf("the click raised %v (%v), want shop-b.example's flag", raised, err)
	}
	flag := raised[0]

	r.creditInPostgres(t)
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
	if next := b.follow(t, http.MethodGet, r.linkB, 2); !b.billed(t, next.id) {
		t.Fatal("the click after the credit did not bill")
	}
	eventually(t, "the click's flag raised", func() bool {
		raised, err := flags.Raised(t.Context(), day)
		return err == nil && slices.ContainsFunc(raised, func(f string) bool { return strings.HasPrefix(f, "shop-b.example@") })
	})
	if err := a.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.shows(t, "SHOP.2.B1") || b.shows(t, "SHOP.2.B1") {
		t.Errorf("shop-b.example's budget spent again: shown on A %v, on B %v, want on neither", a.shows(t, "SHOP.2.B1"), b.shows(t, "SHOP.2.B1"))
	}
}

// afterRead is a Spender that calls hook, once, after its next read of an
// advertiser's spend and before it answers.
type afterRead struct {
	budget.Spender
	hook func()
}

func (h *afterRead) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	s, err := h.Spender.SpentOn(ctx, adv, day)
	if hook := h.hook; hook != nil {
		h.hook = nil
		hook()
	}
	return s, err
}

// TestFlagFromASpendReadBeforeACredit: a replica of one Postgres and one
// Redis, and a second replica's gate over them. A click spends an
// advertiser's budget; the second gate reads that spend for it, and
// before it raises its flag a credit of the click commits and the replica
// reads the spend again and takes the flags down. The flag then lands:
// the replica's next read of the flags finds Postgres's spend under the
// budget and keeps showing the advertiser, and the second gate's own read
// again after the credit takes that flag down.
func TestFlagFromASpendReadBeforeACredit(t *testing.T) {
	pgURL, redisURL := testpg.New(t), testredis.Start(t, testredis.Options{}).URL()
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), func(cfg *config.Config) {
		cfg.PostgresURL, cfg.RedisURL = pgURL, redisURL
	})
	flags, day := budgetFlags(t, redisURL)
	const adv = "shop-b.example"
	spent := &afterRead{Spender: s.Rollups}
	b, err := budget.New(t.Context(), budget.Options{Budgets: s.Catalog().Accounts.Budgets(), Spent: spent, Flags: flags, Shared: true})
	if err != nil {
		t.Fatal(err)
	}

	link := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	first := s.follow(t, http.MethodGet, link, 1)
	if !s.billed(t, first.id) || s.shows(t, "SHOP.2.B1") {
		t.Fatal("shop-b.example's click did not spend its budget")
	}
	spent.hook = func() {
		today := time.Now().UTC().Format(time.DateOnly)
		status, body := s.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {today}, "to": {today}, "reason": {"click farm"}}, nil)
		if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
			t.Errorf("credit: %d %s", status, body)
		}
		if raised, err := flags.Raised(t.Context(), day); err != nil || len(raised) != 0 {
			t.Errorf("after the credit's read, the flags %v (%v), want none", raised, err)
		}
	}
	// The second replica learns of the click, and reads the spend before
	// the credit.
	if err := b.Clicked(t.Context(), &clicks.Click{Time: time.Now(), Advertiser: adv, Billable: true}); err != nil {
		t.Fatal(err)
	}
	if raised, err := flags.Raised(t.Context(), day); err != nil || len(raised) != 1 {
		t.Fatalf("the flag from the spend before the credit: %v (%v), want it raised", raised, err)
	}
	if err := s.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !s.shows(t, "SHOP.2.B1") {
		t.Fatal("the flag raised from the spend before the credit stops shop-b.example, its spend in Postgres under its budget")
	}
	if err := b.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if raised, err := flags.Raised(t.Context(), day); err != nil || len(raised) != 0 {
		t.Errorf("after the second gate's read again, the flags %v (%v), want none", raised, err)
	}
	if b.Spent(adv) != 0 || !s.shows(t, "SHOP.2.B1") {
		t.Errorf("after the credit, the second gate holds %d and the replica shows shop-b.example %v, want 0 and shown", b.Spent(adv), s.shows(t, "SHOP.2.B1"))
	}
}

// TestSyncWaitsOnNoHungClickRead: a gate over Postgres and Redis trusts a
// flag while Postgres does not answer (the spend table locked, as a
// server that takes no queries). A click's read of the spend then hangs
// on the same lock; the gate's next Sync, reading the advertiser's spend
// again for the trusted flag, returns while Postgres is still stuck, as
// the click's read gives up: it does not wait on the click for as long as
// Postgres does. Once Postgres answers, the advertiser, under its budget
// there, is shown again.
func TestSyncWaitsOnNoHungClickRead(t *testing.T) {
	pgURL, redisURL := testpg.New(t), testredis.Start(t, testredis.Options{}).URL()
	db, err := pgstore.Open(t.Context(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rc, err := redisstore.Open(redisURL, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	const adv = "shop-b.example"
	now := time.Now()
	day := clicks.BudgetDayIn(now, time.UTC)
	if _, err := db.Pool().Exec(t.Context(), `INSERT INTO spend (advertiser, day, shard, micros) VALUES ($1, $2, 0, 4)`, adv, int64(day)); err != nil {
		t.Fatal(err)
	}
	g, err := budget.New(t.Context(), budget.Options{Budgets: map[string]accounts.Budget{adv: {DailyMicros: 10, Pacing: accounts.ASAP}},
		Spent: db.Rollups(), Flags: rc.BudgetFlags(), Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.BudgetFlags().Raise(t.Context(), adv+"@10", day); err != nil {
		t.Fatal(err)
	}

	tx, err := db.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			tx.Rollback(context.Background())
		}
	}
	defer unlock()
	if _, err := tx.Exec(t.Context(), `LOCK TABLE spend IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Spent(adv); got != 10 {
		t.Fatalf("Postgres stuck: the flag trusted, %s spent %d, want its budget, 10", adv, got)
	}

	clicked := make(chan struct{})
	go func() {
		defer close(clicked)
		g.Clicked(context.Background(), &clicks.Click{Time: now, Advertiser: adv, Billable: true})
	}()
	eventually(t, "the click's read of the spend waiting on the lock", func() bool {
		var n int
		err := db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%FROM spend WHERE advertiser%'`).Scan(&n)
		return err == nil && n > 0
	})
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		g.Sync(context.Background())
	}()
	select {
	case <-synced:
	case <-time.After(15 * time.Second):
		t.Errorf("Sync waits on a click's read of the spend for as long as Postgres does not answer")
	}
	unlock()
	<-synced
	<-clicked
	if err := g.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.Spent(adv); got != 4 {
		t.Errorf("Postgres answering: %s spent %d, want Postgres's 4, shown again", adv, got)
	}
}

// TestBboltCreditKeepsAnotherReplicasFlag: two replicas of one Redis,
// each with its own bbolt file (no -postgres: each one's spend is its
// own). A click on B spends shop-b.example's budget and raises its flag;
// a click on A, whose own spend is under the budget, bills there and
// raises the same flag. A credit of A's click takes that flag down: B,
// its own budget still spent, raises it again, and A leaves the
// advertiser out again.
func TestBboltCreditKeepsAnotherReplicasFlag(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{})
	a, b := bboltReplicas(t, rs)
	linkA := a.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	spendOn(t, "B", b, a, b)
	if first := a.follow(t, http.MethodGet, linkA, 1); !a.billed(t, first.id) {
		t.Fatal("shop-b.example's click on A did not bill against A's own spend")
	}
	flags, day := budgetFlags(t, rs.URL())
	if raised, err := flags.Raised(t.Context(), day); err != nil || len(raised) != 1 {
		t.Fatalf("the clicks raised %v (%v), want shop-b.example's one flag", raised, err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	status, body := a.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {today}, "to": {today}, "reason": {"click farm"}}, nil)
	if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
		t.Fatalf("credit on A: %d %s", status, body)
	}
	eventually(t, "B's flag up again after A's credit", func() bool {
		raised, err := flags.Raised(t.Context(), day)
		return err == nil && len(raised) == 1
	})
	eventually(t, "shop-b.example out of A's answers again, B's budget spent", func() bool { return !a.shows(t, "SHOP.2.B1") })
	if b.shows(t, "SHOP.2.B1") {
		t.Error("B shows shop-b.example, its own budget spent")
	}
}

// TestBboltCreditShowsAgainOnTheOtherReplica: two replicas of one Redis,
// each with its own bbolt file. A click on A spends shop-b.example's
// budget and raises its flag, which stops it on B too. A credit of that
// click on A takes the flag down: B, whose own spend is under the
// budget, shows the advertiser again, though it hears of no credit.
func TestBboltCreditShowsAgainOnTheOtherReplica(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{})
	a, b := bboltReplicas(t, rs)
	spendOn(t, "A", a, a, b)
	today := time.Now().UTC().Format(time.DateOnly)
	status, body := a.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {today}, "to": {today}, "reason": {"click farm"}}, nil)
	if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
		t.Fatalf("credit on A: %d %s", status, body)
	}
	eventually(t, "shop-b.example back in both replicas' answers", func() bool {
		return a.shows(t, "SHOP.2.B1") && b.shows(t, "SHOP.2.B1")
	})
}

// TestBboltCreditWhileRedisIsDownThenRestart: two replicas of one Redis,
// each with its own bbolt file. A click on A spends shop-b.example's
// budget and raises its flag, which stops it on B too. A credit of that
// click on A runs while Redis does not answer, so the flag stays up, and
// A restarts before Redis answers again. The flag names A as its raiser
// (its replica id, kept in its data directory), so once Redis answers A
// finds it its own, its own spend under the budget, and takes it down:
// both replicas show the advertiser again.
func TestBboltCreditWhileRedisIsDownThenRestart(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Persist: true})
	a, b := bboltReplicas(t, rs)
	spendOn(t, "A", a, a, b)
	flags, day := budgetFlags(t, rs.URL())
	if raised, err := flags.Raised(t.Context(), day); err != nil || len(raised) != 1 {
		t.Fatalf("the click raised %v (%v), want shop-b.example's flag", raised, err)
	}
	rs.Kill()
	today := time.Now().UTC().Format(time.DateOnly)
	status, body := a.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {today}, "to": {today}, "reason": {"click farm"}}, nil)
	if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
		t.Fatalf("credit on A: %d %s", status, body)
	}
	a.restart(t)
	rs.Start()
	eventually(t, "A's flag taken down once Redis answers", func() bool {
		raised, err := flags.Raised(t.Context(), day)
		return err == nil && len(raised) == 0
	})
	eventually(t, "shop-b.example back in both replicas' answers", func() bool {
		return a.shows(t, "SHOP.2.B1") && b.shows(t, "SHOP.2.B1")
	})
}

// bboltReplicas starts two replicas of Redis rs, each with its own bbolt
// file (no -postgres: each one's spend is its own).
func bboltReplicas(t *testing.T, rs *testredis.Server) (a, b *accountsServer) {
	t.Helper()
	set := func(cfg *config.Config) { cfg.RedisURL = rs.URL() }
	a = startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	b = startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	return a, b
}

// spendOn has a click on replica s (named name) spend shop-b.example's
// budget there, and waits until both replicas, a and b, leave it out.
func spendOn(t *testing.T, name string, s, a, b *accountsServer) {
	t.Helper()
	link := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	if first := s.follow(t, http.MethodGet, link, 1); !s.billed(t, first.id) {
		t.Fatalf("shop-b.example's click on %s did not bill", name)
	}
	eventually(t, "shop-b.example out of both replicas' answers", func() bool {
		return !a.shows(t, "SHOP.2.B1") && !b.shows(t, "SHOP.2.B1")
	})
}
