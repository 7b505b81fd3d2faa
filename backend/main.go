// Command adlink serves the adlink ad retrieval service: the search and
// page contexts (/v2/search/link, /v2/page/link), the click redirect
// (/v1/redirect), the market shards, matcher.wasm, widget.js and the demo
// pages, and /healthz, /readyz, /metrics and /openapi.json, from the
// embedded demo catalog or the feed files it is given.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/match"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "adlink:", err)
		os.Exit(1)
	}
}

// maxBody bounds a request body; adlink's routes read none.
const maxBody = 64 << 10

// shutdownGrace is how long in-flight requests get to finish on SIGINT or
// SIGTERM.
const shutdownGrace = 10 * time.Second

// run starts the server and serves until ctx ends or a SIGINT or SIGTERM
// arrives, then shuts down gracefully. It logs JSON to stderr; the first
// line with msg "listening" carries the bound address in "addr".
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := config.Load(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))

	ads, err := loadCatalog(cfg)
	if err != nil {
		return err
	}
	indexes, err := market.Build(ads)
	if err != nil {
		return fmt.Errorf("indexing the catalog: %w", err)
	}
	shardSet, web, err := inPage(indexes, cfg, matcherFile, log)
	if err != nil {
		return err
	}
	ps, err := partners.Load(cfg.PartnersFile)
	if err != nil {
		return err
	}
	registry, err := partners.NewStatic(ps)
	if err != nil {
		return fmt.Errorf("partners: %w", err)
	}
	db, err := store.Open(cfg.DataDir)
	if err != nil {
		return err
	}
	defer db.Close()
	clickLog, err := clicks.New(db)
	if err != nil {
		return err
	}
	clickKeys, err := loadClickKeys(cfg)
	if err != nil {
		return err
	}
	log.Info("click keys", "signing", clickKeys.SigningKeyID())
	pageQueue, err := pages.OpenBolt(db, 0)
	if err != nil {
		return err
	}
	fetcher := pages.NewFetcher(pages.FetchOptions{AllowPrivate: cfg.FetchAllowPrivate})
	defer fetcher.Close()
	m := metrics.New()
	pageService := pages.NewService(pageQueue, pageQueue, fetcher,
		func() pages.Reducer { return indexes.All() }, pages.Options{Logger: log.With("component", "pages"), OnAnalysis: m.Analysis})
	m.WatchQueue(func() metrics.QueueStats {
		depth, age, err := pageService.QueueStats(context.Background())
		if err != nil {
			log.Warn("reading the page queue for /metrics", "err", err)
		}
		return metrics.QueueStats{Depth: depth, OldestAge: age}
	})
	// Deferred calls run last first: on the way out the HTTP server has
	// stopped, then the workers stop (a job cut short stays queued), then
	// the fetcher and the store close.
	pageService.Start() // pages queued before a crash are analysed now
	defer pageService.Stop()

	var stopping atomic.Bool

	handler := api.NewServer(api.Deps{
		Config:    cfg,
		Logger:    log,
		Indexes:   indexes,
		Partners:  registry,
		Clicks:    clickLog,
		ClickKeys: clickKeys,
		Pages:     pageService,
		Now:       time.Now,
		Shards:    shardSet,
		Web:       web,
		Metrics:   m,
		Ready: func(context.Context) error {
			if stopping.Load() {
				return errors.New("shutting down")
			}
			// A closed bbolt file refuses transactions.
			return db.View(func(*bolt.Tx) error { return nil })
		},
	})
	srv := &http.Server{
		// Every route is a GET: a request body is never read, so a large
		// one is refused rather than drained.
		Handler:           http.MaxBytesHandler(handler, maxBody),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// Long enough for a slow phone to fetch matcher.wasm and a shard;
		// API answers take milliseconds.
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	log.Info("listening", "addr", ln.Addr().String(), "ads", indexes.All().Len(),
		"markets", len(indexes.All().Markets()), "data", db.Path(), "redirect_url", cfg.RedirectURL)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	stopping.Store(true) // /readyz says 503 while in-flight requests finish
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// loadClickKeys returns the configured click keys, the first of which
// signs. With none configured the server signs with a key of its own,
// generated on first start and kept in the data directory; once keys are
// configured, that key still verifies the links it signed.
func loadClickKeys(cfg config.Config) (*clicks.Keys, error) {
	keys := cfg.ClickKeys
	_, err := os.Stat(filepath.Join(cfg.DataDir, clicks.KeyFile))
	if len(keys) == 0 || err == nil {
		own, err := clicks.LoadOrCreateKey(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(keys, func(k clicks.Key) bool { return k.ID == own.ID }) {
			keys = append(keys, own)
		}
	}
	return clicks.NewKeys(keys...)
}

// loadCatalog reads the configured feed files, or the embedded demo
// catalog when there are none.
func loadCatalog(cfg config.Config) ([]match.Ad, error) {
	opts := catalog.Options{BaseURL: cfg.RedirectURL}
	if len(cfg.Catalogs) == 0 {
		return catalog.Demo(opts)
	}
	var ads []match.Ad
	for _, path := range cfg.Catalogs {
		a, err := catalog.LoadFile(path, opts)
		if err != nil {
			return nil, err
		}
		ads = append(ads, a...)
	}
	return ads, nil
}

// matcherFile is where "make wasm" puts the page's matcher module, and
// beside it, when the zstd CLI is installed, matcher.wasm.zst.
const matcherFile = "web/matcher.wasm"

// inPage prepares what publisher pages load: every market's shard and
// the matcher module at matcherPath, compressed once, and the embedded
// widget and demo pages. Without a built matcher the rest is still served.
func inPage(indexes *market.Set, cfg config.Config, matcherPath string, log *slog.Logger) (*shards.Set, fs.FS, error) {
	wasm, zst := readMatcher(matcherPath, log)
	set, err := shards.Build(indexes, shards.Options{Matcher: wasm, MatcherZstd: zst, RedirectURL: cfg.RedirectURL})
	if err != nil {
		return nil, nil, fmt.Errorf("shards: %w", err)
	}
	if m := set.Matcher(); m != nil {
		c := set.MatcherZstd()
		if c.Err != nil {
			log.Warn("matcher.wasm.zst is not matcher.wasm, stale or corrupt: ignored; run make wasm", "err", c.Err)
		}
		encoder, klauspost := "klauspost/compress", m.Size(shards.Zstd)
		if c.Served {
			encoder, klauspost = "zstd CLI (matcher.wasm.zst)", c.Own
		}
		attrs := []any{"zstd_encoder", encoder, "zstd_bytes", m.Size(shards.Zstd),
			"klauspost_zstd_bytes", klauspost, "identity_bytes", m.Size(shards.Identity)}
		if c.Given > 0 && c.Err == nil {
			attrs = append(attrs, "zstd_cli_bytes", c.Given)
		}
		log.Info("matcher.wasm", attrs...)
	}
	web, err := fs.Sub(adlink.Web, "web")
	if err != nil {
		return nil, nil, err
	}
	return set, web, nil
}

// readMatcher reads the matcher module at path and the zstd CLI's
// encoding of it at path.zst, each nil when it cannot be read.
func readMatcher(path string, log *slog.Logger) (wasm, zst []byte) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		log.Warn("matcher.wasm is not built: pages cannot match locally; run make wasm", "err", err)
		return nil, nil
	}
	zst, err = os.ReadFile(path + ".zst")
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("matcher.wasm.zst is unreadable: ignored", "err", err)
		}
		return wasm, nil
	}
	return wasm, zst
}
