// Package web holds what adlink puts into publisher pages (widget.js, the
// demo pages) and the browser tests that drive them in headless Chromium
// against the real backend on a loopback listener.
package web

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/internal/testenv"
	"github.com/adlink/adlink/internal/webkit"
	"github.com/adlink/adlink/match"
)

// matcherWasm is matcher.wasm as TestMain built it from this tree, and
// matcherZstd its matcher.wasm.zst as make wasm writes it where the zstd
// CLI is installed (nil elsewhere): the page gets what make run serves.
var matcherWasm, matcherZstd []byte

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The package's servers build the same catalogs.
	testenv.ShareCompression()
	// The module runs only in the browser tests.
	if err := testenv.Build(testenv.Options{Matcher: testenv.HasChromium() || webkit.Has(), Zstd: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	matcherWasm, matcherZstd = testenv.Matcher(), testenv.MatcherZstd()
	defer stopBackend()
	defer stopSharedBrowser()
	return m.Run()
}

// backend is the real adlink server on a loopback port, with the demo
// catalog and partner, as "make run" serves it.
type backend struct {
	URL    string
	ads    []match.Ad
	pages  *pages.Service
	clicks clicks.Store
	imps   clicks.Impressions
	views  atomic.Int64

	mu       sync.Mutex
	sent     map[string]int64 // response body bytes written, by URL path
	requests map[string]int   // requests answered, by URL path
	inflight sync.WaitGroup   // requests being answered
}

// counted counts the response body bytes h writes per URL path: what a
// view costs the server, also where the browser cancelled the request.
func (b *backend) counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.inflight.Add(1)
		defer b.inflight.Done()
		cw := &countingWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		b.mu.Lock()
		b.sent[r.URL.Path] += cw.n
		b.requests[r.URL.Path]++
		b.mu.Unlock()
	})
}

// requestCounts returns the requests answered so far, by URL path.
func (b *backend) requestCounts() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.requests)
}

// sentBytes returns the body bytes written so far, by URL path.
func (b *backend) sentBytes() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.sent)
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// waitAnalysed waits until the server has analysed page.
func (b *backend) waitAnalysed(tb testing.TB, page string) {
	tb.Helper()
	canon, err := pages.Canonical(page)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.pages.Wait(ctx, canon); err != nil {
		tb.Fatalf("waiting for the analysis: %v", err)
	}
}

// firstView returns a URL of the demo page the server has never seen: the
// page with a query string of its own.
func (b *backend) firstView(page string) string {
	return b.URL + "/demo/" + page + "?view=" + strconv.FormatInt(b.views.Add(1), 10)
}

// sharedCleanup undoes what the shared servers set up, last first.
var sharedCleanup []func()

// sharedServer is a server the tests of the package share, started once.
type sharedServer struct {
	once       sync.Once
	splitAbove int
	// advertisers, when set, is the advertisers file's content.
	advertisers string
	// noFetch is backendOptions.noFetch.
	noFetch bool
	b       *backend
	err     error
}

func (s *sharedServer) start(tb testing.TB) *backend {
	tb.Helper()
	s.once.Do(func() {
		s.b, s.err = newBackend(backendOptions{splitAbove: s.splitAbove, advertisers: s.advertisers, noFetch: s.noFetch})
	})
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.b
}

var (
	shared = &sharedServer{}
	// cut's every shard goes to pages in fragments, as a large catalog's.
	cut = &sharedServer{splitAbove: 1}
	// spent gives handy-bestkauf.de a daily budget of one cent: its first
	// billed click spends it.
	spent = &sharedServer{advertisers: `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"0.01","currency":"EUR"}]}`}
	// real serves the real-pages suite, whose hundreds of pages would spend
	// the shared server's page budgets. It does not analyse them: the suite
	// reads first views, matched in the page, and the server's analysis of
	// hundreds of pages would only take CPU from the browser.
	real = &sharedServer{noFetch: true}
)

// startBackend returns the server every test of the package shares:
// starting one compresses matcher.wasm, seconds under the race detector.
// Tests keep apart by asking for pages of their own (firstView).
func startBackend(tb testing.TB) *backend { return shared.start(tb) }

// startCutBackend returns a second shared server, whose every shard goes
// to pages in fragments, as a large catalog's do.
func startCutBackend(tb testing.TB) *backend { return cut.start(tb) }

func stopBackend() {
	for i := len(sharedCleanup) - 1; i >= 0; i-- {
		sharedCleanup[i]()
	}
}

// backendOptions are what a server of newBackend changes of make run's.
type backendOptions struct {
	// splitAbove is shards.Options.SplitAbove.
	splitAbove int
	// now, when not nil, is the server's clock.
	now func() time.Time
	// unlimited lifts the rate limits of the demo key and of clicks, for
	// a test that makes a month's traffic at once.
	unlimited bool
	// advertisers, when not empty, is the advertisers file.
	advertisers string
	// noFetch keeps the page fetcher to public addresses, as in
	// production: the test's pages, on loopback, are never analysed.
	noFetch bool
	// impressionWindow, when set, is -impression-window.
	impressionWindow time.Duration
}

// newBackend starts a server over the demo catalog with the demo partner
// and the module TestMain built, as make run serves them, changed as o
// says.
func newBackend(o backendOptions) (*backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &backend{URL: "http://" + ln.Addr().String(), sent: map[string]int64{}, requests: map[string]int{}}
	dir, err := os.MkdirTemp("", "adlink-web-data-")
	if err != nil {
		return nil, err
	}
	sharedCleanup = append(sharedCleanup, func() { os.RemoveAll(dir) })
	cfg := config.Default()
	cfg.Addr = ln.Addr().String()
	cfg.RedirectURL = b.URL
	cfg.FetchAllowPrivate = !o.noFetch
	cfg.DataDir = dir
	cfg.Demo = true
	// One browser plays every reader of the demo site, from one address:
	// it may take the key's and the site's whole budgets.
	cfg.KeyNetworkShare, cfg.PageNetworkShare = 1, 1
	// Clicks are signed, as in production: the server's links carry a
	// signature, the page's the manifest's site token.
	cfg.ClickKeys = []clicks.Key{{ID: "test", Secret: []byte("a secret of the browser tests")}}
	if o.impressionWindow != 0 {
		cfg.ImpressionWindow = o.impressionWindow
	}
	if o.unlimited {
		cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	}
	if o.advertisers != "" {
		cfg.AdvertisersFile = filepath.Join(dir, "advertisers.json")
		if err := os.WriteFile(cfg.AdvertisersFile, []byte(o.advertisers), 0o600); err != nil {
			return nil, err
		}
	}
	a, err := app.New(cfg, app.Options{Matcher: matcherWasm, MatcherZstd: matcherZstd, SplitAbove: o.splitAbove, Now: o.now})
	if err != nil {
		return nil, err
	}
	sharedCleanup = append(sharedCleanup, func() { a.Close() })
	b.ads, b.pages, b.clicks, b.imps = a.Ads, a.Pages, a.Clicks, a.Impressions
	srv := &http.Server{Handler: b.counted(a.Handler)}
	go srv.Serve(ln)
	sharedCleanup = append(sharedCleanup, func() { srv.Close() })
	return b, nil
}
