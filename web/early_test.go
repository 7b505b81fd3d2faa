package web

import (
	_ "embed"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

var (
	// moduleRequests counts the page's requests for matcher.wasm.
	//
	//go:embed testdata/early/module_requests.js
	moduleRequests string
	// placedHrefs lists the addresses of the ads the widget placed.
	//
	//go:embed testdata/early/placed_hrefs.js
	placedHrefs string
	// earlyMemory is the widget's memory of the demo site, as stored.
	//
	//go:embed testdata/early/memory.js
	earlyMemory string
	// hostileMemory writes the widget's memory as an attacker would.
	//
	//go:embed testdata/early/hostile_memory.js
	hostileMemory string
)

// analysed returns a first view's URL of the demo article that the server
// has analysed.
func analysed(t *testing.T, b *backend) string {
	t.Helper()
	page := b.firstView("article.html")
	q := url.Values{"url": {page}, "api_key": {"demo"}, "site_id": {"demo"}}
	res, err := http.Get(b.URL + "/v2/page/link?" + q.Encode()) // pending: the server analyses the page
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	b.waitAnalysed(t, page)
	return page
}

// TestEarlyStartUnseenPage: a reader's first view of a page the server has
// not analysed asks for the module with the page's ads, before the
// server's pending answer, and shows the module's ads, having fetched the
// module once.
func TestEarlyStartUnseenPage(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	if r := br.view(t, b.firstView("article.html")); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	checkPlaced(t, b, eval[placed](t, br, placedScript))
	st := eval[steps](t, br, stepsScript)
	if !st.has("early") {
		t.Errorf("steps %v: the view did not start early", st)
	}
	if st.has("dropped") {
		t.Errorf("steps %v: the view dropped what it started, on a pending answer", st)
	}
	// The module's request leaves in the widget's first task, before any
	// answer can be in its hands.
	if !(st["module.sent"] <= st["page_link"]) {
		t.Errorf("steps %v: matcher.wasm was asked for once the server's answer was in", st)
	}
	if n := eval[int](t, br, moduleRequests); n != 1 {
		t.Errorf("matcher.wasm requested %d times, want once", n)
	}
	br.noConsoleErrors(t)

	// Without data-early="true" (the default) or with "false": nothing
	// starts before the answer, and the page still gets the module's ads.
	plain := publisherPage("de-DE", b.URL, `<article><p>`+handyText+`</p></article>`)
	site := publisher(t, map[string]string{"/page.html": plain,
		"/off.html": strings.Replace(plain, ` data-base=`, ` data-early="false" data-base=`, 1)})
	for _, page := range []string{"/page.html", "/off.html"} {
		if r := br.view(t, site+page); r.Source != "local" || r.Links == 0 {
			t.Fatalf("%s: %+v, want ads matched in the page", page, r)
		}
		if st := eval[steps](t, br, stepsScript); st.has("early") || !(st["module.sent"] >= st["page_link"]) {
			t.Errorf("%s: steps %v, want the module asked for after the answer", page, st)
		}
	}
	br.noConsoleErrors(t)
}

// TestKnownPageDropsEarlyStart: a reader new to the site views a page the
// server has analysed: the widget starts the module early (it cannot tell),
// then shows the server's ads alone, drops the module and matches nothing.
// It remembers the page, and the next view of it starts nothing early; nor
// does an unseen page after three views the server knew, which still gets
// the module's ads the usual way.
func TestKnownPageDropsEarlyStart(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	page := analysed(t, b)
	if r := br.view(t, page); r.Source != "server" || r.Links == 0 {
		t.Fatalf("analysed page: %+v, want the server's ads", r)
	}
	checkPlaced(t, b, eval[placed](t, br, placedScript))
	st := eval[steps](t, br, stepsScript)
	if !st.has("early") || !st.has("dropped") {
		t.Errorf("steps %v: want the view to have started early and dropped it", st)
	}
	if st.has("matched") {
		t.Errorf("steps %v: the module matched the page, whose ads the server had", st)
	}
	// Every ad placed is the server's, signed: none of the module's, whose
	// links carry the manifest's token and would be reported for a click
	// token.
	br.noConsoleErrors(t) // also waits for anything late
	hrefs := eval[[]string](t, br, placedHrefs)
	if len(hrefs) == 0 {
		t.Fatal("no ads placed")
	}
	for _, h := range hrefs {
		if !strings.Contains(h, "&sig=") || strings.Contains(h, "&tok=") {
			t.Errorf("ad %s is not the server's", h)
		}
	}
	if !(eval[placed](t, br, placedScript).FirstAdMs > 0) {
		t.Error("no first ad timed")
	}

	// The same page again, twice more: the widget remembers it, and the
	// server is not asked for the module, with the browser's cache emptied
	// before each view. (A request made and aborted in the same task as the
	// memory's read still reaches the server.)
	asked := b.requestCounts()["/matcher.wasm"]
	for i := range 2 {
		send(t, br, network.ClearBrowserCache, cdp.Empty{})
		if r := br.view(t, page); r.Source != "server" {
			t.Fatalf("view %d of the analysed page: %+v", i+2, r)
		}
		if eval[steps](t, br, stepsScript).has("early") {
			t.Errorf("view %d of a page the server answered here: started early (memory %s)", i+2, eval[string](t, br, earlyMemory))
		}
		br.noConsoleErrors(t)
		b.inflight.Wait()
		if n := b.requestCounts()["/matcher.wasm"] - asked; n != 0 {
			t.Errorf("view %d of a page the server answered here: the server had %d requests for matcher.wasm", i+2, n)
		}
	}
	// Three views in a row that the server knew: a new page starts nothing
	// early, and gets the module's ads once the server says pending.
	if r := br.view(t, b.firstView("article.html")); r.Source != "local" || r.Links == 0 {
		t.Fatalf("unseen page after known ones: %+v, want ads matched in the page", r)
	}
	if eval[steps](t, br, stepsScript).has("early") {
		t.Errorf("unseen page after three known ones started early (memory %s)", eval[string](t, br, earlyMemory))
	}
	br.noConsoleErrors(t)
}

// TestEarlyStartModuleFails: where matcher.wasm cannot be fetched, a view
// that started it early still settles: with the server's ads on a page it
// has analysed, with none and nothing thrown on an unseen one.
func TestEarlyStartModuleFails(t *testing.T) {
	b := startBackend(t)
	target, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/matcher.wasm" {
			w.Header().Set("Access-Control-Allow-Origin", "*")
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(failing.Close)
	body := `<article><p>` + handyText + `</p></article>`
	site := publisher(t, map[string]string{"/known.html": earlyPage("de-DE", failing.URL, body), "/new.html": earlyPage("de-DE", failing.URL, body)})
	q := url.Values{"url": {site + "/known.html"}, "api_key": {"demo"}, "site_id": {"demo"}}
	res, err := http.Get(b.URL + "/v2/page/link?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	b.waitAnalysed(t, site+"/known.html")

	for _, tc := range []struct{ page, source string }{{"/known.html", "server"}, {"/new.html", "none"}} {
		br := newBrowser(t)
		r := br.view(t, site+tc.page)
		if r.Source != tc.source || (tc.source == "server") != (r.Links > 0) {
			t.Errorf("%s with matcher.wasm failing: %+v, want ads from %q", tc.page, r, tc.source)
		}
		if !eval[steps](t, br, stepsScript).has("early") {
			t.Errorf("%s: a reader new to the site did not start early", tc.page)
		}
		// The failed requests are logged; nothing else may be.
		eval[int](t, br, settle)
		br.mu.Lock()
		for _, e := range br.errors {
			if !strings.Contains(e, "status of 503") {
				t.Errorf("%s: console: %s", tc.page, e)
			}
		}
		br.mu.Unlock()
		br.close()
	}
}

// TestEarlyStartHostileMemory: whatever a page's script writes where the
// widget keeps its memory of the site, the view gets its ads and the
// widget asks nothing of any server but its own (and the page's).
func TestEarlyStartHostileMemory(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{"/page.html": earlyPage("de-DE", b.URL, `<article><p>`+handyText+`</p></article>`)})
	left := make(chan string, 16)
	intercept(t, br, interception{local: []string{b.URL + "/", site + "/"}, left: left})
	br.onEveryPage(t, hostileMemory)
	for i := range 2 {
		br.do(t, chromedp.Navigate(site+"/page.html?v="+string(rune('a'+i))))
		if r := eval[readyResult](t, br, widgetReady); r.Links == 0 {
			t.Errorf("view %d with a hostile memory: %+v, want ads", i+1, r)
		}
	}
	br.noConsoleErrors(t)
	for {
		select {
		case u := <-left:
			t.Errorf("requested %s", u)
		default:
			return
		}
	}
}

// has tells whether the view reached step k.
func (s steps) has(k string) bool {
	_, ok := s[k]
	return ok
}

// earlyPage is publisherPage with the early start turned on.
func earlyPage(lang, base, body string) string {
	return strings.Replace(publisherPage(lang, base, body), ` data-base=`, ` data-early="true" data-base=`, 1)
}
