package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
)

// TestSiteProfileIsThePagesOwn: what a site's page teaches its profile is
// the page's own, whoever asked for it first and with whatever loc. The
// api_key and site_id are public, so anyone can ask for a site's pages
// as soon as they are analysed, before any reader, with a loc of a
// country no ad runs in (no ads, so nothing learnt) or of another market
// (that market's ads); were the first request's market what the page
// taught, the site's shard would stay the market's head, or be chosen
// from another market's ads, for as long as its pages stay its latest.
func TestSiteProfileIsThePagesOwn(t *testing.T) {
	ads := testcatalog.Generate(3000, 9)
	pageSrv := lowBidPages(t, ads)

	// The site's shard once its pages are analysed, with the pages asked
	// for first with loc=attack ("" for readers alone).
	siteShard := func(t *testing.T, attack string) manifestShard {
		cfg := testConfig(t)
		cfg.SiteShardKB = 20
		cfg.FetchAllowPrivate = true
		a, err := New(cfg, Options{Ads: ads})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ctx := context.Background()
		srv := httptest.NewServer(a.Handler)
		defer srv.Close()
		page := func(k int, loc string) (int, string) {
			t.Helper()
			u := "/v2/page/link?api_key=demo&site_id=demo&loc=" + loc + "&url=" + url.QueryEscape(fmt.Sprintf("%s/p/%d", pageSrv.URL, k))
			res, err := http.Get(srv.URL + u)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			return res.StatusCode, string(b)
		}
		manifest := func() manifestShard {
			t.Helper()
			res, err := http.Get(srv.URL + "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var m manifestShard
			if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("manifest: %d %v", res.StatusCode, err)
			}
			return m
		}
		manifest()
		if err := a.SiteShards.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if head := manifest(); head.Selection != "head" {
			t.Fatalf("before any page: %+v, want the market's head", head)
		}
		for k := range 4 {
			if status, body := page(k, "de"); status != http.StatusAccepted {
				t.Fatalf("first request of page %d: %d %.200s", k, status, body)
			}
			if err := a.Pages.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			// The attacker asks first, once the page is analysed;
			// readers after.
			if status, _ := page(k, attack); attack != "" && status != http.StatusOK {
				t.Fatalf("page %d with loc=%s: %d", k, attack, status)
			}
			if status, body := page(k, "de"); status != http.StatusOK || !strings.Contains(body, `"ad"`) {
				t.Fatalf("page %d for a reader: %d %.300s", k, status, body)
			}
		}
		manifest() // queues the site's build
		if err := a.SiteShards.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return manifest()
	}
	readers := siteShard(t, "")
	if readers.Selection != "site" {
		t.Fatalf("a site whose pages readers asked for: %+v; want the site's own shard", readers)
	}
	for _, attack := range []string{"zw", "us", "gb", "use_geo"} {
		t.Run("loc="+attack, func(t *testing.T) {
			if got := siteShard(t, attack); got.Selection != "site" || got.Shard.SHA256 != readers.Shard.SHA256 {
				t.Fatalf("a site whose pages were asked for first with loc=%s: %+v; want the site's own shard, %s", attack, got, readers.Shard.SHA256)
			}
		})
	}
}
