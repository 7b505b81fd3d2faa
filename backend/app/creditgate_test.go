package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
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
	"github.com/jackc/pgx/v5"
)

// shows reports whether a search answer of s has an ad of adID.
func (s *accountsServer) shows(t *testing.T, adID string) bool {
	t.Helper()
	status, body := s.get(t, "/v2/search/link?q=lg+handy&loc=de&api_key=key-one&site_id=site-one", nil)
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
		t.Fatalf("search: %d %v %.200s", status, err, body)
	}
	for _, l := range resp.Link {
		if strings.Contains(l.Ad, "adId="+adID+"&") {
			return true
		}
	}
	return false
}

// eventually polls cond until it holds, failing the test with what
// after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: never", what)
		}
	}
}

// billed reports whether the click of id is billable, as shop-b.example's
// listing gives it.
func (s *accountsServer) billed(t *testing.T, id string) bool {
	t.Helper()
	for _, c := range s.list(t, "shop-b-report-token-0123", "").Clicks {
		if c.ID == id {
			return c.Billable
		}
	}
	t.Fatalf("click %s not listed", id)
	return false
}

// TestCreditShowsASpentAdvertiserAgain: an advertiser whose click spent
// its daily budget is out of the answers; a credit of that click gives
// its budget room, and its ads come back to the answers the same day,
// where the next click bills and stops them again. On one server of a
// bbolt file, credited by its admin listener.
func TestCreditShowsASpentAdvertiserAgain(t *testing.T) {
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), nil)
	links := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 2)
	first := s.follow(t, http.MethodGet, links[0], 1)
	if !s.billed(t, first.id) || s.shows(t, "SHOP.2.B1") {
		t.Fatal("shop-b.example's first click did not spend its budget")
	}
	day := time.Now().UTC().Format(time.DateOnly)
	status, body := s.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {day}, "to": {day}, "reason": {"click farm"}}, nil)
	if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
		t.Fatalf("credit: %d %s", status, body)
	}
	eventually(t, "shop-b.example shown after its credit", func() bool { return s.shows(t, "SHOP.2.B1") })
	next := s.follow(t, http.MethodGet, links[1], 2)
	if !s.billed(t, next.id) {
		t.Error("the click after the credit did not bill")
	}
	if s.shows(t, "SHOP.2.B1") {
		t.Error("shop-b.example still shown after the click that spent its budget again")
	}
}

// TestCreditShowsASpentAdvertiserAgainOnEveryReplica: two replicas of one
// Postgres and one Redis; a click on A spends an advertiser's budget, and
// both leave it out (B through the flag in Redis). A credit in Postgres,
// as adlink invalidate -postgres runs it beside the servers, brings its
// ads back on both, and the next click, on B, bills and stops them again
// on both.
func TestCreditShowsASpentAdvertiserAgainOnEveryReplica(t *testing.T) {
	r := spendOnTwoReplicas(t)
	a, b := r.a, r.b
	r.creditInPostgres(t)
	eventually(t, "shop-b.example back in both replicas' answers", func() bool {
		return a.shows(t, "SHOP.2.B1") && b.shows(t, "SHOP.2.B1")
	})
	next := b.follow(t, http.MethodGet, r.linkB, 2)
	if !b.billed(t, next.id) {
		t.Error("the click after the credit did not bill")
	}
	eventually(t, "shop-b.example out of both replicas' answers again", func() bool {
		return !a.shows(t, "SHOP.2.B1") && !b.shows(t, "SHOP.2.B1")
	})
}

// TestCreditReachesAGateMadeBeforeIt: a reload that changed the budgets
// made its gate before a credit, and serves it after the gate before it
// read the spend again; the new gate carries the spend the old one knew
// as the larger of the two, the one read before the credit. The next tick
// of the credits' epoch, which the old gate read, reads the new gate's
// spend again all the same, and shows the credited advertiser again.
func TestCreditReachesAGateMadeBeforeIt(t *testing.T) {
	pgURL := testpg.New(t)
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), func(cfg *config.Config) { cfg.PostgresURL = pgURL })
	link := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	if first := s.follow(t, http.MethodGet, link, 1); !s.billed(t, first.id) {
		t.Fatal("shop-b.example's click did not bill")
	}
	const adv = "shop-b.example"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	budgets := s.Catalog().Accounts.Budgets()
	gate := func() *budget.Gate {
		t.Helper()
		g, err := budget.New(t.Context(), budget.Options{Budgets: budgets, Spent: s.Rollups})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	old := gate()
	w := s.rereadCredited(t.Context(), old, creditWatch{gate: old, epoch: s.creditEpoch(t.Context())}, log)
	made := gate() // by a reload, before the credit
	if old.Spent(adv) < budgets[adv].DailyMicros || made.Spent(adv) < budgets[adv].DailyMicros {
		t.Fatalf("before the credit, the gates hold %d and %d, want the budget spent", old.Spent(adv), made.Spent(adv))
	}

	now := time.Now().UTC()
	inv := clicks.Invalidation{AdID: "SHOP.2.B1", From: now.Add(-time.Hour), To: now.Add(time.Hour), Note: "click farm"}
	if credit, err := s.invalidator(log); err != nil {
		t.Fatal(err)
	} else if got, err := credit(t.Context(), inv); err != nil || got.Clicks != 1 {
		t.Fatalf("credit: %+v %v, want 1 click", got, err)
	}
	w = s.rereadCredited(t.Context(), old, w, log) // the tick before the reload serves its gate
	if got := old.Spent(adv); got != 0 {
		t.Fatalf("the gate served read %d after the credit, want 0", got)
	}
	made.Carry(old) // the reload serves its gate
	s.rereadCredited(t.Context(), made, w, log)
	if got := made.Spent(adv); got != 0 {
		t.Errorf("the reload's gate, made before the credit, holds %d after the next tick, want 0", got)
	}
}

// TestCloseEndsAReadOfTheCreditsEpoch: Close ends the tick that reads the
// credits' epoch, however long Postgres takes to answer it, rather than
// wait for it.
func TestCloseEndsAReadOfTheCreditsEpoch(t *testing.T) {
	defer func(d time.Duration) { creditReadTimeout = d }(creditReadTimeout)
	creditReadTimeout = time.Hour
	pgURL := testpg.New(t)
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), func(cfg *config.Config) { cfg.PostgresURL = pgURL })
	conn, err := pgx.Connect(t.Context(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // released whatever Close did
	if _, err := tx.Exec(t.Context(), `LOCK TABLE credit_epoch IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a read of the credits' epoch waiting for the lock", func() bool {
		var n int
		err := tx.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.oid = 'credit_epoch'::regclass AND NOT l.granted`).Scan(&n)
		return err == nil && n > 0
	})
	closed := make(chan error, 1)
	go func() {
		s.pub.Close()
		s.admin.Close()
		closed <- s.App.Close()
	}()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waits for the read of the credits' epoch")
	}
}

// TestCreditWhileRedisIsDownTakesDownTheFlag: on one server with -redis,
// of a bbolt file or of Postgres, a credit run while Redis does not
// answer could not take down the flag the advertiser's click raised; once
// Redis answers again the server reads the spend again and takes it
// down, rather than have its next read of the flags stop the advertiser
// for the rest of the day.
func TestCreditWhileRedisIsDownTakesDownTheFlag(t *testing.T) {
	for _, store := range []string{"bbolt", "postgres"} {
		t.Run(store, func(t *testing.T) {
			rs := testredis.Start(t, testredis.Options{Persist: true})
			pgURL := ""
			if store == "postgres" {
				pgURL = testpg.New(t)
			}
			s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), func(cfg *config.Config) {
				cfg.RedisURL, cfg.PostgresURL = rs.URL(), pgURL
			})
			link := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
			if first := s.follow(t, http.MethodGet, link, 1); !s.billed(t, first.id) || s.shows(t, "SHOP.2.B1") {
				t.Fatal("shop-b.example's click did not spend its budget")
			}
			flags, day := budgetFlags(t, rs.URL())
			if raised, err := flags.Raised(t.Context(), day); err != nil || len(raised) != 1 {
				t.Fatalf("the click raised %v (%v), want shop-b.example's flag", raised, err)
			}
			rs.Kill()
			today := time.Now().UTC().Format(time.DateOnly)
			status, body := s.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {today}, "to": {today}, "reason": {"click farm"}}, nil)
			if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
				t.Fatalf("credit: %d %s", status, body)
			}
			rs.Start()
			eventually(t, "shop-b.example's flag taken down once Redis answers", func() bool {
				raised, err := flags.Raised(t.Context(), day)
				return err == nil && len(raised) == 0
			})
			if !s.shows(t, "SHOP.2.B1") {
				t.Error("shop-b.example left out after its credit, Redis answering again")
			}
		})
	}
}

// TestCreditWhileRedisIsDownLogsOnce: while Redis does not answer, the
// read of the spend again after a credit fails at each tick and is tried
// again; it is logged once, not at every tick.
func TestCreditWhileRedisIsDownLogsOnce(t *testing.T) {
	const warning = "reading the spend again after a credit"
	rs := testredis.Start(t, testredis.Options{Persist: true})
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), func(cfg *config.Config) {
		cfg.RedisURL = rs.URL()
	})
	logs := &syncLog{}
	s.log = slog.New(slog.NewTextHandler(logs, nil))
	s.restart(t)
	link := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	if first := s.follow(t, http.MethodGet, link, 1); !s.billed(t, first.id) {
		t.Fatal("shop-b.example's click did not bill")
	}
	rs.Kill()
	today := time.Now().UTC().Format(time.DateOnly)
	status, body := s.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {today}, "to": {today}, "reason": {"click farm"}}, nil)
	if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
		t.Fatalf("credit: %d %s", status, body)
	}
	// Each tick reads the flags twice (the read again, then Sync), each
	// read a fallback: several ticks have tried again.
	start := budgetFallbacks(t, s)
	eventually(t, "several ticks while Redis is down", func() bool { return budgetFallbacks(t, s) >= start+8 })
	// The credit's own read logs its failure, then the ticks' first.
	if n := strings.Count(logs.String(), warning); n != 2 {
		t.Errorf("%q logged %d times while Redis is down, want twice:\n%s", warning, n, logs)
	}
}

// budgetFallbacks is s's count of the budget flags' calls Redis did not
// answer.
func budgetFallbacks(t *testing.T, s *accountsServer) float64 {
	t.Helper()
	_, metrics := get(t, s.Admin, "/metrics")
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, `adlink_redis_fallback_total{store="budget"} `); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// TestCreditReachesAGateMadeBeforeItOnBbolt: on one server of a bbolt
// file, with neither Redis nor Postgres, a reload may build its budget
// gate before a credit and serve it after the credit has read the gate
// it replaces: the server's next tick reads that gate's spend again, or
// it would keep the credited advertiser out for the rest of its day.
func TestCreditReachesAGateMadeBeforeItOnBbolt(t *testing.T) {
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), nil)
	link := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	if first := s.follow(t, http.MethodGet, link, 1); !s.billed(t, first.id) || s.shows(t, "SHOP.2.B1") {
		t.Fatal("shop-b.example's click did not spend its budget")
	}
	made, err := budget.New(t.Context(), budget.Options{Budgets: s.Catalog().Accounts.Budgets(), Spent: s.Rollups})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	status, body := s.invalidate(t, url.Values{"ad": {"SHOP.2.B1"}, "from": {day}, "to": {day}, "reason": {"click farm"}}, nil)
	if status != http.StatusOK || !strings.Contains(body, `"clicks":1`) {
		t.Fatalf("credit: %d %s", status, body)
	}
	// The reload serves its gate, made before the credit.
	acc := *s.live.accounts()
	made.Carry(acc.gate)
	acc.gate = made
	s.live.cur.Store(s.live.cur.Load().with(&acc))
	eventually(t, "shop-b.example shown by the reload's gate after its credit", func() bool { return s.shows(t, "SHOP.2.B1") })
}

// twoReplicas are two replicas, A and B, of one Postgres and one Redis,
// each with a tagged link to shop-b.example's ad.
type twoReplicas struct {
	a, b            *accountsServer
	linkA, linkB    string
	pgURL, redisURL string
}

// spendOnTwoReplicas starts two replicas and has a click on A spend
// shop-b.example's budget: both leave it out once it returns.
func spendOnTwoReplicas(t *testing.T) twoReplicas {
	t.Helper()
	r := twoReplicas{pgURL: testpg.New(t), redisURL: testredis.Start(t, testredis.Options{}).URL()}
	set := func(cfg *config.Config) { cfg.PostgresURL, cfg.RedisURL = r.pgURL, r.redisURL }
	r.a = startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	r.b = startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	r.linkA = r.a.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	r.linkB = r.b.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 1)[0]
	if first := r.a.follow(t, http.MethodGet, r.linkA, 1); !r.a.billed(t, first.id) {
		t.Fatal("shop-b.example's first click did not bill")
	}
	eventually(t, "shop-b.example out of both replicas' answers", func() bool {
		return !r.a.shows(t, "SHOP.2.B1") && !r.b.shows(t, "SHOP.2.B1")
	})
	return r
}

// creditInPostgres credits shop-b.example's click in the replicas'
// Postgres, as adlink invalidate -postgres runs it beside the servers.
func (r twoReplicas) creditInPostgres(t *testing.T) {
	t.Helper()
	db, err := pgstore.OpenMigrated(t.Context(), r.pgURL)
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
}

// budgetFlags are the budget flags in the Redis at url, closed when t
// ends, and today's budget day in UTC.
func budgetFlags(t *testing.T, url string) (*redisstore.BudgetFlags, clicks.BudgetDay) {
	t.Helper()
	rc, err := redisstore.Open(url, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc.BudgetFlags(), clicks.BudgetDayIn(time.Now(), time.UTC)
}
