// Package web holds what adlink puts into publisher pages (widget.js, the
// demo pages) and the browser tests that drive them in headless Chromium
// against the real backend on a loopback listener.
package web

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/adlink/adlink"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/match"
	"github.com/adlink/adlink/wasm/module"
)

// matcherWasm is matcher.wasm as TestMain built it from this tree.
var matcherWasm []byte

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := os.Stat(chromium); err == nil {
		var err error
		if matcherWasm, err = module.Matcher(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	defer stopBackend()
	return m.Run()
}

// backend is the real adlink server on a loopback port, with the demo
// catalog and partner, as "make run" serves it.
type backend struct {
	URL    string
	ads    []match.Ad
	pages  *pages.Service
	clicks *clicks.Log
	views  atomic.Int64
}

// firstView returns a URL of the demo page the server has never seen: the
// page with a query string of its own.
func (b *backend) firstView(page string) string {
	return b.URL + "/demo/" + page + "?view=" + strconv.FormatInt(b.views.Add(1), 10)
}

var (
	sharedOnce    sync.Once
	shared        *backend
	sharedCleanup []func()
	sharedErr     error
)

// startBackend returns the server every test of the package shares:
// starting one compresses matcher.wasm, seconds under the race detector.
// Tests keep apart by asking for pages of their own (firstView).
func startBackend(tb testing.TB) *backend {
	tb.Helper()
	sharedOnce.Do(func() { shared, sharedErr = newBackend() })
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return shared
}

func stopBackend() {
	for i := len(sharedCleanup) - 1; i >= 0; i-- {
		sharedCleanup[i]()
	}
}

func newBackend() (*backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &backend{URL: "http://" + ln.Addr().String()}
	dir, err := os.MkdirTemp("", "adlink-web-data-")
	if err != nil {
		return nil, err
	}
	sharedCleanup = append(sharedCleanup, func() { os.RemoveAll(dir) })
	cfg := config.Default()
	cfg.Addr = ln.Addr().String()
	cfg.RedirectURL = b.URL
	cfg.FetchAllowPrivate = true
	cfg.DataDir = dir
	if b.ads, err = catalog.Demo(catalog.Options{BaseURL: b.URL}); err != nil {
		return nil, err
	}
	indexes, err := api.BuildIndexes(b.ads)
	if err != nil {
		return nil, err
	}
	set, err := shards.Build(indexes, shards.Options{Matcher: matcherWasm, RedirectURL: cfg.RedirectURL})
	if err != nil {
		return nil, err
	}
	web, err := fs.Sub(adlink.Web, "web")
	if err != nil {
		return nil, err
	}
	reg, err := partners.NewStatic([]partners.Partner{partners.Demo()})
	if err != nil {
		return nil, err
	}
	db, err := store.Open(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	sharedCleanup = append(sharedCleanup, func() { db.Close() })
	cl, err := clicks.New(db)
	if err != nil {
		return nil, err
	}
	b.clicks = cl
	queue, err := pages.OpenBolt(db, 0)
	if err != nil {
		return nil, err
	}
	fetcher := pages.NewFetcher(pages.FetchOptions{AllowPrivate: true})
	sharedCleanup = append(sharedCleanup, fetcher.Close)
	b.pages = pages.NewService(queue, queue, fetcher, func() pages.Reducer { return indexes.All() }, pages.Options{})
	b.pages.Start()
	sharedCleanup = append(sharedCleanup, b.pages.Stop)
	// Clicks are signed, as in production: the server's links carry a
	// signature, the page's the manifest's site token.
	keys, err := clicks.NewKeys(clicks.Key{ID: "test", Secret: []byte("a secret of the browser tests")})
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api.NewServer(api.Deps{
		Config: cfg, Indexes: indexes, Partners: reg, Clicks: cl, Pages: b.pages, Shards: set, Web: web, ClickKeys: keys,
	})}
	go srv.Serve(ln)
	sharedCleanup = append(sharedCleanup, func() { srv.Close() })
	return b, nil
}
