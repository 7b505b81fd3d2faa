package app

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// The holder of an IPv6 /48 (a tunnel broker gives one to anyone) clicks
// from many of its 65,536 /64s at once, each on a link of its own: the
// /48 bills -prefix-daily-clicks on its UTC day, exactly, however the
// clicks are spread over replicas, and a restart does not refill it.

// prefixCap is the /48's cap in these tests, low enough that a burst of
// clicks far outnumbers it.
const prefixCap = 5

// prefixConfig is testConfig under prefixCap, with the request limits out
// of the way.
func prefixConfig(t *testing.T) config.Config {
	cfg := testConfig(t)
	cfg.PrefixDailyClicks = prefixCap
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	return cfg
}

// clickIn48 follows u on h as a person's browser from the i-th /64 of
// 2001:db8:48::/48 and returns the id of the click, "" (t failed) when
// the answer is no 302 with one.
func clickIn48(t *testing.T, h http.Handler, u string, i int) string {
	return clickFromPeer(t, h, u, fmt.Sprintf("[2001:db8:48:%x::1]:5000", i))
}

// clickIn24 is clickIn48 from the i-th address of 198.51.100.0/24 (i
// from 1 to 254), spelled in turn as an IPv4, an IPv4-mapped and a 6to4
// address.
func clickIn24(t *testing.T, h http.Handler, u string, i int) string {
	remote := [...]string{"198.51.100.%d:5000", "[::ffff:198.51.100.%d]:5000", "[2002:c633:64%02x:1::1]:5000"}[i%3]
	return clickFromPeer(t, h, u, fmt.Sprintf(remote, i))
}

// clickFromPeer follows u on h as a person's browser from the peer remote
// and returns the id of the click, "" (t failed) when the answer is no
// 302 with one.
func clickFromPeer(t *testing.T, h http.Handler, u, remote string) string {
	req := httptest.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = remote
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Errorf("click from %s: %d, id %q", remote, rec.Code, id) // not Fatal: clicks run at once
	}
	return id
}

// burst clicks a link of its own from each of n /64s of the /48 at once,
// over the replicas in turn, and returns the clicks' ids.
func burst(t *testing.T, replicas []*App, n int) []string {
	t.Helper()
	links := make([]string, n)
	for i := range links {
		links[i] = adURL(t, replicas[i%len(replicas)].Handler)
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i] = clickIn48(t, replicas[i%len(replicas)].Handler, links[i], i+1) })
	}
	wg.Wait()
	return ids
}

// verdicts are the click log's verdicts of a's clicks, by id: "billable"
// or the reason.
func verdicts(t *testing.T, a *App) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		out[c.ID] = map[bool]string{true: "billable", false: c.Reason}[c.Billable]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkCap fails t unless exactly prefixCap of ids billed and the others
// were prefix_cap, by got.
func checkCap(t *testing.T, what string, ids []string, got map[string]string) {
	t.Helper()
	billed := 0
	for _, id := range ids {
		switch v := got[id]; v {
		case "billable":
			billed++
		case clicks.ReasonPrefixCap:
		default:
			t.Errorf("%s: click %s %q, want billable or prefix_cap", what, id, v)
		}
	}
	if billed != prefixCap {
		t.Errorf("%s: %d of %d clicks from the networks of one prefix billed, want its cap %d", what, billed, len(ids), prefixCap)
	}
}

func TestPrefixCapHoldsAndSurvivesRestart(t *testing.T) {
	cfg := prefixConfig(t)
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := burst(t, []*App{a}, 40)
	checkCap(t, "one server", ids, verdicts(t, a))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	a, err = New(cfg, Options{}) // the same data directory
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	id := clickIn48(t, a.Handler, adURL(t, a.Handler), 99)
	if v := verdicts(t, a)[id]; v != clicks.ReasonPrefixCap {
		t.Errorf("a new /64 of the /48 after a restart: %q, want %q", v, clicks.ReasonPrefixCap)
	}
	req := httptest.NewRequest(http.MethodGet, adURL(t, a.Handler), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = "[2001:db8:49::1]:5000"
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	if v := verdicts(t, a)[rec.Header().Get("X-Adlink-Click")]; v != "billable" {
		t.Errorf("another /48: %q, want billable", v)
	}
}

func TestReplicasHoldOnePrefixCap(t *testing.T) {
	url := testpg.New(t)
	replica := func() *App {
		cfg := prefixConfig(t)
		cfg.PostgresURL = url
		a, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	a, b := replica(), replica()
	ids := burst(t, []*App{a, b}, 40)
	got := map[string]string{}
	for id, v := range recorded(t, url) {
		got[id] = strings.Join(v, ",")
	}
	checkCap(t, "two replicas on one Postgres", ids, got)
}

// While Postgres is down, the replicas judge clicks with the windows they
// share in Redis: the /48 bills its cap once between them at the click,
// and Postgres, settling the spooled clicks again, agrees. So does an
// IPv4 /24 under its own cap, whichever way its addresses are spelled.
func TestOutagePrefixCapOverReplicasOnRedis(t *testing.T) {
	t.Run("IPv6 /48", func(t *testing.T) { outagePrefixCap(t, false) })
	t.Run("IPv4 /24", func(t *testing.T) { outagePrefixCap(t, true) })
}

// outagePrefixCap is TestOutagePrefixCapOverReplicasOnRedis for an IPv4
// /24 under -ipv4-prefix-daily-clicks, or an IPv6 /48.
func outagePrefixCap(t *testing.T, v4 bool) {
	click := clickIn48
	if v4 {
		click = clickIn24
	}
	pg := testpg.Start(t)
	srv := testredis.Start(t, testredis.Options{})
	replica := func() *App {
		cfg := prefixConfig(t)
		// Redis's timeouts are long: a replica whose call timed out on a
		// loaded machine would judge on its own windows and bill the cap
		// again, which is the fallback's documented cost, not this test's.
		cfg.PostgresURL, cfg.RedisURL = pg.URL(), srv.URL()+"?dial_timeout=10s&read_timeout=10s&write_timeout=10s"
		if v4 {
			cfg.PrefixDailyClicks, cfg.IPv4PrefixDailyClicks = 1, prefixCap
		}
		a, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	replicas := []*App{replica(), replica()}
	links := make([]string, 30)
	for i := range links {
		links[i] = adURL(t, replicas[i%2].Handler)
	}
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(links))
	var wg sync.WaitGroup
	for i := range links {
		wg.Go(func() { ids[i] = click(t, replicas[i%2].Handler, links[i], i+1) })
	}
	wg.Wait()
	billedAtClick := 0
	for _, r := range replicas {
		var n int
		if m := metric(t, r, `adlink_clicks_total{billable="true",reason=""}`); m != "" {
			if _, err := fmt.Sscan(m, &n); err != nil {
				t.Fatalf("metric %q: %v", m, err)
			}
		}
		billedAtClick += n
	}
	if billedAtClick != prefixCap {
		t.Errorf("during the outage the replicas billed %d clicks of one prefix at the click, want its cap %d", billedAtClick, prefixCap)
	}
	restartAndShip(t, pg, replicas...)
	got := map[string]string{}
	for id, v := range recorded(t, pg.URL()) {
		got[id] = strings.Join(v, ",")
	}
	checkCap(t, "shipped to Postgres", ids, got)
}
