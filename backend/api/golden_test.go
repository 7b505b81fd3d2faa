package api

import (
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/internal/golden"
	"github.com/adlink/adlink/match"
)

// goldenDir holds whole responses over the demo catalog, one request each.
var goldenDir = filepath.Join("..", "..", "testdata", "golden")

// demoEnv serves the embedded demo catalog as "make run" does.
func demoEnv(t testing.TB) *testEnv {
	t.Helper()
	return demoEnvWith(t, nil)
}

// demoEnvWith is demoEnv with its limiters made by limiter (Deps.Limiter).
func demoEnvWith(t testing.TB, limiter func(kind string) ratelimit.Limiter) *testEnv {
	t.Helper()
	ads, err := catalog.Demo(catalog.Options{BaseURL: "http://localhost:8080"})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, ads)
	cfg := config.Default()
	cfg.RedirectURL = "http://localhost:8080"
	// The HTTP benchmark sends thousands of requests with the demo key.
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	env.handler = NewServer(Deps{Config: cfg, Indexes: env.indexes, Partners: testPartners(t), Clicks: &clickRecorder{},
		Limiter: limiter})
	return env
}

// TestGolden compares whole responses with testdata/golden/*.txt: the
// request, the status line, the content type and the exact body (kept
// pretty-printed in the file). Run with -update to rewrite them after a
// deliberate change, and read the diff.
func TestGolden(t *testing.T) {
	env := demoEnv(t)
	tests := []struct{ name, target string }{
		{"search_lg_handy_de", "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo"},
		{"search_lg_handy_de_de", "/v2/search/link?q=lg+handy&loc=de&lang=de&api_key=demo&site_id=demo"},
		{"search_lg_handy_jsonp", "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo&callback=adlink.cb"},
		{"search_fields", "/v2/search/link?q=handy&loc=de&lang=de&api_key=demo&site_id=demo&fields=price,manufacturer,logoad_type,gtin,advertiser,category&logo.dim=90X90&size=3"},
		{"search_no_ads", "/v2/search/link?q=zzqqxx&api_key=demo&site_id=demo"},
		{"search_bad_size", "/v2/search/link?q=lg+handy&api_key=demo&site_id=demo&size=51"},
		{"search_unknown_key", "/v2/search/link?q=lg+handy&api_key=nope&site_id=demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := env.get(t, tt.target, nil, "")
			head := "GET " + tt.target + "\n" + res.Proto + " " + res.Status + "\n" +
				"Content-Type: " + res.Header.Get("Content-Type") + "\n\n"
			golden.CheckTranscript(t, filepath.Join(goldenDir, tt.name+".txt"), head, readBody(t, res))
		})
	}
}

// The seed's documented example over the demo catalog, checked field by
// field so that a golden file cannot be updated into a wrong answer.
func TestSeedExampleOverDemoCatalog(t *testing.T) {
	env := demoEnv(t)
	for _, q := range []string{"q=lg+handy&loc=de", "q=lg+handy&loc=de&lang=de"} {
		t.Run(q, func(t *testing.T) {
			links := env.search(t, q, nil, "")
			if len(links) < 2 {
				t.Fatalf("%d links: %v", len(links), adIDs(links))
			}
			adv := links[0]
			wantAd := "http://localhost:8080/v1/redirect?type=search&adId=handy-bestkauf.de&adType=advertiser&api_key=demo&site_id=demo&criterionId=lg+handy"
			if adv.Ad != wantAd || !slices.Equal(adv.Keywords, []string{"lg handy"}) || !slices.Equal(adv.DisplayType, []string{"link"}) {
				t.Errorf("first link %+v\nwant ad %s, keywords [lg handy], display_type [link]", adv, wantAd)
			}
			i := slices.IndexFunc(links, func(l link) bool { return l.click.Get("adId") == "AMAZON.1.B00JVL2X1I" })
			if i < 0 {
				t.Fatalf("no AMAZON.1.B00JVL2X1I in %v", adIDs(links))
			}
			p := links[i]
			if !slices.Equal(p.Keywords, []string{"handy"}) || p.click.Get("adType") != "product" ||
				p.click.Get("criterionId") != "handy" || !slices.Contains(p.DisplayType, "widget") ||
				!strings.Contains(p.Title, "Lumia 630") {
				t.Errorf("product link %+v", p)
			}
			for _, l := range links {
				u, _ := url.Parse(l.Ad)
				if u.Query().Get("api_key") != "demo" || u.Query().Get("site_id") != "demo" {
					t.Errorf("ad %s", l.Ad)
				}
			}
		})
	}
}

// Every demo market answers a search in its language.
func TestDemoMarkets(t *testing.T) {
	env := demoEnv(t)
	for _, tt := range []struct{ loc, lang, q string }{{"de", "de", "handy"}, {"us", "en", "phone"}, {"gb", "en", "phone"}} {
		links := env.search(t, "q="+tt.q+"&loc="+tt.loc+"&lang="+tt.lang+"&ctx.dist=low", nil, "")
		if len(links) == 0 {
			t.Errorf("%s-%s %q: no ads", tt.lang, tt.loc, tt.q)
		}
		ix := env.indexes.For(tt.loc, tt.lang)
		if ix == nil || !slices.Contains(ix.Markets(), match.Market{Country: tt.loc, Lang: tt.lang}) {
			t.Errorf("no index for %s-%s", tt.lang, tt.loc)
		}
	}
	var resp struct{ Link []json.RawMessage }
	res := env.get(t, "/v2/search/link?q=handy&api_key=demo&site_id=demo", nil, "")
	if err := json.Unmarshal(readBody(t, res), &resp); err != nil || res.StatusCode != http.StatusOK {
		t.Fatal(res.StatusCode, err)
	}
}
