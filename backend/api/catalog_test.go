package api

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// scrape returns what the metrics say, as the admin listener serves them.
func scrape(t testing.TB, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	NewAdmin(AdminDeps{Metrics: m}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("admin /metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

// catalogVersion builds a Catalog of ads under a version name.
func catalogVersion(t *testing.T, version string, ads []match.Ad) *Catalog {
	t.Helper()
	ix, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	set, err := shards.Build(ix, shards.Options{RedirectURL: "https://r.example"})
	if err != nil {
		t.Fatal(err)
	}
	return &Catalog{Version: version, Indexes: ix, Shards: set}
}

// TestCatalogSwap checks that every answer names the catalog version it
// came from, that a request reads the catalog once, and that after a swap
// removed ads still land their click links until their time is up and
// earlier shards are served until theirs.
func TestCatalogSwap(t *testing.T) {
	all := fixture()
	old := catalogVersion(t, "v1", all)
	var removedAd match.Ad
	var kept []match.Ad
	for _, a := range all {
		if a.ID == "OTTO.2.555" {
			removedAd = a
			continue
		}
		kept = append(kept, a)
	}
	next := catalogVersion(t, "v2", kept)
	next.Retired = []Retired{{Shards: old.Shards, Until: testClock.Add(time.Hour)}}
	next.Removed = map[string]Removed{removedAd.ID: {Ad: removedAd, Until: testClock.Add(time.Hour)}}

	var cur atomic.Pointer[Catalog]
	cur.Store(old)
	var loads atomic.Int32
	now := testClock
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	h := NewServer(Deps{Config: cfg, Partners: testPartners(t),
		Clicks:  &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }},
		Catalog: func() *Catalog { loads.Add(1); return cur.Load() },
		Now:     func() time.Time { return now }})
	get := func(target string) *http.Response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec.Result()
	}

	res := get("/v2/search/link?q=handy&api_key=demo&site_id=demo")
	if v := res.Header.Get("X-Adlink-Catalog"); v != "v1" {
		t.Errorf("X-Adlink-Catalog %q, want v1", v)
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("a search read the catalog %d times, want once", n)
	}
	manifest := string(readBody(t, get("/v2/shards?api_key=demo&site_id=demo")))
	oldShard := old.Shards.Pick("", "").SHA256
	if !strings.Contains(manifest, oldShard) {
		t.Fatalf("manifest does not name the whole catalog's shard: %s", manifest)
	}

	cur.Store(next)
	if v := get("/healthz").Header.Get("X-Adlink-Catalog"); v != "v2" {
		t.Errorf("after the swap X-Adlink-Catalog %q, want v2", v)
	}
	if oldShard == next.Shards.Pick("", "").SHA256 {
		t.Fatal("the new catalog's shard has the old address")
	}
	// A page that holds the old manifest still gets the old shard.
	if res := get("/v2/shards/" + oldShard); res.StatusCode != http.StatusOK {
		t.Errorf("old shard during its grace: %s", res.Status)
	}
	// A click link issued for the removed ad still lands on its page.
	res = get("/v1/redirect?type=search&adId=OTTO.2.555&adType=product&api_key=demo&site_id=demo&criterionId=handy")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != removedAd.Landing {
		t.Errorf("removed ad's click: %s to %q, want 302 to %q: %s", res.Status, res.Header.Get("Location"), removedAd.Landing, readBody(t, res))
	}
	// It is no longer offered.
	if strings.Contains(string(readBody(t, get("/v2/search/link?q=nokia+lumia&api_key=demo&site_id=demo"))), "OTTO.2.555") {
		t.Error("the removed ad is still offered")
	}

	now = testClock.Add(2 * time.Hour)
	if res := get("/v2/shards/" + oldShard); res.StatusCode != http.StatusNotFound {
		t.Errorf("old shard after its grace: %s, want 404", res.Status)
	}
	if res := get("/v1/redirect?type=search&adId=OTTO.2.555&adType=product&api_key=demo&site_id=demo&criterionId=handy"); res.StatusCode != http.StatusNotFound {
		t.Errorf("removed ad's click after its links expired: %s, want 404", res.Status)
	}
}

func TestReadyzCatalogState(t *testing.T) {
	c := catalogVersion(t, "abc", fixture())
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := NewServer(Deps{Config: config.Default(), Partners: testPartners(t), Clicks: &clickRecorder{},
		Catalog: func() *Catalog { return c },
		CatalogState: func() CatalogState {
			return CatalogState{Version: "abc", Ads: 10, LoadedAt: at,
				LastRefresh: &RefreshState{At: at, Result: "failed", Error: "feed.xml: answered 500"}}
		}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	want := `{"status":"ready","catalog":{"version":"abc","ads":10,"loaded_at":"2026-01-02T03:04:05Z",` +
		`"last_refresh":{"at":"2026-01-02T03:04:05Z","result":"failed","error":"feed.xml: answered 500"}}}`
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("readyz: %d %s\nwant %s", rec.Code, rec.Body, want)
	}
}

func TestAdmin(t *testing.T) {
	var forced []bool
	h := NewAdmin(AdminDeps{Metrics: metrics.New(), Reload: func(_ context.Context, force bool) Reload {
		forced = append(forced, force)
		if force {
			return Reload{Result: "swapped", Version: "v2", Ads: 1}
		}
		return Reload{Result: "refused", Version: "v1", Ads: 9, Error: "lost 8 of 9 ads"}
	}})
	do := func(method, target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "http://127.0.0.1"+target, nil))
		return rec
	}
	if rec := do(http.MethodPost, "/admin/reload"); rec.Code != http.StatusConflict ||
		rec.Body.String() != `{"result":"refused","version":"v1","ads":9,"error":"lost 8 of 9 ads"}` {
		t.Errorf("refused reload: %d %s", rec.Code, rec.Body)
	}
	if rec := do(http.MethodPost, "/admin/reload?force=true"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"swapped"`) {
		t.Errorf("forced reload: %d %s", rec.Code, rec.Body)
	}
	if rec := do(http.MethodPost, "/admin/reload?force=maybe"); rec.Code != http.StatusBadRequest {
		t.Errorf("force=maybe: %d", rec.Code)
	}
	if rec := do(http.MethodGet, "/admin/reload"); rec.Code == http.StatusOK {
		t.Errorf("GET /admin/reload: %d, want a refusal", rec.Code)
	}
	if rec := do(http.MethodGet, "/metrics"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("admin /metrics: %d", rec.Code)
	}
	if len(forced) != 2 || forced[0] || !forced[1] {
		t.Errorf("reloads %v, want [false true]", forced)
	}
	// No state file to back up here; one whose copy fails at once says so.
	if rec := do(http.MethodGet, "/admin/backup"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /admin/backup with nothing to back up: %d, want 404", rec.Code)
	}
	failing := NewAdmin(AdminDeps{Backup: func() (*os.File, error) { return nil, errors.New("disk gone") }})
	rec := httptest.NewRecorder()
	failing.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/admin/backup", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "backup failed: disk gone") {
		t.Errorf("a failed backup: %d %s", rec.Code, rec.Body)
	}
	// The public port takes no POST, the reload least of all.
	pub := NewServer(Deps{Config: config.Default(), Indexes: mustBuild(t), Partners: testPartners(t), Clicks: &clickRecorder{}})
	rec = httptest.NewRecorder()
	pub.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/admin/reload", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("public POST /admin/reload: %d, want 405", rec.Code)
	}
}

func mustBuild(t *testing.T) *market.Set {
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestCatalogWithoutAccounts: with no partners and report readers given
// at start-up, a catalog version served without its own answers 500, and
// authorizes no key nor report token (no earlier set is fallen back on).
func TestCatalogWithoutAccounts(t *testing.T) {
	bare := catalogVersion(t, "bare", fixture())
	h := NewServer(Deps{Config: config.Default(), Clicks: &clickRecorder{},
		Catalog: func() *Catalog { return bare }})
	for _, c := range []struct {
		path string
		h    http.Header
	}{
		{"/v2/search/link?q=handy&loc=de&api_key=demo&site_id=demo", nil},
		{"/v2/report", http.Header{"Authorization": {"Bearer some-report-token-0123"}}},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		maps.Copy(req.Header, c.h)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%s without the version's accounts: %d, want 500: %.200s", c.path, rec.Code, rec.Body)
		}
	}
}
