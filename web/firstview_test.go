package web

import (
	_ "embed"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

var (
	// matchEarly, called with a text, calls adlink.matchText with it the
	// moment the widget defines adlink, into window.earlyMatch.
	//
	//go:embed testdata/firstview/match_early.js
	matchEarly string
	//go:embed testdata/firstview/early_links.js
	earlyLinks string
	//go:embed testdata/firstview/match_links.js
	matchLinks string
	//go:embed testdata/firstview/steps.js
	timingSteps string
	// fragmentsSearch, called with q and fields, is adlink.search's answer
	// in the German market, as JSON.
	//
	//go:embed testdata/firstview/search_json.js
	fragmentsSearch string
)

// TestArticleFirstView: the first view of the demo article, which the
// server has never seen, shows in-text links and an ad box matched in the
// page; once the server has analysed it, its answer is shown instead.
func TestArticleFirstView(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	page := b.firstView("article.html")
	r := br.view(t, page)
	if r.Source != "local" {
		t.Fatalf("first view: ads from %q, want local (the server cannot have analysed the page yet)", r.Source)
	}
	p := eval[placed](t, br, placedScript)
	checkPlaced(t, b, p)
	t.Logf("first view: %d in-text links, %d box ads, first ad after %.1f ms", len(p.Intext), len(p.Box), p.FirstAdMs)
	br.noConsoleErrors(t)

	b.waitAnalysed(t, page)
	br.do(t, chromedp.Reload())
	if r := eval[readyResult](t, br, widgetReady); r.Source != "server" || r.Links == 0 {
		t.Errorf("after analysis: %+v, want the server's ads", r)
	}
	checkPlaced(t, b, eval[placed](t, br, placedScript))
	br.noConsoleErrors(t)
}

// TestAnalysedPageMatchesOnDemand: on a page the server has analysed, the
// widget shows the server's ads, and the page's own code can still match in
// the page, whether it asks before the server's answer or after.
func TestAnalysedPageMatchesOnDemand(t *testing.T) {
	b := startBackend(t)
	view := b.firstView("article.html")
	q := url.Values{"url": {view}, "api_key": {"demo"}, "site_id": {"demo"}}
	res, err := http.Get(b.URL + "/v2/page/link?" + q.Encode()) // pending: the server analyses the page
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	b.waitAnalysed(t, view)
	const text = "Das Apple iPhone 15 und gute Kopfhörer"
	for _, early := range []bool{false, true} {
		br := newBrowser(t)
		if early {
			// Call adlink.matchText the moment the widget defines adlink,
			// before the server can have answered.
			br.onEveryPage(t, jsCall(matchEarly, text))
		}
		if r := br.view(t, view); r.Source != "server" || r.Links == 0 {
			t.Fatalf("early=%v: %+v, want the server's ads", early, r)
		}
		if early {
			if n := eval[int](t, br, earlyLinks); n == 0 {
				t.Errorf("adlink.matchText before the answer found no ads")
			}
		}
		if n := evalCall[int](t, br, matchLinks, text); n == 0 {
			t.Errorf("early=%v: adlink.matchText after the answer found no ads", early)
		}
		br.noConsoleErrors(t)
	}
}

// TestFragmentsFirstView: where the market's shard comes in fragments, as
// a large catalog's does, the first view fetches the index and then the
// fragments of the ads it shows, and places them; adlink.search answers
// what the server answers, every field.
func TestFragmentsFirstView(t *testing.T) {
	br := newBrowser(t)
	b := startCutBackend(t)
	before := b.requestCounts()
	if r := br.view(t, b.firstView("article.html")); r.Source != "local" {
		t.Fatalf("first view: ads from %q, want local", r.Source)
	}
	checkPlaced(t, b, eval[placed](t, br, placedScript))
	fetched := 0
	for path, n := range b.requestCounts() {
		if strings.HasPrefix(path, "/v2/shards/") && strings.Count(path, "/") == 4 {
			if n -= before[path]; n > 1 {
				t.Errorf("%s fetched %d times", path, n)
			}
			fetched += n
		}
	}
	steps := eval[map[string]float64](t, br, timingSteps)
	if fetched == 0 || !(steps["need"] > 0 && steps["fragments"] >= steps["need"]) {
		t.Errorf("%d fragments fetched, steps %v: the page did not load its ads' fragments", fetched, steps)
	}
	t.Logf("%d fragments fetched; steps %v", fetched, steps)
	for _, q := range []string{"kopfhörer", "samsung galaxy", "iphone 15"} {
		v := url.Values{"q": {q}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"},
			"fields": {"price,logo,description,manufacturer,gtin,category,advertiser"}}
		body := get(t, b.URL+"/v2/search/link?"+v.Encode())
		if !strings.Contains(string(body), `"title"`) {
			t.Errorf("%q: the server has no ads; the test compares nothing", q)
		}
		local := evalCall[string](t, br, fragmentsSearch, q, v.Get("fields"))
		if a, s := unsignedJSON(t, []byte(local)), unsignedJSON(t, body); !reflect.DeepEqual(a, s) {
			t.Errorf("%q: adlink.search gives %s\nserver %s", q, local, body)
		}
	}
	// The searches needed fragments of their own; none was fetched twice.
	for path, n := range b.requestCounts() {
		if strings.HasPrefix(path, "/v2/shards/") && strings.Count(path, "/") == 4 && n-before[path] > 1 {
			t.Errorf("%s fetched %d times", path, n-before[path])
		}
	}
	br.noConsoleErrors(t)
}
