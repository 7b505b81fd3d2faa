package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/match"
)

// grinders are ads bidding on kaffeemühle, ids from-1 to to-1, landing
// under the path prefix and bidding bid micros.
func grinders(from, to int, prefix string, bid int64) []match.Ad {
	var ads []match.Ad
	for i := from; i < to; i++ {
		id := fmt.Sprintf("SHOP.1.G%d", i)
		ads = append(ads, match.Ad{ID: id, Kind: match.KindProduct, Title: fmt.Sprintf("Kaffeemühle Modell %d", i),
			Keywords: []string{"kaffeemühle"}, Landing: "https://shop.example/" + prefix + "/" + id, Advertiser: "shop.example",
			Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: bid})
	}
	return ads
}

// TestRefreshUnderLoad: while the catalog swaps back and forth between
// two feeds that share half their ads, searches, their clicks, shard
// manifests and their shards, asked over loopback at once, never get a
// 5xx, every answer's ads are those of the catalog its X-Adlink-Catalog
// names, and every link an answer gave lands, on its ad's landing page in
// one of the two catalogs, removed since or not.
func TestRefreshUnderLoad(t *testing.T) {
	a1, b1 := grinders(0, 20, "a", 100_000), grinders(10, 30, "b", 200_000)
	path := filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, path, feed(t, a1))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	cfg.CatalogMaxDrop = 1 // each swap loses half the ads
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e6, 1_000_000, 1e6, 1_000_000
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	ids := map[string]map[string]bool{} // version -> ad ids
	landings := map[string]map[string]bool{}
	for _, ads := range [][]match.Ad{b1, a1} {
		writeFile(t, path, feed(t, ads))
		r := a.Reload(context.Background(), false)
		if r.Result != resultSwapped {
			t.Fatalf("reload: %+v", r)
		}
		ids[r.Version] = map[string]bool{}
		for _, ad := range ads {
			ids[r.Version][ad.ID] = true
			if landings[ad.ID] == nil {
				landings[ad.ID] = map[string]bool{}
			}
			landings[ad.ID][ad.Landing] = true
		}
	}
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string) (*http.Response, []byte, error) {
		res, err := client.Get(srv.URL + path)
		if err != nil {
			return nil, nil, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		return res, body, err
	}
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		asked    atomic.Int64
		failMu   sync.Mutex
		failures []string
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
		stop.Store(true)
	}
	ask := func() {
		res, body, err := get("/v2/search/link?q=kaffeem%C3%BChle&loc=de&size=50&api_key=demo&site_id=demo")
		if err != nil || res.StatusCode != http.StatusOK {
			fail("search: %v %v %s", err, res, body)
			return
		}
		v := res.Header.Get("X-Adlink-Catalog")
		var ans struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal(body, &ans); err != nil || len(ans.Link) == 0 || ids[v] == nil {
			fail("search answer of version %q: %v %s", v, err, body)
			return
		}
		for _, l := range ans.Link {
			u, err := url.Parse(l.Ad)
			if err != nil {
				fail("link %q: %v", l.Ad, err)
				return
			}
			id := u.Query().Get("adId")
			if !ids[v][id] {
				fail("the answer of version %s has %s, which it does not", v, id)
			}
		}
		// A link of the answer, clicked after however many swaps.
		u, _ := url.Parse(ans.Link[int(asked.Load())%len(ans.Link)].Ad)
		res, body, err = get(u.RequestURI())
		if err != nil || res.StatusCode != http.StatusFound || !landings[u.Query().Get("adId")][res.Header.Get("Location")] {
			fail("click %s: %v %v %s", u.RequestURI(), err, res, body)
			return
		}
		res, body, err = get("/v2/shards?loc=de&lang=de&api_key=demo&site_id=demo")
		var m struct{ Shard struct{ URL string } }
		if err != nil || res.StatusCode != http.StatusOK || json.Unmarshal(body, &m) != nil || m.Shard.URL == "" {
			fail("manifest: %v %v %s", err, res, body)
			return
		}
		if res, body, err = get(m.Shard.URL); err != nil || res.StatusCode != http.StatusOK {
			fail("shard %s: %v %v %.80s", m.Shard.URL, err, res, body)
			return
		}
		asked.Add(1)
	}
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				ask()
			}
		})
	}
	for i := 0; i < 30 && !stop.Load(); i++ {
		ads := a1
		if i%2 == 0 {
			ads = b1
		}
		writeFile(t, path, feed(t, ads))
		if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
			fail("swap %d: %+v", i, r)
		}
	}
	stop.Store(true)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if asked.Load() == 0 {
		t.Error("no request was answered")
	}
}
