package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/adlink/adlink/internal/testenv"
)

// browser is a tab in a headless Chromium, with a profile of its own so
// that its cache and storage start empty, that records console errors.
type browser struct {
	ctx    context.Context
	stop   func()
	mu     sync.Mutex
	errors []string
}

// chromiumOptions start a headless Chromium for the tests with a fresh
// profile in dir.
func chromiumOptions(dir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(testenv.Chromium),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Tests never reach the internet: every host but loopback fails to
		// resolve, before any request leaves the machine.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("no-proxy-server", true),
		chromedp.UserDataDir(dir),
		// The dashboard reads the days of the browser's time zone: UTC's,
		// wherever the tests run, unless a test sets a tab's.
		chromedp.Env("TZ=UTC"),
	}
}

// chromium is the one Chromium the package's tests open their tabs in, each
// in a browser context of its own (its own cache, storage and cookies, as
// a fresh profile has), so that a test pays for a tab rather than for a
// browser's start, seconds each. Started by the first test that asks;
// stopSharedBrowser quits it.
var chromium struct {
	once sync.Once
	ctx  context.Context
	stop func()
	err  error
}

func sharedBrowser() (context.Context, error) {
	chromium.once.Do(func() {
		dir, err := os.MkdirTemp("", "adlink-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(dir)...)
		ctx, cancel := chromedp.NewContext(actx)
		chromium.ctx = ctx
		chromium.stop = func() { cancel(); cancelAlloc(); os.RemoveAll(dir) }
		// The first Run starts the browser; it must have no deadline.
		chromium.err = chromedp.Do(ctx)
	})
	return chromium.ctx, chromium.err
}

// stopSharedBrowser quits the tests' Chromium, if one started.
func stopSharedBrowser() {
	if chromium.stop != nil {
		chromium.stop()
	}
}

// newBrowser opens a tab for tb: a test's in its own browser context of
// the shared Chromium, a benchmark's in a Chromium of its own, so that
// what it times shares the machine with no idle browser.
func newBrowser(tb testing.TB) *browser {
	tb.Helper()
	testenv.NeedChromium(tb)
	var br *browser
	if _, bench := tb.(*testing.B); bench {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(tb.TempDir())...)
		ctx, cancel := chromedp.NewContext(actx)
		br = &browser{ctx: ctx, stop: func() { cancel(); cancelAlloc() }}
	} else {
		parent, err := sharedBrowser()
		if err != nil {
			tb.Fatalf("starting %s: %v", testenv.Chromium, err)
		}
		ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
		br = &browser{ctx: ctx, stop: cancel}
	}
	tb.Cleanup(br.close)
	// The first Run starts the browser or opens the tab; it must have no
	// deadline.
	if err := chromedp.Do(br.ctx); err != nil {
		tb.Fatalf("starting %s: %v", testenv.Chromium, err)
	}
	msgs := chromedp.Console(br.ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				br.mu.Lock()
				br.errors = append(br.errors, m.String())
				br.mu.Unlock()
			}
		}
	}()
	return br
}

// onEveryPage runs script in every page the browser opens from now on,
// before the page's own scripts.
func (br *browser) onEveryPage(tb testing.TB, script string) {
	tb.Helper()
	send(tb, br, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
}

// close quits the browser; a benchmark closes each it is done with, so the
// next round does not share the machine with idle ones.
func (br *browser) close() { br.stop() }

// do runs actions with a deadline.
func (br *browser) do(tb testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.Fatal(err)
	}
}

// send sends the browser's tab one DevTools command.
func send[P, R any](tb testing.TB, br *browser, c cdp.Command[P, R], params P) {
	tb.Helper()
	br.do(tb, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, c, params)
		return err
	}))
}

// eval evaluates a script that may return a promise and decodes its value.
func eval[T any](tb testing.TB, br *browser, script string) T {
	tb.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.Fatalf("%s: %v", script, err)
	}
	return v
}

// evalCall evaluates the function fn, a script's source, called with args
// (see jsCall), and decodes its value. The scripts are files under
// testdata/, a function where the test gives it values.
func evalCall[T any](tb testing.TB, br *browser, fn string, args ...any) T {
	tb.Helper()
	return eval[T](tb, br, jsCall(fn, args...))
}

// jsSource is an argument jsCall passes as JavaScript source, such as a
// function, rather than as JSON.
type jsSource string

// jsCall is a script that calls the function fn, a script's source, with
// args, each written as JSON unless it is a jsSource.
func jsCall(fn string, args ...any) string {
	var s strings.Builder
	// The newline ends a line comment that may close fn.
	s.WriteString("(" + fn + "\n)(")
	for i, a := range args {
		if i > 0 {
			s.WriteString(", ")
		}
		if src, ok := a.(jsSource); ok {
			s.WriteString(string(src))
			continue
		}
		b, err := json.Marshal(a)
		if err != nil {
			panic(err)
		}
		s.Write(b)
	}
	s.WriteString(")")
	return s.String()
}

// view opens page and waits until the widget has placed its ads.
func (br *browser) view(tb testing.TB, page string) readyResult {
	tb.Helper()
	br.do(tb, chromedp.Navigate(page))
	return eval[readyResult](tb, br, widgetReady)
}

// settle resolves after a moment, so that what the page sent has arrived.
//
//go:embed testdata/browser/settle.js
var settle string

// noConsoleErrors fails the test for every error the page logged.
func (br *browser) noConsoleErrors(tb testing.TB) {
	tb.Helper()
	eval[int](tb, br, settle)
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, e := range br.errors {
		tb.Errorf("console: %s", e)
	}
}

// widgetReady waits for the widget to place the page's ads.
//
//go:embed testdata/browser/ready.js
var widgetReady string

// readyResult is what adlink.ready gave: where the ads came from and how
// many.
type readyResult struct {
	Source string
	Links  int
}

// placed describes the ads the widget put into the page.
type placed struct {
	Intext []struct {
		Text, Href, Rel string
		Misplaced       bool
	}
	Box []struct {
		Title, Href, Rel string
	}
	Logos []struct {
		Src string
		OK  bool
	}
	FirstAdMs float64
}

// placedScript describes, once the ad box's logos have loaded or failed,
// the ads the widget placed (placed).
//
//go:embed testdata/browser/placed.js
var placedScript string

// checkPlaced checks that the page has in-text links and an ad box, none
// misplaced, each through b's redirect, and that their logos came from b.
func checkPlaced(t *testing.T, b *backend, p placed) {
	t.Helper()
	if len(p.Intext) == 0 || len(p.Box) == 0 {
		t.Fatalf("want in-text links and an ad box, got %d links and %d box ads", len(p.Intext), len(p.Box))
	}
	for _, a := range p.Intext {
		if a.Misplaced || a.Rel != "sponsored noopener" || !strings.HasPrefix(a.Href, b.URL+"/v1/redirect?type=intext&") {
			t.Errorf("in-text link %+v", a)
		}
	}
	for _, a := range p.Box {
		if a.Rel != "sponsored noopener" || !strings.HasPrefix(a.Href, b.URL+"/v1/redirect?") || a.Title == "" {
			t.Errorf("box ad %+v", a)
		}
	}
	for _, l := range p.Logos {
		if !l.OK || !strings.HasPrefix(l.Src, b.URL+"/") {
			t.Errorf("logo %+v did not load from the local server", l)
		}
	}
}

// publisher serves pages, by path, as a publisher's site on a loopback
// port of its own: a host of the demo site, apart from the backend's.
func publisher(t testing.TB, pages map[string]string) string {
	t.Helper()
	srv := publisherServer(t, pages)
	t.Cleanup(srv.Close)
	return srv.URL
}

// publisherServer is publisher's server, on a port no publisher of the
// process had before (freshPort): the shared servers remember each page
// they analysed by its URL, and would answer a new site's first view of
// its /page.html with their analysis of an earlier test's page, at the
// address the kernel gave out again (its links signed, none matched in the
// page, so none ever gets a click token).
func publisherServer(tb testing.TB, pages map[string]string) *httptest.Server {
	tb.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if strings.HasSuffix(r.URL.Path, ".xhtml") {
			w.Header().Set("Content-Type", "application/xhtml+xml; charset=utf-8")
		}
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, page)
	}))
	srv.Listener.Close()
	srv.Listener = freshPort(tb)
	srv.Start()
	return srv
}

// publisherPorts are the loopback ports publishers of the process had.
var publisherPorts = struct {
	sync.Mutex
	used map[int]bool
}{used: map[int]bool{}}

// freshPort listens on a loopback port that no publisher of the process
// had before. A port the kernel gives again is held until a new one comes,
// so that it is not given a third time.
func freshPort(tb testing.TB) net.Listener {
	tb.Helper()
	publisherPorts.Lock()
	defer publisherPorts.Unlock()
	var again []net.Listener
	defer func() {
		for _, ln := range again {
			ln.Close()
		}
	}()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if !publisherPorts.used[port] {
			publisherPorts.used[port] = true
			return ln
		}
		again = append(again, ln)
	}
}

// openPage starts a browser and the backend, serves body as a German
// publisher's page at /page.html, opens it and waits for the widget's
// ads; it returns the browser, the backend and what adlink.ready gave.
func openPage(t *testing.T, body string) (*browser, *backend, readyResult) {
	t.Helper()
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, body)})
	return br, b, br.view(t, site+"/page.html")
}

// publisherPage is a page in language lang with the widget's tag, whose
// requests go to base, and body. Its in-text links are not capped by the
// length of its text (data-link-density), which is short: the tests of
// the cap set it themselves (sparsePage).
func publisherPage(lang, base, body string) string {
	return strings.Replace(sparsePage(lang, base, body), ` data-base="`, ` data-link-density="1000" data-base="`, 1)
}

// sparsePage is publisherPage with the widget's default link density.
func sparsePage(lang, base, body string) string {
	return `<!doctype html>
<html lang="` + lang + `">
<head>
<meta charset="utf-8">
<title>Handy-Test 2026</title>
<link rel="icon" href="data:,">
<script async src="` + base + `/widget.js" data-api-key="demo" data-site-id="demo" data-base="` + base + `"></script>
</head>
<body>
` + body + `
</body>
</html>`
}

// inlineScript is an inline <script> element that runs js.
func inlineScript(js string) string { return "<script>" + js + "</script>" }

// handyText is a paragraph the demo catalog has ads for.
const handyText = `Wir haben die wichtigsten Modelle des Jahres ausprobiert: das Apple iPhone 15, das
Samsung Galaxy S24 und das Google Pixel 8. Eine gute Handyhülle sollte man gleich mitbestellen, und
gute Kopfhörer auch.`

// unsigned drops what authenticates a click URL: the server's decision id,
// exp and sig, the page's tok and the click token of its impression. The
// rest must be the same.
func unsigned(ad string) string {
	u, err := url.Parse(ad)
	if err != nil {
		return ad
	}
	q := u.Query()
	q.Del("d")
	q.Del("exp")
	q.Del("sig")
	q.Del("tok")
	q.Del("ct")
	u.RawQuery = q.Encode()
	return u.String()
}

// unsignedJSON decodes a link answer with its click URLs unsigned.
func unsignedJSON(tb testing.TB, b []byte) any {
	tb.Helper()
	var v struct {
		Link []map[string]any `json:"link"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("%s: %v", b, err)
	}
	for _, l := range v.Link {
		if ad, ok := l["ad"].(string); ok {
			l["ad"] = unsigned(ad)
		}
	}
	return v
}

// get fetches u and fails the test unless it answers 200.
func get(tb testing.TB, u string) []byte {
	tb.Helper()
	return getStatus(tb, u, http.StatusOK)
}

// getStatus fetches u and fails the test unless it answers status.
func getStatus(tb testing.TB, u string, status int) []byte {
	tb.Helper()
	res, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != status {
		tb.Fatalf("GET %s: %d %s %v", u, res.StatusCode, body, err)
	}
	return body
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// answerPage, called with an answer, makes the page's requests to
// /v2/page/link get that answer instead.
//
//go:embed testdata/browser/answer_page.js
var answerPage string

// answerPageWith makes the pages the browser opens from now on get answer
// from /v2/page/link, as though the server had sent it.
func answerPageWith(t *testing.T, br *browser, answer string) {
	t.Helper()
	br.onEveryPage(t, jsCall(answerPage, answer))
}

// clock makes Date.now run window.clockShift milliseconds ahead, 0 at
// first, in every page it runs in.
//
//go:embed testdata/browser/clock.js
var clock string

// keepLocal lets the page's requests to base through and fails every
// other one, sending its URL to left (or dropping it when left is full), so
// a test sees where a click would have landed without leaving loopback.
// seen, when set, is called with each request's URL first, on the
// goroutine that sends to left.
func keepLocal(tb testing.TB, br *browser, base string, left chan<- string, seen func(url string)) {
	tb.Helper()
	intercept(tb, br, interception{local: []string{base + "/"}, left: left, seen: seen})
}

// interception is what intercept does with the tab's requests.
type interception struct {
	// local are the URL prefixes let through; every other request fails,
	// its URL sent to left (or dropped when left is full).
	local []string
	left  chan<- string
	// seen, when set, is called with each request's URL first.
	seen func(url string)
	// header, when set, is added to the requests to the first local
	// prefix, after the browser's CORS checks, as a proxy would add it.
	header [2]string
	// userAgent, when set, is the User-Agent of the requests header goes
	// into: a keepalive request that outlives its page goes with the
	// browser's own, not the one the tab's emulation gave the page.
	userAgent string
	// answer, when set, is asked first of each request to a local prefix:
	// when it says so, its status and JSON body answer the request, which
	// never reaches the server.
	answer func(url string) (status int64, body []byte, ok bool)
	// answerHeader, when set, is a header of each answer answer gives,
	// exposed to the page's script as the server exposes its own.
	answerHeader [2]string
	// hold, when set, is asked of each request to a local prefix: when it
	// gives a channel, the request waits until the channel is closed
	// before it goes on to the server.
	hold func(url string) <-chan struct{}
	// lose, when set, is asked of the server's answer to each request to
	// a local prefix: when it says so, the answer is lost on its way back
	// (the page sees the request fail) after the server had the request.
	lose func(url string) bool
}

// intercept pauses each request of the tab and lets it through or fails it
// as in says.
func intercept(tb testing.TB, br *browser, in interception) {
	tb.Helper()
	paused := chromedp.Events(br.ctx, fetch.RequestPaused)
	patterns := []*fetch.RequestPattern{{URLPattern: "*"}}
	if in.lose != nil {
		patterns = append(patterns, &fetch.RequestPattern{URLPattern: "*", RequestStage: fetch.RequestStageResponse})
	}
	send(tb, br, fetch.Enable, fetch.EnableParams{Patterns: patterns})
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if ev.ResponseStatusCode != 0 || ev.ResponseErrorReason != "" { // the answer, paused on its way back
				chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					if in.lose(ev.Request.URL) {
						_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
						return err
					}
					_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
					return err
				}))
				continue
			}
			if in.seen != nil {
				in.seen(ev.Request.URL)
			}
			local := false
			for _, p := range in.local {
				local = local || strings.HasPrefix(ev.Request.URL, p)
			}
			if local && in.hold != nil {
				if wait := in.hold(ev.Request.URL); wait != nil {
					go func(id fetch.RequestID) {
						<-wait
						chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
							_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
							return err
						}))
					}(ev.RequestID)
					continue
				}
			}
			chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if !local {
					_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
					return err
				}
				if in.answer != nil {
					if status, body, ok := in.answer(ev.Request.URL); ok {
						h := []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}, {Name: "Access-Control-Allow-Origin", Value: "*"}}
						if in.answerHeader[0] != "" {
							h = append(h, &fetch.HeaderEntry{Name: in.answerHeader[0], Value: in.answerHeader[1]},
								&fetch.HeaderEntry{Name: "Access-Control-Expose-Headers", Value: in.answerHeader[0]})
						}
						_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: status,
							ResponseHeaders: h, Body: body})
						return err
					}
				}
				p := fetch.ContinueRequestParams{RequestID: ev.RequestID}
				if in.header[0] != "" && strings.HasPrefix(ev.Request.URL, in.local[0]) {
					for k, v := range ev.Request.Headers {
						if in.userAgent != "" && strings.EqualFold(k, "User-Agent") {
							v = in.userAgent
						}
						p.Headers = append(p.Headers, &fetch.HeaderEntry{Name: k, Value: fmt.Sprint(v)})
					}
					p.Headers = append(p.Headers, &fetch.HeaderEntry{Name: in.header[0], Value: in.header[1]})
				}
				_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, p)
				return err
			}))
			if !local {
				select {
				case in.left <- ev.Request.URL:
				default:
				}
			}
		}
	}()
}
