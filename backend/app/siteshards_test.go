package app

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

type manifestShard struct {
	Selection string `json:"selection"`
	Market    string `json:"market"`
	Shard     struct {
		URL       string `json:"url"`
		SHA256    string `json:"sha256"`
		Fragments int    `json:"fragments"`
		Bytes     struct {
			Zstd int `json:"zstd"`
		} `json:"bytes"`
	} `json:"shard"`
}

// TestSiteShardsServed: where a market's shard is over -site-shard-kb,
// the manifest names a shard within it, the market's head for a site
// whose pages the server has not analysed, and the site's own once it
// has; shard and fragments are served by their address, and a site that
// is not the key's gets none.
func TestSiteShardsServed(t *testing.T) {
	ads := testcatalog.Generate(3000, 9)
	// Pages of the demo site, on loopback, about the German ads of the
	// lowest bids.
	pageSrv := lowBidPages(t, ads)

	cfg := testConfig(t)
	cfg.SiteShardKB = 20
	cfg.FetchAllowPrivate = true
	a, err := New(cfg, Options{Ads: ads})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	manifest := func(siteID string, want int) manifestShard {
		t.Helper()
		status, body := get(t, a.Handler, "/v2/shards?api_key=demo&site_id="+siteID+"&loc=de&lang=de")
		if status != want {
			t.Fatalf("manifest for site %q: %d, want %d: %.300s", siteID, status, want, body)
		}
		var m manifestShard
		if status == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	// served fetches a shard and its fragments as a page does, and
	// returns their bytes with zstd.
	served := func(m manifestShard) int {
		t.Helper()
		n := 0
		for k := -1; k < m.Shard.Fragments; k++ {
			u := m.Shard.URL
			if k >= 0 {
				u += fmt.Sprintf("/%d", k)
			}
			req := httptest.NewRequest(http.MethodGet, u, nil)
			req.Header.Set("Accept-Encoding", "zstd")
			rec := httptest.NewRecorder()
			a.Handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "zstd" {
				t.Fatalf("%s: %d %q", u, rec.Code, rec.Header().Get("Content-Encoding"))
			}
			n += rec.Body.Len()
		}
		return n
	}

	own := a.Catalog().Shards.Pick("de", "de")
	if own.Size(0) <= 20_000 {
		t.Fatalf("the market's own shard is %d bytes: the test needs it over the budget", own.Size(0))
	}
	// The first manifest starts the market's head; on a busy machine its
	// build can outlast the wait a manifest allows, so wait for it.
	manifest("demo", http.StatusOK)
	if err := a.SiteShards.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	head := manifest("demo", http.StatusOK)
	if head.Selection != "head" || head.Market != "de-DE" || head.Shard.SHA256 == own.SHA256 {
		t.Fatalf("a site the server knows nothing of: %+v; want the market's head", head)
	}
	if n := served(head); n > 20_000 || n < 10_000 {
		t.Errorf("the head is %d bytes with zstd, fragments included; budget 20000", n)
	}

	// The server analyses the site's pages and answers them: the site's
	// profile.
	for k := range 4 {
		u := url.QueryEscape(fmt.Sprintf("%s/p/%d", pageSrv.URL, k))
		path := "/v2/page/link?api_key=demo&site_id=demo&loc=de&url=" + u
		if status, body := get(t, a.Handler, path); status != http.StatusAccepted {
			t.Fatalf("first request of page %d: %d %.200s", k, status, body)
		}
		if err := a.Pages.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if status, body := get(t, a.Handler, path); status != http.StatusOK || !strings.Contains(body, `"ad"`) {
			t.Fatalf("page %d once analysed: %d %.300s", k, status, body)
		}
	}
	manifest("demo", http.StatusOK) // queues the site's build
	if err := a.SiteShards.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	site := manifest("demo", http.StatusOK)
	if site.Selection != "site" || site.Shard.SHA256 == head.Shard.SHA256 {
		t.Fatalf("once its pages are analysed: %+v; want the site's own shard", site)
	}
	if n := served(site); n > 20_000 {
		t.Errorf("the site's shard is %d bytes with zstd; budget 20000", n)
	}
	if again := manifest("demo", http.StatusOK); again.Shard.SHA256 != site.Shard.SHA256 {
		t.Error("the site's shard changed with nothing new")
	}

	if _, metrics := get(t, a.Admin, "/metrics"); !strings.Contains(metrics, `adlink_site_shard_builds_total{kind="site"} 1`) ||
		!strings.Contains(metrics, `adlink_site_shard_builds_total{kind="head"} 1`) {
		t.Error("/metrics does not count one site shard and one head built")
	}
	// Another partner's site, or none: refused as the market's manifest is.
	manifest("other", http.StatusForbidden)
	if status, _ := get(t, a.Handler, "/v2/shards?api_key=demo&loc=de&lang=de"); status != http.StatusBadRequest {
		t.Errorf("manifest without site_id: %d, want 400", status)
	}
	if status, _ := get(t, a.Handler, "/v2/shards?api_key=nobody&site_id=demo&loc=de&lang=de"); status != http.StatusUnauthorized {
		t.Errorf("manifest for an unknown key: %d, want 401", status)
	}
	// A shard address that is no shard's.
	if status, _ := get(t, a.Handler, "/v2/shards/"+strings.Repeat("0", 64)); status != http.StatusNotFound {
		t.Errorf("unknown shard: %d, want 404", status)
	}
	if status, _ := get(t, a.Handler, site.Shard.URL+"/999"); status != http.StatusNotFound {
		t.Errorf("a fragment past the last: %d, want 404", status)
	}
}

// lowBidPages serves, on loopback, four pages of a site about the German
// ads of ads with the lowest bids, three ads a page (/p/0 to /p/3), and
// returns the server.
func lowBidPages(t *testing.T, ads []match.Ad) *httptest.Server {
	t.Helper()
	var low []match.Ad
	for _, a := range ads {
		if len(a.Markets) > 0 && a.Markets[0] == (match.Market{Country: "de", Lang: "de"}) && a.Category != "" && a.BidMicros <= 60_000 {
			low = append(low, a)
		}
	}
	if len(low) < 12 {
		t.Fatalf("%d low-bid German ads", len(low))
	}
	pageSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var k int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &k); err != nil || k >= 4 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html lang=de><head><title>%s</title></head><body><article><h1>%s</h1>", html.EscapeString(low[3*k].Category), html.EscapeString(low[3*k].Title))
		for _, a := range low[3*k : 3*k+3] {
			fmt.Fprintf(w, "<p>Wir haben %s getestet. %s überzeugt im Alltag und ist eine gute Wahl für alle, die %s suchen.</p>",
				html.EscapeString(a.Title), html.EscapeString(a.Title), html.EscapeString(a.Category))
		}
		fmt.Fprint(w, "</article></body></html>")
	}))
	t.Cleanup(pageSrv.Close)
	return pageSrv
}
