package app

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
	"github.com/adlink/adlink/match"
)

// TestRemovedAdSharedWithoutARefresh: an ad removed while Postgres is
// down, on a replica that refreshes only when asked (-catalog-refresh 0),
// is shared once Postgres is back, with no refresh (the replicas hear of
// catalogs through Redis, whose word does not refresh): a replica started
// afterwards, with a data directory of its own and an advertisers file
// that no longer lists the ad's advertiser, lands its links and bills them
// under the advertiser's last budget. The outage is logged once, however
// often the share is tried.
func TestRemovedAdSharedWithoutARefresh(t *testing.T) {
	const bid = 100_000
	pg := testpg.Start(t)
	redisURL := testredis.Start(t, testredis.Options{}).URL()
	gone := handies(1, "p", bid)[0] // shop.example
	kept := gone
	kept.ID, kept.Advertiser, kept.Landing = "KEPT.1.H0", "kept.example", "https://kept.example/p"
	set := func(c *config.Config) {
		c.CatalogMaxDrop, c.PostgresURL, c.RedisURL, c.CatalogRefresh = 1, pg.URL(), redisURL, 0
		c.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	}
	logs := &syncLog{}
	retried := make(chan error, 16)
	a := startAccountsLogged(t, twoPartners, `{"advertisers":[
		{"id":"shop.example","daily_budget":"0.30","currency":"EUR"},
		{"id":"kept.example","daily_budget":"5.00","currency":"EUR"}]}`, []match.Ad{gone, kept}, set,
		Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), shareRetried: func(err error) { retried <- err }})
	links := a.links(t, "key-two", "site-two", gone.ID, 4)

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a.feed, feed(t, []match.Ad{kept}))
	writeFile(t, a.advertisers, []byte(`{"advertisers":[{"id":"kept.example","daily_budget":"5.00","currency":"EUR"}]}`))
	if status, r := a.reload(t); status != http.StatusOK || r.Result != resultSwapped {
		t.Fatalf("reload without %s, Postgres down: %d %+v", gone.ID, status, r)
	}
	// Tried again, and again, while Postgres is down.
	for range 2 {
		if err := waitRetry(t, retried); err == nil {
			t.Fatal("a share with Postgres down succeeded")
		}
	}
	if n := strings.Count(logs.String(), "removed ads: not shared"); n != 1 {
		t.Errorf("the outage is logged %d times, want once:\n%s", n, grep(logs.String(), "removed ads"))
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	for waitRetry(t, retried) != nil {
	}
	if !strings.Contains(logs.String(), "removed ads: shared with the other replicas") {
		t.Errorf("the log does not say the removed ads were shared:\n%s", grep(logs.String(), "removed ads"))
	}

	b := startAccountsWith(t, twoPartners, `{"advertisers":[{"id":"kept.example","daily_budget":"5.00","currency":"EUR"}]}`,
		[]match.Ad{kept}, set)
	if _, ok := b.Catalog().Removed[gone.ID]; !ok {
		t.Fatalf("B, started after the share, does not know %s as removed", gone.ID)
	}
	// 0.30 EUR is three clicks.
	got := map[string]int{}
	for i, l := range links {
		got[b.click(t, l, i+1).Reason]++
	}
	if got[""] != 3 || got[clicks.ReasonOverBudget] != 1 {
		t.Errorf("4 clicks of the removed ad on B: %v, want 3 billed and 1 over_budget", got)
	}

	// Closed while a share waits to be tried again, A tries no more.
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a.feed, feed(t, []match.Ad{gone, kept})) // a swap shares, whatever it removed
	if status, r := a.reload(t); status != http.StatusOK || r.Result != resultSwapped {
		t.Fatalf("reload with %s back, Postgres down: %d %+v", gone.ID, status, r)
	}
	if err := waitRetry(t, retried); err == nil {
		t.Fatal("a share with Postgres down succeeded")
	}
	a.pub.Close()
	a.admin.Close()
	if err := a.App.Close(); err != nil {
		t.Fatal(err)
	}
	for len(retried) > 0 {
		<-retried
	}
	a.live.retriedShare() // as the timer would, had close not stopped it
	if len(retried) > 0 {
		t.Errorf("a share tried again after close: %v", <-retried)
	}
}

// waitRetry is how the retry timer's next share ended.
func waitRetry(t *testing.T, retried <-chan error) error {
	t.Helper()
	select {
	case err := <-retried:
		return err
	case <-time.After(2 * shareRetryMost):
		t.Fatal("the removed ads' share was not tried again")
		return nil
	}
}

// startAccountsLogged is startAccountsWith with the server's Options
// opts, a Refresh of its own put in.
func startAccountsLogged(t *testing.T, partners, advertisers string, ads []match.Ad, set func(*config.Config), opts Options) *accountsServer {
	t.Helper()
	dir := t.TempDir()
	s := &accountsServer{partners: filepath.Join(dir, "partners.json"), advertisers: filepath.Join(dir, "advertisers.json"),
		feed: filepath.Join(dir, "feed.jsonl"), tick: make(chan time.Time), refreshed: make(chan api.Reload, 16)}
	writeFile(t, s.partners, []byte(partners))
	writeFile(t, s.advertisers, []byte(advertisers))
	writeFile(t, s.feed, feed(t, ads))
	cfg := testConfig(t)
	cfg.Demo, cfg.PartnersFile, cfg.AdvertisersFile, cfg.Catalogs = false, s.partners, s.advertisers, []string{s.feed}
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e6, 1e6, 1e6, 1e6
	set(&cfg)
	s.cfg = cfg
	opts.Refresh, opts.OnRefresh = s.tick, func(r api.Reload) { s.refreshed <- r }
	a, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.App = a
	s.pub, s.admin = httptest.NewServer(a.Handler), httptest.NewServer(a.Admin)
	t.Cleanup(func() {
		s.pub.Close()
		s.admin.Close()
		s.App.Close()
	})
	return s
}
