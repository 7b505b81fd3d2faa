package web

import (
	_ "embed"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var (
	// surrogatesPage is the page's script that puts lone surrogates into
	// its title and into #p.
	//
	//go:embed testdata/hostile/surrogates_page.js
	surrogatesPage string
	//go:embed testdata/hostile/surrogates_match.js
	surrogatesMatch string
	//go:embed testdata/hostile/surrogates_search.js
	surrogatesSearch string
	// pageLinkRequests is the URL of every request to /v2/page/link.
	//
	//go:embed testdata/hostile/page_link_requests.js
	pageLinkRequests string
	// pollute is the page's script that adds to Object.prototype.
	//
	//go:embed testdata/hostile/pollute.js
	pollute string
	// placedURLs is the href of every link the widget placed, the src of
	// every image, and the URL of every request to the API.
	//
	//go:embed testdata/hostile/placed_urls.js
	placedURLs string
)

// TestLoneSurrogates: text with an unpaired UTF-16 surrogate, which the
// DOM and document.title can hold but encodeURIComponent refuses, is
// still matched: in the page, by adlink.matchText and by adlink.search.
func TestLoneSurrogates(t *testing.T) {
	br, _, r := openPage(t, `<article><h1>Handy-Test</h1><p id="p">`+handyText+`</p></article>
`+inlineScript(surrogatesPage))
	if r.Source != "local" || r.Links == 0 {
		t.Errorf("page: %+v, want ads matched in the page", r)
	}
	if n := eval[int](t, br, surrogatesMatch); n == 0 {
		t.Errorf("adlink.matchText found no ads")
	}
	if n := eval[int](t, br, surrogatesSearch); n == 0 {
		t.Errorf("adlink.search found no ads")
	}
	br.noConsoleErrors(t)
}

// heldPageTimeout holds the widget's 10 s deadline (AbortSignal.timeout)
// for the test to reach (window.pageTimeout) as the clock would, once the
// server holds the request for the page's ads; window.pageTimeout exists
// only when that request's signal is a 10 s AbortSignal.timeout's. The
// test reads that the request had its deadline and what the widget does
// past it, not how long it waited. Other timeouts stay real.
const heldPageTimeout = `(() => {
  const timeout = AbortSignal.timeout.bind(AbortSignal);
  const held = new Map();
  AbortSignal.timeout = (ms) => {
    if (ms !== 10000) return timeout(ms);
    const c = new AbortController();
    held.set(c.signal, c);
    return c.signal;
  };
  const f = window.fetch;
  window.fetch = (u, o) => {
    const c = o && held.get(o.signal);
    if (String(u).includes("/v2/page/link") && c) {
      window.pageTimeout = () => c.abort(new DOMException("signal timed out", "TimeoutError"));
    }
    return f(u, o);
  };
})()`

// TestStalledServerTimesOut: a server that takes the request for the
// page's ads and never answers does not keep adlink.ready from settling;
// the widget matches in the page instead.
func TestStalledServerTimesOut(t *testing.T) {
	br := newBrowser(t)
	br.onEveryPage(t, heldPageTimeout)
	b := startBackend(t)
	target, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	stalling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/page/link" {
			select {
			case held <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(stalling.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the stalled request
	site := publisher(t, map[string]string{
		"/page.html": publisherPage("de-DE", stalling.URL, `<article><p>`+handyText+`</p></article>`),
	})
	br.do(t, chromedp.Navigate(site+"/page.html"))
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the page never asked the server for its ads")
	}
	if !eval[bool](t, br, `typeof window.pageTimeout === "function" && (window.pageTimeout(), true)`) {
		t.Fatal("the page's request for its ads has no 10 s deadline")
	}
	if r := eval[readyResult](t, br, widgetReady); r.Source != "local" || r.Links == 0 {
		t.Errorf("%+v, want ads matched in the page", r)
	}
}

// TestPageURLSent: the page's address goes to the server without its
// fragment, which can hold a token and which browsers never send; and a
// page whose address the server will not take (over 2 KB) still gets ads,
// matched in the page.
func TestPageURLSent(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{
		"/page.html": publisherPage("de-DE", b.URL, "<article><p>"+handyText+"</p></article>"),
	})
	r := br.view(t, site+"/page.html?v=1#access_token=SECRET")
	sent := eval[[]string](t, br, pageLinkRequests)
	if len(sent) != 1 || strings.Contains(sent[0], "SECRET") || !strings.Contains(sent[0], url.QueryEscape("/page.html?v=1")) {
		t.Errorf("asked %q; want the address without its fragment", sent)
	}
	if r.Links == 0 {
		t.Errorf("%+v, want ads", r)
	}
	if r := br.view(t, site+"/page.html?long="+strings.Repeat("x", 2100)); r.Source != "local" || r.Links == 0 {
		t.Errorf("a 2 KB address: %+v, want ads matched in the page", r)
	}
	if n := len(eval[[]string](t, br, pageLinkRequests)); n != 0 {
		t.Errorf("a 2 KB address: %d requests to /v2/page/link, which refuses it", n)
	}
	br.noConsoleErrors(t)
}

// TestHostilePage: a page that added to Object.prototype still gets its
// ads, with no stray parameter in the requests; and an answer whose ad or
// logo URL is not http(s) (a javascript: URL would run in the page) has
// none of it placed. The answer is the server's, rewritten in the page.
func TestHostilePage(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	const bad = "javascript:document.title='owned'"
	answerPageWith(t, br, `{"link": [
		{"title": "Bad", "keywords": ["iPhone 15"], "ad": "`+bad+`", "display_type": ["link", "widget"], "logo": "https://logo.example/a.png"},
		{"title": "Bad logo", "keywords": ["Samsung"], "ad": "http://ads.example/x", "display_type": ["link", "widget"], "logo": "`+bad+`"}
	]}`)
	site := publisher(t, map[string]string{
		"/page.html": strings.Replace(publisherPage("de-DE", b.URL, "<article><p>"+handyText+"</p></article>"),
			"<script async", inlineScript(pollute)+"<script async", 1),
	})
	if r := br.view(t, site+"/page.html"); r.Source != "server" {
		t.Fatalf("%+v, want the (rewritten) server answer", r)
	}
	type result struct {
		Hrefs, Srcs, Asked []string
	}
	got := eval[result](t, br, placedURLs)
	if !reflect.DeepEqual(got.Hrefs, []string{"http://ads.example/x", "http://ads.example/x"}) || len(got.Srcs) != 0 {
		t.Errorf("placed hrefs %q, logos %q; want only the http ad, in the text and the box, without its logo", got.Hrefs, got.Srcs)
	}
	for _, u := range got.Asked {
		if strings.Contains(u, "evil") {
			t.Errorf("a request carries the page's Object.prototype: %s", u)
		}
	}
	br.noConsoleErrors(t)
}
