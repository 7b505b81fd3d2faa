package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/internal/golden"
	"github.com/adlink/adlink/match"
)

// iphoneAd is the seed's page example: the product a review of the Apple
// iPhone 5 must yield.
var iphoneAd = match.Ad{ID: "EBAY.4.291181826279", Kind: match.KindProduct, Title: "Apple iPhone 5 16GB weiß",
	Manufacturer: "Apple", Model: "iPhone 5", Category: "Mobiltelefon", PriceCents: 19900, Currency: "EUR",
	Logo: "https://img.example/iphone5-{dim}.png", Landing: "https://www.ebay.de/itm/291181826279",
	Advertiser: "ebay.de", Markets: []match.Market{mDE, mUS, mGB}, BidMicros: 250000}

const reviewPage = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Apple iPhone 5 review | Gadget Bench</title></head><body>
<nav><a href="/">Home</a> <a href="/nokia">Nokia Lumia 630 deals</a> <a href="/cases">Phone case offers</a></nav>
<article><h1>Apple iPhone 5 review</h1>
<p>The Apple iPhone 5 is the thinnest and lightest phone Apple has made so far. At 7.6 mm it is
noticeably slimmer than its predecessor, and at 112 grams it feels almost weightless in the hand.
Apple moved to a taller four-inch screen, which adds a fifth row of icons to the home screen.</p>
<p>The A6 chip makes the iPhone 5 about twice as fast as before in our benchmarks. Apps open
instantly and games run smoothly. Battery life is good for a full day of mixed use, and the
aluminium back feels far sturdier than the glass of the previous generation.</p></article>
<footer>Copyright Gadget Bench. Cell phone deals every day.</footer></body></html>`

type pageEnv struct {
	*testEnv
	base string // the page server, on 127.0.0.1 (a domain of the demo site)
	svc  *pages.Service
	q    *pages.Bolt
	rec  *recordingIndexes
}

// recordingIndexes records the indexes asked for by market, as
// "country-lang".
type recordingIndexes struct {
	market.Indexes
	mu    sync.Mutex
	asked []string
}

func (r *recordingIndexes) For(country, lang string) *match.Index {
	r.mu.Lock()
	r.asked = append(r.asked, country+"-"+lang)
	r.mu.Unlock()
	return r.Indexes.For(country, lang)
}

// take returns the markets asked for since the last take.
func (r *recordingIndexes) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.asked
	r.asked = nil
	return a
}

// newPageEnv serves the API with a real page context over a bbolt file and
// a loopback page server; the workers start when the test says so.
func newPageEnv(t *testing.T, maxQueue int, fo pages.FetchOptions) *pageEnv {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/review", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(reviewPage))
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<p>other</p>")) })
	for _, lang := range []string{"de", "cs"} {
		page := strings.Replace(reviewPage, `lang="en"`, `lang="`+lang+`"`, 1)
		mux.HandleFunc("/review-"+lang, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(page))
		})
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	ads := append(fixture()[:4:4], iphoneAd)
	ix, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "adlink.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := pages.OpenBolt(db, maxQueue)
	if err != nil {
		t.Fatal(err)
	}
	f := pages.NewFetcher(fo)
	svc := pages.NewService(q, f, func() pages.Reducer { return ix.All() }, pages.Options{})
	t.Cleanup(func() {
		svc.Stop()
		f.Close()
		db.Close()
	})
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9
	env := &testEnv{indexes: ix}
	rec := &recordingIndexes{Indexes: ix}
	env.handler = NewServer(Deps{
		Config:   cfg,
		Indexes:  rec,
		Partners: testPartners(t),
		Clicks:   &clickRecorder{},
		Pages:    svc,
		Now:      func() time.Time { return testClock },
	})
	return &pageEnv{testEnv: env, base: ts.URL, svc: svc, q: q, rec: rec}
}

// TestPageAnswersFromTheCountrysIndex: an analysed page is matched against
// the index the page's widget loads as its shard for the country alone (the
// page context has no lang): the market's, where the country's ads run in
// one language; the whole catalog's without a country.
func TestPageAnswersFromTheCountrysIndex(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	pe.get(t, pageQuery(pe.base+"/review"), nil, "")
	pe.svc.Start()
	pe.drain(t)
	for _, tc := range []struct {
		loc   string
		asked []string
	}{
		{"de", []string{"de-de"}},
		{"DE", []string{"de-de"}},
		{"", nil},
		{"fr", nil}, // no ads there: the whole catalog, filtered
	} {
		pe.rec.take()
		res := pe.get(t, pageQuery(pe.base+"/review", "loc", tc.loc), nil, "")
		if body := readBody(t, res); res.StatusCode != http.StatusOK {
			t.Fatalf("loc=%s: %s %s", tc.loc, res.Status, body)
		}
		if got := pe.rec.take(); !slices.Equal(got, tc.asked) {
			t.Errorf("loc=%q: asked for %v, want %v", tc.loc, got, tc.asked)
		}
	}
}

// TestPageLanguagePicksItsMarket: without loc, an analysed page's
// language picks its market: the one market in it, the ads in that
// language where several markets share it, and no ads where no market
// runs in it.
func TestPageLanguagePicksItsMarket(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	for _, p := range []string{"/review", "/review-de", "/review-cs"} {
		pe.get(t, pageQuery(pe.base+p), nil, "")
	}
	pe.svc.Start()
	pe.drain(t)
	for _, tc := range []struct {
		path  string
		loc   string
		asked []string
		ads   bool
	}{
		{"/review-de", "", []string{"de-de"}, true},
		{"/review", "", nil, true},
		{"/review-cs", "", nil, false},
		// A country given is the page's market, whatever its language.
		{"/review-cs", "de", []string{"de-de"}, true},
	} {
		pe.rec.take()
		res := pe.get(t, pageQuery(pe.base+tc.path, "loc", tc.loc), nil, "")
		body := readBody(t, res)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s loc=%s: %s %s", tc.path, tc.loc, res.Status, body)
		}
		if got := pe.rec.take(); !slices.Equal(got, tc.asked) {
			t.Errorf("%s loc=%q: asked for %v, want %v", tc.path, tc.loc, got, tc.asked)
		}
		var got struct {
			Link []struct{ Price *struct{ Currency string } }
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if (len(got.Link) > 0) != tc.ads {
			t.Errorf("%s loc=%q: %d ads, want ads: %v (%s)", tc.path, tc.loc, len(got.Link), tc.ads, body)
		}
	}
}

func (pe *pageEnv) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pe.svc.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func pageQuery(pageURL string, kv ...string) string {
	v := url.Values{"url": {pageURL}, "api_key": {"demo"}, "site_id": {"demo"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return "/v2/page/link?" + v.Encode()
}

func TestPageEndToEnd(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	// Tracking parameters and the fragment do not make another page.
	first := pe.get(t, pageQuery(pe.base+"/review?utm_source=mail#top"), nil, "")
	body := readBody(t, first)
	if first.StatusCode != http.StatusAccepted || first.Header.Get("Retry-After") != "1" || first.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("first request: %s %v\n%s", first.Status, first.Header, body)
	}
	golden.Check(t, "testdata/page/pending.json", body)

	pe.svc.Start()
	pe.drain(t)

	res := pe.get(t, pageQuery(pe.base+"/review"), nil, "")
	body = readBody(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("after analysis: %s\n%s", res.Status, body)
	}
	golden.Check(t, "testdata/page/analysed.json", body)
	var resp struct {
		Link []link `json:"link"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Link) != 1 {
		t.Fatalf("links %s, want only the iPhone: navigation and footer are not the page's topic", body)
	}
	l := resp.Link[0]
	click, _ := url.Parse(l.Ad)
	q := click.Query()
	if q.Get("adId") != "EBAY.4.291181826279" || q.Get("type") != "intext" || q.Get("criterionId") != "Apple iPhone 5" ||
		!strings.Contains(l.Ad, "criterionId=Apple+iPhone+5") || !slices.Equal(l.Keywords, []string{"Apple", "iPhone 5"}) ||
		!slices.Equal(l.DisplayType, []string{"link", "widget"}) {
		t.Fatalf("link %+v", l)
	}

	// The request's own filters apply to the stored analysis.
	for name, c := range map[string]struct {
		query  []string
		golden string
	}{
		"fields":      {[]string{"fields", "price,manufacturer,logo,ad_type", "logo.dim", "90X90"}, "page/fields.json"},
		"jsonp":       {[]string{"callback", "adlink.cb"}, "page/analysed.js"},
		"loc outside": {[]string{"loc", "FR"}, "page/loc_fr.json"},
		"advertisers": {[]string{"ad_type", "advertiser"}, "page/advertisers.json"},
		"products":    {[]string{"ad_type", "product", "loc", "de"}, "page/analysed.json"},
		"both kinds":  {[]string{"ad_type", "advertiser product"}, "page/analysed.json"},
	} {
		t.Run(name, func(t *testing.T) {
			res := pe.get(t, pageQuery(pe.base+"/review", c.query...), nil, "")
			golden.Check(t, filepath.Join("testdata", c.golden), readBody(t, res))
		})
	}
	pending := pe.get(t, pageQuery(pe.base+"/other", "callback", "cb"), nil, "")
	golden.Check(t, "testdata/page/pending.js", retryAfterAtLeast(t, readBody(t, pending)))
}

// retryAfterAtLeast checks that the pending answer's retry_after_ms is in
// the service's range and writes it as its least, 100: the estimate
// follows how long the analyses before it took, which a busy machine
// stretches.
func retryAfterAtLeast(t *testing.T, body []byte) []byte {
	t.Helper()
	re := regexp.MustCompile(`"retry_after_ms": ?([0-9]+)`)
	m := re.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no retry_after_ms in %s", body)
	}
	if ms, _ := strconv.Atoi(string(m[1])); ms < 100 || ms > 30000 {
		t.Fatalf("retry_after_ms %d, want 100 to 30000", ms)
	}
	return re.ReplaceAllFunc(body, func(b []byte) []byte {
		return append(bytes.TrimRight(b, "0123456789"), "100"...)
	})
}

func TestPageBadInput(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	long := pe.base + "/?" + strings.Repeat("a", 2100)
	for _, c := range []struct {
		name, target string
		status       int
		code, param  string
	}{
		{"url missing", "/v2/page/link?api_key=demo&site_id=demo", 400, CodeMissingParameter, "url"},
		{"relative", pageQuery("/review"), 400, CodeInvalidParameter, "url"},
		{"javascript", pageQuery("javascript:alert(document.cookie)"), 400, CodeInvalidParameter, "url"},
		{"file", pageQuery("file:///etc/passwd"), 400, CodeInvalidParameter, "url"},
		{"data", pageQuery("data:text/html;base64,PHNjcmlwdD4="), 400, CodeInvalidParameter, "url"},
		{"ftp", pageQuery("ftp://127.0.0.1/pub"), 400, CodeInvalidParameter, "url"},
		{"over 2 KB", pageQuery(long), 400, CodeInvalidParameter, "url"},
		{"credentials", pageQuery("http://user:pass@127.0.0.1/"), 400, CodeInvalidParameter, "url"},
		{"foreign domain", pageQuery("https://evil.example/page"), 403, CodeForeignURL, "url"},
		{"metadata address", pageQuery("http://169.254.169.254/latest/meta-data/"), 403, CodeForeignURL, "url"},
		{"look-alike domain", pageQuery("http://127.0.0.1.evil.example/"), 403, CodeForeignURL, "url"},
		{"coupon", pageQuery(pe.base+"/review", "ad_type", "coupon"), 400, CodeInvalidParameter, "ad_type"},
		{"coupon among", pageQuery(pe.base+"/review", "ad_type", "product+coupon"), 400, CodeInvalidParameter, "ad_type"},
		{"search-only field", pageQuery(pe.base+"/review", "fields", "gtin"), 400, CodeInvalidParameter, "fields"},
		{"bad loc", pageQuery(pe.base+"/review", "loc", "germany"), 400, CodeInvalidParameter, "loc"},
		{"bad logo.dim", pageQuery(pe.base+"/review", "logo.dim", "80X80"), 400, CodeInvalidParameter, "logo.dim"},
		{"bad callback", pageQuery(pe.base+"/review", "callback", "alert(1)"), 400, CodeInvalidParameter, "callback"},
		{"unknown key", pageQuery(pe.base+"/review", "api_key", "nope"), 401, CodeUnknownAPIKey, "api_key"},
		{"foreign site", pageQuery(pe.base+"/review", "site_id", "blog"), 403, CodeForeignSite, "site_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := pe.get(t, c.target, nil, "")
			body := readBody(t, res)
			var e struct {
				Error struct{ Code, Message, Param string }
			}
			if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != c.status || e.Error.Code != c.code || e.Error.Param != c.param {
				t.Fatalf("%s %s, want %d %s param %s", res.Status, body, c.status, c.code, c.param)
			}
			if c.status == 400 && !strings.Contains(e.Error.Message, c.param) {
				t.Fatalf("message %q does not name %s", e.Error.Message, c.param)
			}
		})
	}
	// None of them reached the queue.
	if n, _ := pe.q.Len(context.Background()); n != 0 {
		t.Fatalf("%d pages queued by bad requests", n)
	}
}

func TestPageFailedAndGuarded(t *testing.T) {
	// blog.example (a site of partner k2) resolves to loopback: with the
	// guard on, the page fails and nothing is fetched.
	pe := newPageEnv(t, 0, pages.FetchOptions{Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	target := "/v2/page/link?" + url.Values{"url": {"http://www.blog.example/post"}, "api_key": {"k2"}, "site_id": {"blog"}}.Encode()
	if res := pe.get(t, target, nil, ""); res.StatusCode != http.StatusAccepted {
		t.Fatalf("first: %s", res.Status)
	}
	pe.svc.Start()
	pe.drain(t)
	res := pe.get(t, target, nil, "")
	body := readBody(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s", res.Status, body)
	}
	golden.Check(t, "testdata/page/failed_guard.json", body)
}

func TestPageQueueFull(t *testing.T) {
	pe := newPageEnv(t, 1, pages.FetchOptions{AllowPrivate: true})
	if res := pe.get(t, pageQuery(pe.base+"/review"), nil, ""); res.StatusCode != http.StatusAccepted {
		t.Fatalf("first page: %s", res.Status)
	}
	res := pe.get(t, pageQuery(pe.base+"/other"), nil, "")
	body := readBody(t, res)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "5" {
		t.Fatalf("second page: %s %v %s", res.Status, res.Header, body)
	}
	golden.Check(t, "testdata/page/queue_full.json", body)
	// The page already queued is still pending, not refused.
	if res := pe.get(t, pageQuery(pe.base+"/review"), nil, ""); res.StatusCode != http.StatusAccepted {
		t.Fatalf("queued page again: %s", res.Status)
	}
}

// TestPageOneJobForConcurrentFirstRequests sends the same unseen page many
// times at once: one job, every answer pending.
func TestPageOneJobForConcurrentFirstRequests(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	srv := httptest.NewServer(pe.handler)
	defer srv.Close()
	ch := make(chan int, 50)
	for range 50 {
		go func() {
			res, err := http.Get(srv.URL + pageQuery(pe.base+"/review"))
			if err != nil {
				ch <- 0
				return
			}
			res.Body.Close()
			ch <- res.StatusCode
		}()
	}
	for range 50 {
		if s := <-ch; s != http.StatusAccepted {
			t.Fatalf("status %d", s)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if n, _ := pe.q.Len(context.Background()); n != 1 {
		t.Fatalf("%d jobs for one page", n)
	}
}

// TestPageInternationalisedHost: a browser's location.href names an
// internationalised host by its A-labels (xn--), while the site is
// registered as its owner writes it, and a link may spell the host
// either way. Both spellings are the site's, and one page: analysed once.
func TestPageInternationalisedHost(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true, Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	srv := httptest.NewServer(pe.handler)
	defer srv.Close()
	port := pe.base[strings.LastIndexByte(pe.base, ':'):]
	get := func(pageURL string) (*http.Response, []byte) {
		t.Helper()
		target := "/v2/page/link?" + url.Values{"url": {pageURL}, "api_key": {"k2"}, "site_id": {"idn"}}.Encode()
		res, err := http.Get(srv.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		return res, readBody(t, res)
	}
	if res, body := get("http://xn--bcher-kva.example" + port + "/review"); res.StatusCode != http.StatusAccepted {
		t.Fatalf("A-label spelling: %s %s, want 202 pending", res.Status, body)
	}
	if res, body := get("http://BÜCHER.example" + port + "/review"); res.StatusCode != http.StatusAccepted {
		t.Fatalf("Unicode spelling: %s %s, want 202 pending", res.Status, body)
	}
	if n, _ := pe.q.Len(context.Background()); n != 1 {
		t.Fatalf("%d jobs for one page in two spellings", n)
	}
	pe.svc.Start()
	pe.drain(t)
	for _, u := range []string{"http://bücher.example" + port + "/review", "http://xn--bcher-kva.example" + port + "/review"} {
		res, body := get(u)
		if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("EBAY.4.291181826279")) {
			t.Fatalf("%s after analysis: %s %s, want the iPhone", u, res.Status, body)
		}
	}
}
