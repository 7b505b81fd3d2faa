// Package web holds what adlink puts into publisher pages (widget.js, the
// demo pages) and the browser tests that drive them in headless Chromium
// against the real backend on a loopback listener.
package web

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
)

// matcherWasm is matcher.wasm as TestMain built it from this tree.
var matcherWasm []byte

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := os.Stat(chromium); err == nil {
		dir, err := os.MkdirTemp("", "adlink-web-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "matcher.wasm")
		// The flags of "make wasm".
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, "../wasm")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building matcher.wasm:", err)
			return 1
		}
		if matcherWasm, err = os.ReadFile(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// backend is the real adlink server on a loopback port, with the demo
// catalog and partner, as "make run" serves it.
type backend struct {
	URL   string
	ads   []match.Ad
	pages *pages.Service // nil when pages stay pending
}

// alwaysPending is a page context that never finishes analysing a page, so
// every view is a first view.
type alwaysPending struct{}

func (alwaysPending) Lookup(_ context.Context, u string) (*pages.Result, error) {
	return &pages.Result{Status: pages.StatusPending, URL: u, RetryAfter: 1500_000_000}, nil
}

// startBackend serves on 127.0.0.1; with pending, /v2/page/link never
// answers anything but pending.
func startBackend(tb testing.TB, pending bool) *backend {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	b := &backend{URL: "http://" + ln.Addr().String()}
	cfg := config.Default()
	cfg.Addr = ln.Addr().String()
	cfg.RedirectURL = b.URL
	cfg.FetchAllowPrivate = true
	cfg.DataDir = tb.TempDir()
	if b.ads, err = catalog.Demo(catalog.Options{BaseURL: b.URL}); err != nil {
		tb.Fatal(err)
	}
	indexes, err := api.BuildIndexes(b.ads)
	if err != nil {
		tb.Fatal(err)
	}
	set, err := shards.Build(indexes, shards.Options{Matcher: matcherWasm, RedirectURL: cfg.RedirectURL})
	if err != nil {
		tb.Fatal(err)
	}
	web, err := fs.Sub(adlink.Web, "web")
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := partners.NewStatic([]partners.Partner{partners.Demo()})
	if err != nil {
		tb.Fatal(err)
	}
	db, err := store.Open(cfg.DataDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	cl, err := clicks.New(db)
	if err != nil {
		tb.Fatal(err)
	}
	var pageCtx api.Pages = alwaysPending{}
	if !pending {
		queue, err := pages.OpenBolt(db, 0)
		if err != nil {
			tb.Fatal(err)
		}
		fetcher := pages.NewFetcher(pages.FetchOptions{AllowPrivate: true})
		tb.Cleanup(fetcher.Close)
		b.pages = pages.NewService(queue, queue, fetcher, func() pages.Reducer { return indexes.All() }, pages.Options{})
		b.pages.Start()
		tb.Cleanup(b.pages.Stop)
		pageCtx = b.pages
	}
	srv := &http.Server{Handler: api.NewServer(api.Deps{
		Config: cfg, Indexes: indexes, Partners: reg, Clicks: cl, Pages: pageCtx, Shards: set, Web: web,
	})}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return b
}
