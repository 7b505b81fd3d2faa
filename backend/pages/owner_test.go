package pages

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/internal/testnet"
)

// hosts serves several host names from one loopback server: each name
// resolves to its address and its requests go to its own handler.
type hosts struct {
	port int
	mu   sync.Mutex
	hits map[string]int // requests per host name, robots.txt included
	at   map[string]int // requests per host name and path ("host/path")
}

func serveHosts(t *testing.T, handlers map[string]http.HandlerFunc) (*hosts, *Fetcher) {
	t.Helper()
	noRobots := make(map[string]http.HandlerFunc)
	names := make(map[string]string)
	for name, fn := range handlers {
		noRobots[name] = func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			fn(w, r)
		}
		names[name] = "127.0.0.1"
	}
	h := serveHostsOn(t, "127.0.0.1", noRobots)
	return h, newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: testnet.Resolver(names)})
}

// serveHostsOn serves each host name of handlers, robots.txt included,
// on one server at addr; other names are not found.
func serveHostsOn(t *testing.T, addr string, handlers map[string]http.HandlerFunc) *hosts {
	t.Helper()
	h := &hosts{hits: make(map[string]int), at: make(map[string]int)}
	ts := testnet.ServeOn(t, addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _ := net.SplitHostPort(r.Host)
		h.mu.Lock()
		h.hits[name]++
		h.at[name+r.URL.Path]++
		h.mu.Unlock()
		if fn := handlers[name]; fn != nil {
			fn(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	h.port = ts.Listener.Addr().(*net.TCPAddr).Port
	return h
}

// url returns the page URL of path on host.
func (h *hosts) url(host, path string) string {
	return fmt.Sprintf("http://%s:%d%s", host, h.port, path)
}

func (h *hosts) hitsOf(host string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[host]
}

// hitsAt is the requests of a host name and path ("host/path").
func (h *hosts) hitsAt(hostPath string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.at[hostPath]
}

// htmlWith is a page about its topic, declaring canonical when not "".
func htmlWith(canonical, topic string) string {
	link := ""
	if canonical != "" {
		link = `<link rel="canonical" href="` + canonical + `">`
	}
	return `<!doctype html><html lang="en"><head><title>` + topic + `</title>` + link + `</head><body><article><h1>` + topic +
		`</h1><p>A long review of the ` + topic + ` with everything a reader wants to know about the ` + topic +
		`, its battery, its screen and its price, written after two weeks of daily use.</p></article></body></html>`
}

func writeHTML(w http.ResponseWriter, doc string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, doc)
}

// analyse looks pageURL up, runs the queue dry and returns what is known.
func analyse(t *testing.T, e *env, pageURL string) *Result {
	t.Helper()
	if _, err := e.svc.Lookup(context.Background(), pageURL); err != nil {
		t.Fatalf("Lookup %s: %v", pageURL, err)
	}
	drain(t, e.svc)
	res, err := e.svc.Lookup(context.Background(), pageURL)
	if err != nil {
		t.Fatalf("Lookup %s: %v", pageURL, err)
	}
	return res
}

func getRecord(t *testing.T, e *env, u string) Record {
	t.Helper()
	rec, err := e.q.Get(context.Background(), u)
	if err != nil || rec == nil {
		t.Fatalf("Get %s = %v, %v", u, rec, err)
	}
	return *rec
}

// TestCanonicalCannotReplaceOwnAnalysis: a page on the same host that
// declares an analysed page its canonical does not replace that page's
// analysis; it shares it.
func TestCanonicalCannotReplaceOwnAnalysis(t *testing.T) {
	var h *hosts
	h, f := serveHosts(t, map[string]http.HandlerFunc{
		"pub.test": func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/article":
				writeHTML(w, htmlWith("", "Apple iPhone 5"))
			case "/comments/evil":
				writeHTML(w, htmlWith(h.url("pub.test", "/article"), "Nokia Lumia 630"))
			default:
				http.NotFound(w, r)
			}
		},
	})
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{})
	e.svc.Start()
	article := h.url("pub.test", "/article")
	if res := analyse(t, e, article); res.Status != StatusAnalysed || !strings.Contains(res.Title, "iPhone 5") {
		t.Fatalf("article: %+v", res)
	}
	before := getRecord(t, e, article)

	evil := analyse(t, e, h.url("pub.test", "/comments/evil"))
	after := getRecord(t, e, article)
	if after.Title != before.Title || after.Text != before.Text || !after.At.Equal(before.At) || after.Source != "" {
		t.Errorf("the article's analysis was replaced: %+v, was %+v", after, before)
	}
	if evil.Status != StatusAnalysed || evil.URL != article || evil.Title != before.Title {
		t.Errorf("the page naming it shares the article's analysis: %+v", evil)
	}
	if res, _ := e.svc.Lookup(context.Background(), article); strings.Contains(res.Title, "Nokia") {
		t.Errorf("the article is served the other page's analysis: %+v", res)
	}
}

// TestCanonicalThroughOpenRedirect: the publisher's open redirect leads to
// a page elsewhere that names one of the publisher's pages its canonical.
// The redirect leaves the site's domains, so the analysis fails, the
// other host is not contacted and the named page gets nothing.
func TestCanonicalThroughOpenRedirect(t *testing.T) {
	var h *hosts
	h, f := serveHosts(t, map[string]http.HandlerFunc{
		"pub.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/go" {
				http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
				return
			}
			http.NotFound(w, r)
		},
		"evil.test": func(w http.ResponseWriter, r *http.Request) {
			writeHTML(w, htmlWith(h.url("pub.test", "/article"), "Nokia Lumia 630"))
		},
	})
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{
		Sites: SitesOf([][]string{{"pub.test"}, {"evil.test"}})})
	e.svc.Start()
	page, err := Canonical(h.url("pub.test", "/go?to="+h.url("evil.test", "/p")))
	if err != nil {
		t.Fatal(err)
	}
	res := analyse(t, e, page)
	if res.Status != StatusFailed || res.Reason != "redirected off the site's domains" {
		t.Errorf("through the open redirect: %+v, want failed off the site's domains", res)
	}
	if rec, err := e.q.Get(context.Background(), h.url("pub.test", "/article")); rec != nil || err != nil {
		t.Errorf("the named page has a record: %+v, %v", rec, err)
	}
	if n := h.hitsOf("evil.test"); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
}

// TestRedirectHopsStayOnTheSite: every hop of a page's redirects must be
// on the domains of one site the page is on.
func TestRedirectHopsStayOnTheSite(t *testing.T) {
	var h *hosts
	page := func(w http.ResponseWriter, r *http.Request) { writeHTML(w, htmlWith("", "Apple iPhone 5")) }
	h, f := serveHosts(t, map[string]http.HandlerFunc{
		"pub.test": func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/off":
				http.Redirect(w, r, h.url("other.test", "/p"), http.StatusMovedPermanently)
			case "/www":
				http.Redirect(w, r, h.url("www.pub.test", "/p"), http.StatusMovedPermanently)
			case "/twice":
				// On the site, then off it.
				http.Redirect(w, r, h.url("www.pub.test", "/off"), http.StatusFound)
			default:
				http.NotFound(w, r)
			}
		},
		"www.pub.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/off" {
				http.Redirect(w, r, h.url("other.test", "/p"), http.StatusFound)
				return
			}
			page(w, r)
		},
		"other.test": page,
	})
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{
		Sites: SitesOf([][]string{{"pub.test"}, {"other.test"}})})
	e.svc.Start()
	for _, path := range []string{"/off", "/twice"} {
		if res := analyse(t, e, h.url("pub.test", path)); res.Status != StatusFailed || res.Reason != "redirected off the site's domains" {
			t.Errorf("%s: %+v, want failed off the site's domains", path, res)
		}
	}
	if n := h.hitsOf("other.test"); n != 0 {
		t.Errorf("the host off the site got %d requests", n)
	}
	if res := analyse(t, e, h.url("pub.test", "/www")); res.Status != StatusAnalysed {
		t.Errorf("a redirect to a subdomain of the site's domain: %+v, want analysed", res)
	}
	// A page on no registered site is not fetched at all.
	if res := analyse(t, e, h.url("stray.test", "/")); res.Status != StatusFailed || res.Reason != "page is not on the site's domains" {
		t.Errorf("a page on no site: %+v", res)
	}
}

// TestSiteHostsKeepsToOneSite: hops may not add up the domains of two
// sites that share the page's host.
func TestSiteHostsKeepsToOneSite(t *testing.T) {
	h := &siteHosts{sites: [][]string{{"shared.test", "a.test"}, {"shared.test", "b.test"}}}
	if !h.allow("shared.test") || !h.allow("www.a.test") {
		t.Fatal("hops on one site refused")
	}
	if h.allow("b.test") {
		t.Error("a hop onto another site's domain allowed")
	}
	if !h.allow("a.test") {
		t.Error("a refused hop changed the site")
	}
}

// TestUnresolvableHostSaysSo: a host that does not resolve is reported as
// one, not as robots.txt disallowing the fetch.
func TestUnresolvableHostSaysSo(t *testing.T) {
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: testnet.Resolver(nil)})
	_, err := f.Fetch(context.Background(), "http://nowhere.test/page", nil)
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != "host not found" || !errors.Is(err, ErrHostNotFound) {
		t.Fatalf("err %v, want host not found", err)
	}
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{})
	e.svc.Start()
	if res := analyse(t, e, "http://nowhere.test/page"); res.Status != StatusFailed || res.Reason != "host not found" {
		t.Errorf("analysis %+v, want failed: host not found", res)
	}
}

// TestJunkQueryVariantsMakeNoNewPages: once a page is known to declare its
// URL without a parameter as canonical, variants in that parameter are
// that page: they queue nothing, fetch nothing and cost no admission.
// Parameters it was not seen to ignore still make pages of their own.
func TestJunkQueryVariantsMakeNoNewPages(t *testing.T) {
	var h *hosts
	var fetched atomic.Int32
	h, f := serveHosts(t, map[string]http.HandlerFunc{
		"pub.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/story" {
				http.NotFound(w, r)
				return
			}
			fetched.Add(1)
			canonical := "/story"
			if id := r.URL.Query().Get("id"); id != "" {
				canonical += "?id=" + id
			}
			writeHTML(w, htmlWith(h.url("pub.test", canonical), "Apple iPhone 5"))
		},
	})
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{})
	e.svc.Start()
	ctx := context.Background()
	var admitted atomic.Int32
	admit := func() error { admitted.Add(1); return nil }

	first := h.url("pub.test", "/story?r=1")
	if _, err := e.svc.LookupAdmit(ctx, first, admit); err != nil {
		t.Fatal(err)
	}
	drain(t, e.svc)
	story := h.url("pub.test", "/story")
	for i := 2; i <= 30; i++ {
		res, err := e.svc.LookupAdmit(ctx, h.url("pub.test", fmt.Sprintf("/story?r=%d", i)), admit)
		if err != nil || res.Status != StatusAnalysed || res.URL != story || !strings.Contains(res.Title, "iPhone 5") {
			t.Fatalf("variant %d: %+v, %v; want the story's analysis", i, res, err)
		}
	}
	if n, _ := e.q.Len(ctx); n != 0 {
		t.Errorf("%d variants queued", n)
	}
	if admitted.Load() != 1 || fetched.Load() != 1 {
		t.Errorf("30 variants: admitted %d, fetched %d; want 1 and 1", admitted.Load(), fetched.Load())
	}

	// id is a parameter the story varies by: a new page, without r.
	res, err := e.svc.LookupAdmit(ctx, h.url("pub.test", "/story?id=7&r=31"), admit)
	if err != nil || res.Status != StatusPending || res.URL != h.url("pub.test", "/story?id=7") {
		t.Fatalf("another id: %+v, %v; want /story?id=7 pending", res, err)
	}
	drain(t, e.svc)
	if admitted.Load() != 2 || fetched.Load() != 2 {
		t.Errorf("admitted %d, fetched %d; want 2 and 2", admitted.Load(), fetched.Load())
	}
}

// TestCanonicalOfACanonicalThatMoved: a page shares the analysis of the
// canonical it names; when that canonical page, analysed again, names a
// canonical of its own (a site moving its pages), the page is answered
// with that one's analysis, not with an empty one until its own record
// is stale.
func TestCanonicalOfACanonicalThatMoved(t *testing.T) {
	var h *hosts
	var moved atomic.Bool
	h, f := serveHosts(t, map[string]http.HandlerFunc{
		"pub.test": func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/print/review":
				writeHTML(w, htmlWith(h.url("pub.test", "/review"), "Apple iPhone 5"))
			case "/review":
				canonical := ""
				if moved.Load() {
					canonical = h.url("pub.test", "/reviews/iphone-5")
				}
				writeHTML(w, htmlWith(canonical, "Apple iPhone 5"))
			case "/reviews/iphone-5":
				writeHTML(w, htmlWith("", "Apple iPhone 5"))
			default:
				http.NotFound(w, r)
			}
		},
	})
	var now atomic.Int64
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{Now: clock, TTL: 24 * time.Hour})
	e.svc.Start()
	review, print := h.url("pub.test", "/review"), h.url("pub.test", "/print/review")
	if res := analyse(t, e, review); res.Status != StatusAnalysed || !strings.Contains(res.Title, "iPhone 5") {
		t.Fatalf("review: %+v", res)
	}
	now.Store(start.Add(20 * time.Hour).UnixNano())
	if res := analyse(t, e, print); res.Status != StatusAnalysed || res.URL != review || !strings.Contains(res.Title, "iPhone 5") {
		t.Fatalf("print view shares the review's analysis: %+v", res)
	}
	// The review's analysis is stale: redone, it names its new URL.
	moved.Store(true)
	now.Store(start.Add(25 * time.Hour).UnixNano())
	if res := analyse(t, e, review); res.Status != StatusAnalysed || res.URL != h.url("pub.test", "/reviews/iphone-5") {
		t.Fatalf("review, moved: %+v", res)
	}
	res, err := e.svc.Lookup(context.Background(), print)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusAnalysed || !strings.Contains(res.Title, "iPhone 5") {
		t.Fatalf("print view after its canonical moved: %+v, want the moved review's analysis", res)
	}
}
