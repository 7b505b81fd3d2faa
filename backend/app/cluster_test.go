package app

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// Two replicas on Postgres and a Redis Cluster of three masters share what
// they share on one Redis: a key's limit, the click windows that judge a
// click while Postgres is down, and the flags of the budgets spent.

// clusterReplica is a replica on Postgres pgURL and the cluster cl,
// logging to log; limited gives it the test's limits (a key's burst of
// 10, a network's share of 2, no refill while the test runs), else the
// limits are out of the way.
func clusterReplica(t *testing.T, cl *testredis.Cluster, pgURL string, log *syncLog, limited bool) *App {
	t.Helper()
	cfg := prefixConfig(t)
	cfg.RedisURL, cfg.PostgresURL = cl.URL(), pgURL
	cfg.PrefixDailyClicks = 0
	if limited {
		cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 0.001, 10, 0.2
	}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// searchFrom is the status of a search for api_key demo on h from the
// i-th /24 of 198.51.0.0/16.
func searchFrom(h http.Handler, i int) int {
	r := httptest.NewRequest(http.MethodGet, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo", nil)
	r.RemoteAddr = fmt.Sprintf("198.51.%d.1:4000", i)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code
}

// count is the value of a counter line of a's /metrics, 0 when absent.
func count(t *testing.T, a *App, name string) int {
	t.Helper()
	m := metric(t, a, name)
	if m == "" {
		return 0
	}
	n, err := strconv.ParseFloat(m, 64)
	if err != nil {
		t.Fatalf("metric %s %q: %v", name, m, err)
	}
	return int(n)
}

func TestReplicasShareLimitsOnARedisCluster(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{})
	pgURL := testpg.New(t)
	log := &syncLog{}
	replicas := []*App{clusterReplica(t, cl, pgURL, log, true), clusterReplica(t, cl, pgURL, log, true)}
	// Six networks, three requests each, round-robin over the replicas:
	// each network gets its share of 2 whichever replica answers, and the
	// key's 10 are spent by the fifth network. Each replica alone would
	// allow each network 3.
	var per []int
	total := 0
	for n := 1; n <= 6; n++ {
		got := 0
		for i := range 3 {
			switch code := searchFrom(replicas[(i+n)%2].Handler, n); code {
			case http.StatusOK:
				got++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("network %d: status %d", n, code)
			}
		}
		per, total = append(per, got), total+got
	}
	if total != 10 || fmt.Sprint(per) != "[2 2 2 2 2 0]" {
		t.Errorf("200s per network %v, %d in all; want [2 2 2 2 2 0], the key's burst of 10 over both replicas", per, total)
	}
	for i, r := range replicas {
		if n := count(t, r, `adlink_redis_fallback_total{store="limits"}`); n != 0 {
			t.Errorf("replica %d fell back %d times:\n%s", i, n, log)
		}
	}
}

// TestReplicasCatchARepeatOnARedisCluster: while Postgres is down the
// replicas judge clicks with the windows they share in the cluster: a
// second link of the same ad, clicked from the same network on the other
// replica, is a repeat at the click.
func TestReplicasCatchARepeatOnARedisCluster(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{})
	pg := testpg.Start(t)
	log := &syncLog{}
	a, b := clusterReplica(t, cl, pg.URL(), log, false), clusterReplica(t, cl, pg.URL(), log, false)
	first, second := adURL(t, a.Handler), adURL(t, b.Handler)
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	clickFrom(t, a.Handler, first, 7)
	clickFrom(t, b.Handler, second, 7)
	billed := count(t, a, `adlink_clicks_total{billable="true",reason=""}`) + count(t, b, `adlink_clicks_total{billable="true",reason=""}`)
	repeats := count(t, b, `adlink_clicks_total{billable="false",reason="`+clicks.ReasonRepeat+`"}`)
	if billed != 1 || repeats != 1 {
		t.Errorf("one network's two clicks of an ad on two replicas: %d billed and %d repeats on the second at the click, want 1 and 1", billed, repeats)
	}
	for i, r := range []*App{a, b} {
		for _, store := range []string{"windows", "decisions"} {
			if n := count(t, r, `adlink_redis_fallback_total{store="`+store+`"}`); n != 0 {
				t.Errorf("replica %d: %s fell back %d times:\n%s", i, store, n, log)
			}
		}
	}
	restartAndShip(t, pg, a, b)
}

// TestBudgetSpentOnOneReplicaStopsItOnAnotherOnARedisCluster: the flag a
// replica raises when its click spends a budget, in the cluster, leaves
// the advertiser's ads out of the other replica's answers.
func TestBudgetSpentOnOneReplicaStopsItOnAnotherOnARedisCluster(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{})
	pgURL := testpg.New(t)
	const advertisers = `{"advertisers":[{"id":"shop.example","daily_budget":"0.20","currency":"EUR"}]}`
	a := startMemberWith(t, cl.URL(), pgURL, currencyAds(), "A", advertisers)
	b := startMemberWith(t, cl.URL(), pgURL, currencyAds(), "B", advertisers)
	shop := func(h http.Handler) []string {
		t.Helper()
		status, body := get(t, h, "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=demo&site_id=demo")
		var resp struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
			t.Fatalf("search: %d %v %.200s", status, err, body)
		}
		var links []string
		for _, l := range resp.Link {
			if strings.Contains(l.Ad, "adId=SHOP.") {
				links = append(links, l.Ad[strings.Index(l.Ad, "/v1/redirect?"):])
			}
		}
		return links
	}
	if err := b.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(shop(b.Handler)) == 0 {
		t.Fatal("B shows no ad of shop.example before any click")
	}
	links := shop(a.Handler)
	if len(links) == 0 {
		t.Fatal("A shows no ad of shop.example")
	}
	id := clickFrom(t, a.Handler, links[0], 1)
	if got := recorded(t, pgURL)[id]; len(got) != 1 || got[0] != "billable" {
		t.Fatalf("the click that spends the budget: %v", got)
	}
	if err := b.live.accounts().gate.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l := shop(b.Handler); len(l) != 0 {
		t.Errorf("B, after A's flag: %d ads of shop.example, want none", len(l))
	}
	if n := count(t, b.App, `adlink_redis_fallback_total{store="budget"}`); n != 0 {
		t.Errorf("B's budget flags fell back %d times", n)
	}
}

// TestRedisClusterNodeDownAnswers: with the node that holds the key's
// limits killed, no request fails: searches answer 200 and clicks 302 on
// both replicas, from the replicas' own limits, which they count and log.
func TestRedisClusterNodeDownAnswers(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{})
	pgURL := testpg.New(t)
	log := &syncLog{}
	replicas := []*App{clusterReplica(t, cl, pgURL, log, true), clusterReplica(t, cl, pgURL, log, true)}
	links := []string{adURL(t, replicas[0].Handler), adURL(t, replicas[1].Handler)}

	// The node that serves the slot of the key's bucket.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Protocol: 2})
	defer rdb.Close()
	node, err := rdb.MasterForKey(t.Context(), "rate:adlink:keys:{4:demo}")
	if err != nil {
		t.Fatal(err)
	}
	killed := false
	for _, s := range cl.Nodes {
		if s.Addr() == node.Options().Addr {
			s.Kill()
			killed = true
		}
	}
	if !killed {
		t.Fatalf("no node of %v is %s", cl.Addrs(), node.Options().Addr)
	}

	for n := 1; n <= 4; n++ {
		for i, r := range replicas {
			if code := searchFrom(r.Handler, 100+n); code != http.StatusOK {
				t.Errorf("replica %d, network %d, with a node down: search %d, want 200", i, n, code)
			}
		}
	}
	for i, r := range replicas {
		clickFrom(t, r.Handler, links[i], 20+i) // fails t unless 302
	}
	fellBack := 0
	for _, r := range replicas {
		fellBack += count(t, r, `adlink_redis_fallback_total{store="limits"}`)
	}
	if fellBack == 0 {
		t.Error("no limit fell back with the node of the key's bucket down")
	}
	if !strings.Contains(log.String(), "redis unreachable") {
		t.Errorf("the replicas did not log the fallback:\n%s", log)
	}
}
