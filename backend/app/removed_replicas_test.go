package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// removedMember starts a replica on the Postgres at pgURL and the Redis at
// redisURL, with a data directory of its own, reading the feed file path
// on clock, telling the test of each refresh; logs, when not nil, get its
// log.
func removedMember(t *testing.T, name, pgURL, redisURL, path string, clock *testClock, logs *syncLog) *member {
	t.Helper()
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	cfg.PostgresURL, cfg.RedisURL = pgURL, redisURL
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	cfg.ClickTTL, cfg.SiteTokenTTL = time.Hour, time.Hour
	cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 1e6, 1e6, 1
	cfg.IPRate, cfg.IPBurst = 1e6, 1e6
	m := &member{name: name, feed: path, refreshed: make(chan api.Reload, 64)}
	opts := Options{Now: clock.Now, OnRefresh: func(r api.Reload) { m.refreshed <- r }}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	a, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	m.App = a
	return m
}

// signedLinks are the signed click links a search on h gives, by ad id,
// as request URIs.
func signedLinks(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	status, body := get(t, h, "/v2/search/link?q=lg+handy&loc=de&size=50&api_key=demo&site_id=demo")
	var ans struct{ Link []struct{ Ad string } }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &ans) != nil {
		t.Fatalf("search: %d %.300s", status, body)
	}
	links := map[string]string{}
	for _, l := range ans.Link {
		u, err := url.Parse(l.Ad)
		if err != nil {
			t.Fatal(err)
		}
		links[u.Query().Get("adId")] = u.RequestURI()
	}
	return links
}

// land follows the click link uri on h as a browser does, and returns the
// status and where it sends the browser.
func land(h http.Handler, uri string) (int, string) {
	req := httptest.NewRequest(http.MethodGet, uri, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Location")
}

// madeUp is the click link uri with its adId changed to id.
func madeUp(t *testing.T, uri, id string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("adId", id)
	u.RawQuery = q.Encode()
	return u.RequestURI()
}

// TestRemovedAdsLandOnEveryReplica: replica A removes an ad; replica C,
// started afterwards with an empty data directory, lands the links A
// issued for it on its last landing, and still answers 404 for an id no
// catalog had. A replica whose feed still has the ad serves it from its
// catalog, not as removed; once the ad is back in the feed, it lands on
// its new landing, on a replica started then too, and once gone again on
// its last landing. Once the links' time is up, the ad is a 404 on every
// replica and its record is gone from Postgres.
func TestRemovedAdsLandOnEveryReplica(t *testing.T) {
	pgURL, redisURL := testpg.New(t), testredis.Start(t, testredis.Options{}).URL()
	clock := &testClock{now: time.Now().UTC()}
	dir := t.TempDir()
	path, older := filepath.Join(dir, "feed.jsonl"), filepath.Join(dir, "older.jsonl")
	writeFile(t, path, feed(t, handies(8, "old", 100_000)))
	const oldLanding, newLanding = "https://shop.example/old/SHOP.1.H7", "https://shop.example/new/SHOP.1.H7"

	a := removedMember(t, "A", pgURL, redisURL, path, clock, nil)
	link := signedLinks(t, a.Handler)["SHOP.1.H7"]
	if link == "" {
		t.Fatal("no link of SHOP.1.H7 on A")
	}
	writeFile(t, path, feed(t, handies(7, "old", 100_000)))
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload on A: %+v", r)
	}
	if _, ok := a.Catalog().Removed["SHOP.1.H7"]; !ok {
		t.Fatal("A does not keep SHOP.1.H7 as removed")
	}

	c := removedMember(t, "C", pgURL, redisURL, path, clock, nil)
	if _, ok := c.Indexes.All().Lookup("SHOP.1.H7"); ok {
		t.Fatal("C's catalog has SHOP.1.H7")
	}
	if status, to := land(c.Handler, link); status != http.StatusFound || to != oldLanding {
		t.Errorf("A's link of the removed ad on C: %d to %q, want 302 to %s", status, to, oldLanding)
	}
	if status, _ := land(c.Handler, madeUp(t, link, "SHOP.1.H99")); status != http.StatusNotFound {
		t.Errorf("a made-up id on C: %d, want 404", status)
	}
	// C's own data directory keeps it for a restart with Postgres down.
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(c.DataFile), RemovedFile)); err != nil || !strings.Contains(string(b), oldLanding) {
		t.Errorf("C's removed ads' file: %v %.200s", err, b)
	}

	// A replica whose feed still has the ad, at another landing, serves
	// it from its catalog: the ad is not both removed and current.
	writeFile(t, older, feed(t, handies(8, "older", 100_000)))
	b := removedMember(t, "B", pgURL, "", older, clock, nil)
	if _, ok := b.Catalog().Removed["SHOP.1.H7"]; ok {
		t.Error("B, whose catalog has SHOP.1.H7, keeps it as removed too")
	}
	if status, to := land(b.Handler, link); status != http.StatusFound || to != "https://shop.example/older/SHOP.1.H7" {
		t.Errorf("the link on B: %d to %q, want 302 to its catalog's landing", status, to)
	}

	// Back in the feed, the ad lands where the feed says, on the replicas
	// that followed and on one started now, though Postgres still keeps
	// its removal.
	writeFile(t, path, feed(t, handies(8, "new", 100_000)))
	if r := c.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload on C: %+v", r)
	}
	a.serving(t, c.Catalog().Version)
	e := removedMember(t, "E", pgURL, redisURL, path, clock, nil)
	for _, r := range []*member{a, c, e} {
		if _, ok := r.Catalog().Removed["SHOP.1.H7"]; ok {
			t.Errorf("%s keeps SHOP.1.H7 as removed while its catalog has it", r.name)
		}
		if status, to := land(r.Handler, link); status != http.StatusFound || to != newLanding {
			t.Errorf("the link on %s with the ad back: %d to %q, want 302 to %s", r.name, status, to, newLanding)
		}
	}

	// Gone again, later, the ad's links land on its last landing until
	// their time is up, and then on no replica, old or new.
	clock.advance(time.Minute)
	writeFile(t, path, feed(t, handies(7, "new", 100_000)))
	if r := c.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload on C: %+v", r)
	}
	a.serving(t, c.Catalog().Version)
	e.serving(t, c.Catalog().Version)
	f := removedMember(t, "F", pgURL, redisURL, path, clock, nil)
	if status, to := land(f.Handler, link); status != http.StatusFound || to != newLanding {
		t.Errorf("the link on F, started after the second removal: %d to %q, want 302 to %s", status, to, newLanding)
	}
	clock.advance(c.Catalog().Removed["SHOP.1.H7"].Until.Sub(clock.Now()) + time.Second)
	g := removedMember(t, "G", pgURL, redisURL, path, clock, nil)
	for _, r := range []*member{a, c, e, f, g} {
		if status, _ := land(r.Handler, link); status != http.StatusNotFound {
			t.Errorf("the link on %s once its time is up: %d, want 404", r.name, status)
		}
	}
	var rows int
	if err := g.pg.Pool().QueryRow(t.Context(), `SELECT count(*) FROM removed_ads`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("removed_ads keeps %d rows once their time is up (%v), want none", rows, err)
	}
}

// TestRemovedAdsSharedOncePostgresAnswers: a refresh that removes an ad
// while Postgres is down swaps its catalog in all the same, lands the
// ad's links, keeps it in the data directory and says so; the next
// refresh, Postgres back, shares it, and a replica started then lands its
// links too.
func TestRemovedAdsSharedOncePostgresAnswers(t *testing.T) {
	pg := testpg.Start(t)
	redisURL := testredis.Start(t, testredis.Options{}).URL()
	clock := &testClock{now: time.Now().UTC()}
	path := filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, path, feed(t, handies(8, "old", 100_000)))
	const landing = "https://shop.example/old/SHOP.1.H6"

	logs := &syncLog{}
	a := removedMember(t, "A", pg.URL(), redisURL, path, clock, logs)
	link := signedLinks(t, a.Handler)["SHOP.1.H6"]
	if link == "" {
		t.Fatal("no link of SHOP.1.H6 on A")
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, feed(t, withoutAd(handies(8, "old", 100_000), "SHOP.1.H6")))
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload on A with Postgres down: %+v", r)
	}
	if status, to := land(a.Handler, link); status != http.StatusFound || to != landing {
		t.Errorf("the removed ad's link on A: %d to %q, want 302 to %s", status, to, landing)
	}
	if !strings.Contains(logs.String(), "removed ads: not shared") {
		t.Errorf("A's log does not say the removed ads were not shared:\n%s", logs)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(a.DataFile), RemovedFile)); err != nil || !strings.Contains(string(b), landing) {
		t.Errorf("A's removed ads' file: %v %.200s", err, b)
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	if r := a.Reload(context.Background(), false); r.Result != resultUnchanged {
		t.Fatalf("reload on A with Postgres back: %+v", r)
	}
	d := removedMember(t, "D", pg.URL(), redisURL, path, clock, nil)
	if status, to := land(d.Handler, link); status != http.StatusFound || to != landing {
		t.Errorf("A's link of the ad removed while Postgres was down, on D: %d to %q, want 302 to %s\n%s", status, to, landing, logs)
	}
}
