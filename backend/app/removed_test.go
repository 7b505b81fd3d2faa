package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// TestRemovedAdsLinksLandAfterARestart: a link shown for an ad that a
// refresh then removed, clicked after the server restarted on the same
// data directory, lands on the ad's last landing and bills its last bid,
// as it does before the restart; an ad the feed has again is served as
// the feed says.
func TestRemovedAdsLinksLandAfterARestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "feed.jsonl")
	writeFile(t, path, feed(t, handies(8, "old", 100_000)))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e6, 1e6, 1e6, 1e6
	start := func() (*App, *httptest.Server) {
		t.Helper()
		a, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return a, httptest.NewServer(a.Handler)
	}
	a, srv := start()
	// The signed links of two searches: each answer's decision bills once.
	var links []string
	for range 2 {
		res, err := http.Get(srv.URL + "/v2/search/link?q=lg+handy&loc=de&size=50&api_key=demo&site_id=demo")
		if err != nil {
			t.Fatal(err)
		}
		var ans struct{ Link []struct{ Ad string } }
		err = json.NewDecoder(res.Body).Decode(&ans)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ans.Link {
			if strings.Contains(l.Ad, "adId=SHOP.1.H7&") {
				u, _ := url.Parse(l.Ad)
				links = append(links, u.RequestURI())
			}
		}
	}
	if len(links) != 2 {
		t.Fatalf("%d links of SHOP.1.H7, want 2", len(links))
	}
	writeFile(t, path, feed(t, handies(7, "old", 100_000)))
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload: %+v", r)
	}
	click := func(a *App, srv *httptest.Server, link string, n int) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+link, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", n))
		clicks.Navigation.Header(req.Header)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		const want = "https://shop.example/old/SHOP.1.H7"
		if res.StatusCode != http.StatusFound || res.Header.Get("Location") != want {
			t.Fatalf("click %d on the removed ad: %d to %q, want 302 to %s", n, res.StatusCode, res.Header.Get("Location"), want)
		}
		id := res.Header.Get("X-Adlink-Click")
		var got clicks.Click
		if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
			if c.ID == id {
				got = c
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !got.Billable || got.BidMicros != 100_000 {
			t.Errorf("click %d on the removed ad: billable %v (%q) at %d micros, want billable at 100000", n, got.Billable, got.Reason, got.BidMicros)
		}
	}
	click(a, srv, links[0], 1)
	srv.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	a, srv = start()
	defer func() {
		srv.Close()
		a.Close()
	}()
	click(a, srv, links[1], 2)

	// Back in the feed, the ad is the feed's again, not the kept one's.
	writeFile(t, path, feed(t, handies(8, "new", 100_000)))
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("reload: %+v", r)
	}
	srv.Close()
	a.Close()
	a, srv = start()
	if _, ok := a.Catalog().Removed["SHOP.1.H7"]; ok {
		t.Error("an ad back in the feed is still kept as removed after a restart")
	}
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, RemovedFile)); err != nil || strings.Contains(string(b), "SHOP.1.H7") {
		t.Errorf("the removed ads' file after the ad came back: %v %s", err, b)
	}
}

// FuzzLoadRemoved: whatever the removed ads' file holds, it reads without
// a panic, and only into ads whose links land now, on a web URL, with no
// budget below nothing.
func FuzzLoadRemoved(f *testing.F) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f.Add([]byte(`[{"until":"2026-11-29T00:00:00Z","ad":{"ID":"SHOP.1.H7","Kind":1,"Landing":"https://shop.example/p"}}]`))
	f.Add([]byte(`[{"until":"2026-11-27T00:00:00Z","ad":{"ID":"X","Landing":"javascript:alert(1)"}}]`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[{"until":"2026-11-29T00:00:00Z","ad":{"ID":"SHOP.1.H9","Landing":"https://shop.example/p"},"budget":{"daily_micros":500000,"currency":"EUR"}},` +
		`{"until":"2026-11-29T00:00:00Z","ad":{"ID":"SHOP.1.H8","Landing":"https://shop.example/p"},"budget":{"daily_micros":-1}}]`))
	ix, err := match.Build(handies(2, "p", 1))
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), RemovedFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		removed, err := loadRemoved(path, now, ix)
		if err != nil && removed != nil {
			t.Errorf("an error (%v) and %d ads", err, len(removed))
		}
		for id, r := range removed {
			if _, back := ix.Lookup(id); back || id != r.Ad.ID || !now.Before(r.Until) || !catalog.IsWebURL(r.Ad.Landing) || r.Budget.DailyMicros < 0 {
				t.Errorf("%s kept: %+v", id, r)
			}
		}
	})
}

// TestMergeRemoved: of the removed ads the replicas share, those the
// catalog has again, whose time is up, or whose landing is no web URL
// are left out; of an ad kept here too, the one whose links land longer
// wins; the map merged into is not changed.
func TestMergeRemoved(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ix, err := match.Build(handies(2, "p", 1)) // SHOP.1.H0, SHOP.1.H1
	if err != nil {
		t.Fatal(err)
	}
	ad := func(id, landing string) match.Ad { return match.Ad{ID: id, Landing: landing} }
	own := map[string]api.Removed{
		"SHOP.1.A": {Ad: ad("SHOP.1.A", "https://shop.example/own-a"), Until: now.Add(2 * time.Hour)},
		"SHOP.1.B": {Ad: ad("SHOP.1.B", "https://shop.example/own-b"), Until: now.Add(time.Hour)},
	}
	shared := []catalog.RemovedAd{
		{Ad: ad("SHOP.1.A", "https://shop.example/shared-a"), Until: now.Add(time.Hour)},
		{Ad: ad("SHOP.1.B", "https://shop.example/shared-b"), Until: now.Add(3 * time.Hour)},
		{Ad: ad("SHOP.1.H0", "https://shop.example/back"), Until: now.Add(time.Hour)},
		{Ad: ad("SHOP.1.OLD", "https://shop.example/old"), Until: now},
		{Ad: ad("SHOP.1.JS", "javascript:alert(1)"), Until: now.Add(time.Hour)},
		{Ad: ad("", "https://shop.example/none"), Until: now.Add(time.Hour)},
		{Ad: ad("SHOP.1.C", "https://shop.example/shared-c"), Until: now.Add(time.Hour),
			Budget: accounts.Budget{DailyMicros: 250_000, Currency: "EUR"}},
	}
	merged, added := mergeRemoved(own, shared, ix, now)
	want := map[string]string{"SHOP.1.A": "https://shop.example/own-a", "SHOP.1.B": "https://shop.example/shared-b",
		"SHOP.1.C": "https://shop.example/shared-c"}
	if !added || len(merged) != len(want) {
		t.Fatalf("merged %v (added %v), want %v", merged, added, want)
	}
	for id, landing := range want {
		if merged[id].Ad.Landing != landing {
			t.Errorf("%s lands on %q, want %s", id, merged[id].Ad.Landing, landing)
		}
	}
	if b := merged["SHOP.1.C"].Budget; b.DailyMicros != 250_000 || b.Currency != "EUR" {
		t.Errorf("SHOP.1.C merged with the budget %+v, want the shared one's", b)
	}
	if len(own) != 2 || own["SHOP.1.B"].Ad.Landing != "https://shop.example/own-b" {
		t.Errorf("the map merged into changed: %v", own)
	}
	if _, added := mergeRemoved(merged, shared, ix, now); added {
		t.Error("merging the same ads again added some")
	}
}
