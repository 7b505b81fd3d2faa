package siteshards_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adlink/adlink"
	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// icecat reads the Icecat catalog from the shared data, or skips.
func icecat(tb testing.TB) []match.Ad {
	dir := filepath.Join(dataDir(tb), "catalog", "icecat")
	ads, err := testcatalog.Icecat(dir)
	if err != nil {
		tb.Skipf("skipping: no Icecat catalog at %s (%v); see ../shared/data/README.md", dir, err)
	}
	return ads
}

// served is what the demo server sends a page's first view besides the
// shard, with zstd as a browser accepts it: the module, widget.js and the
// manifest.
type served struct {
	module, widget, manifest int
	manifestBody             string
}

// get fetches a path as a browser would and returns the body's bytes on
// the wire.
func get(b *testing.B, base, path string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %.200s", path, resp.StatusCode, body)
	}
	return len(body), string(body)
}

// demoServer serves the demo catalog as make run does and fetches what a
// first view of the demo article fetches besides the shard. It skips when
// matcher.wasm is not built.
func demoServer(b *testing.B, lang string) served {
	cfg := config.Default()
	cfg.Demo, cfg.DataDir, cfg.RedirectURL = true, b.TempDir(), "http://localhost:8080"
	a, err := app.New(cfg, app.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	if a.Shards.Matcher() == nil {
		b.Skip("skipping: matcher.wasm is not built; run make wasm")
	}
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	var s served
	s.widget, _ = get(b, srv.URL, "/widget.js")
	s.module, _ = get(b, srv.URL, a.Shards.MatcherURL())
	s.manifest, s.manifestBody = get(b, srv.URL, "/v2/shards?"+url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {lang}}.Encode())
	return s
}

// demoArticle is the demo article's title and text, as the page's matcher
// reads them, and its language.
func demoArticle(b *testing.B) (title, text, lang string) {
	html, err := fs.ReadFile(adlink.Web, "web/demo/article.html")
	if err != nil {
		b.Fatal(err)
	}
	ex, err := pages.ExtractPage(string(html), "http://localhost:8080/demo/article.html")
	if err != nil {
		b.Fatal(err)
	}
	return ex.Title, ex.Text, ex.Lang
}

// shardBytes is what a page fetches of a shard to match a page: the shard,
// then the fragments its answer needs, with zstd.
func shardBytes(b *testing.B, shard []byte, frags [][]byte, q match.Query) (bytes int, ads int) {
	ix, err := match.Open(shard)
	if err != nil {
		b.Fatal(err)
	}
	bytes = zstdLen(b, shard)
	hits := ix.Match(&q)
	for _, k := range ix.Missing(hits) {
		bytes += zstdLen(b, frags[k])
	}
	return bytes, len(hits)
}

func zstdLen(b *testing.B, data []byte) int {
	blob, err := shards.NewBlob(data, "application/octet-stream")
	if err != nil {
		b.Fatal(err)
	}
	return blob.Size(shards.Zstd)
}

// germanIndex is the index of a catalog's German market.
func germanIndex(b *testing.B, ads []match.Ad) *match.Index {
	mi, err := market.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	return pickIndex(mi, "de", "de")
}

// BenchmarkFirstViewBytes counts the bytes of a cold first view of the
// demo article that the server has not analysed, matched in the page, as
// a page in Germany (loc=de: with the demo catalog and Icecat the same
// market as without), with the demo catalog, Icecat (19,406 products) and
// 1,000,000 generated ones:
// the module, the manifest, the shard and the fragments the page's answer
// needs, and widget.js, each as served with zstd. The shard is the site
// shard a site never seen gets (the market's head), beside the market's
// whole shard (index and fragments), what a page fetched before site
// shards. The module, widget.js and the demo's manifest come from the demo
// server over loopback; the manifest of a site shard counts the demo's
// plus the fields it adds.
func BenchmarkFirstViewBytes(b *testing.B) {
	title, text, lang := demoArticle(b)
	common := demoServer(b, lang)
	q := match.Query{Page: true, Title: title, Text: text, Country: "de", Lang: lang}
	for _, c := range []struct {
		name, suffix string
		// index is the German market's, which answers the article.
		index func(*testing.B) (*match.Index, int)
	}{
		{"demo", "", func(b *testing.B) (*match.Index, int) {
			ads, err := catalog.Demo(catalog.Options{BaseURL: "http://localhost:8080"})
			if err != nil {
				b.Fatal(err)
			}
			return germanIndex(b, ads), len(ads)
		}},
		{"icecat", "-icecat", func(b *testing.B) (*match.Index, int) {
			ads := icecat(b)
			return germanIndex(b, ads), len(ads)
		}},
		// The German market alone: its index is the one the whole
		// catalog's market.Build makes for it.
		{"1M", "-1M", func(b *testing.B) (*match.Index, int) {
			ads := testcatalog.Generate(1_000_000, 1)
			ix, err := match.Build(inMarket(ads, "de", "de"))
			if err != nil {
				b.Fatal(err)
			}
			return ix, len(ads)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ix, nAds := c.index(b)
			var site, whole, siteAds, wholeAds, manifest, wholeManifest int
			for range b.N {
				shard, frags := shards.PageShard(ix)
				whole, wholeAds = shardBytes(b, shard, frags, q)
				svc := siteshards.New(siteshards.Options{HeadWait: 1 << 62})
				sh := svc.Pick(context.Background(), siteshards.Request{Version: "v", Index: ix, MarketBytes: marketBytes(b, shard, frags), Site: "demo", Country: "de", Lang: lang})
				svc.Close()
				manifest, wholeManifest = common.manifest, common.manifest
				if len(frags) > 0 && !strings.Contains(common.manifestBody, `"fragments"`) {
					wholeManifest += len(fmt.Sprintf(`,"fragments":%d`, len(frags)))
				}
				if sh == nil { // the market's own shard fits: served as it is
					site, siteAds = whole, wholeAds
				} else {
					var fb [][]byte
					for _, f := range sh.Fragments {
						fb = append(fb, f.Bytes(shards.Identity))
					}
					site, siteAds = shardBytes(b, sh.Blob.Bytes(shards.Identity), fb, q)
					manifest += len(`,"selection":"head"`)
					if len(fb) > 0 {
						manifest += len(fmt.Sprintf(`,"fragments":%d`, len(fb)))
					}
				}
			}
			rest := common.module + common.widget
			siteKB, wholeKB := float64(site+rest+manifest)/1e3, float64(whole+rest+wholeManifest)/1e3
			b.ReportMetric(siteKB, "KB-first-view"+c.suffix)
			b.ReportMetric(wholeKB, "KB-first-view-whole-market"+c.suffix)
			b.ReportMetric(siteKB/wholeKB, "of-whole-market"+c.suffix)
			b.ReportMetric(0, "ns/op")
			fmt.Printf("first view of the demo article, %s catalog (%d ads, market of %d): module %.1f KB, widget.js %.1f KB, manifest %.2f KB, shard and fragments %.1f KB (%d ads shown); the market's whole shard: %.1f KB (%d ads shown)\n",
				c.name, nAds, ix.Len(), float64(common.module)/1e3, float64(common.widget)/1e3, float64(manifest)/1e3, float64(site)/1e3, siteAds, float64(whole)/1e3, wholeAds)
		})
	}
}

// marketBytes is a whole shard's bytes with zstd, fragments included, or
// for a large one, more than any budget.
func marketBytes(b *testing.B, shard []byte, frags [][]byte) int {
	if len(shard) > 4<<20 {
		return 1 << 40
	}
	n := zstdLen(b, shard)
	for _, f := range frags {
		n += zstdLen(b, f)
	}
	return n
}

// inMarket keeps the ads that run in a market: its index is the one the
// whole catalog's market.Build makes for it.
func inMarket(ads []match.Ad, country, lang string) []match.Ad {
	var out []match.Ad
	for _, a := range ads {
		for _, m := range a.Markets {
			if m.Country == country && m.Lang == lang {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// BenchmarkTop3Agreement: for each of the shared articles the server
// finds ads for with Icecat, the share of the server's top 3 (its answer
// once it has analysed the page, from the whole catalog) that the page's
// matcher shows on the first view, on the shard of a site whose profile
// was learnt from the other articles (leave-one-out), beside the share on
// the market's whole shard.
func BenchmarkTop3Agreement(b *testing.B) {
	ads := icecat(b)
	mi, err := market.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	arts := loadArticles(b, mi.All())
	for range b.N {
		site, whole, n := agreement(b, mi, arts, siteshards.DefaultBudget)
		b.ReportMetric(site, "top3-agreement")
		b.ReportMetric(whole, "top3-agreement-whole-market")
		b.ReportMetric(site/whole, "of-whole-market")
		b.ReportMetric(float64(n), "top3-ads")
		b.ReportMetric(0, "ns/op")
	}
}
