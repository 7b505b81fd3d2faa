// Command adlink serves the adlink ad retrieval service: the search and
// page contexts (/v2/search/link, /v2/page/link), the click redirect
// (/v1/redirect), the market shards, matcher.wasm, widget.js and the demo
// pages, and /healthz, /readyz and /openapi.json, from the embedded demo
// catalog or the feeds it is given; /metrics and POST /admin/reload on
// the admin address. SIGHUP refreshes the catalog. Everything it serves
// is in the binary; it runs from any working directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	// Reports read days of any time zone (tz): the zones come with the
	// binary, for a host without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/config"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		for line := range strings.SplitSeq(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "adlink:", line)
		}
		os.Exit(1)
	}
}

// maxBody bounds a request body; adlink's routes read none.
const maxBody = 64 << 10

// shutdownGrace is how long in-flight requests get to finish on SIGINT or
// SIGTERM.
const shutdownGrace = 10 * time.Second

// run starts the server and serves until ctx ends or a SIGINT or SIGTERM
// arrives, then shuts down gracefully; "adlink report ..." prints a report
// instead (runReport), "adlink invalidate ..." credits invalid clicks
// (runInvalidate), "adlink review-sites ..." ranks the sites whose
// clicks to look at (runReviewSites), and "adlink reload ..." refreshes
// the running server's catalog and waits for the end (runReload). It logs JSON to stderr; the first
// line with msg "listening" carries the bound address in "addr". -version
// prints to stdout.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "report" {
		return runReport(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "invalidate" {
		return runInvalidate(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "review-sites" {
		return runReviewSites(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "reload" {
		return runReload(ctx, args[1:], getenv, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := config.Load(args, getenv, stderr)
	if cfg.PrintVersion {
		fmt.Fprintln(stdout, versionLine())
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	ln, adminLn, err := prepare(cfg, err)
	if err != nil {
		return err
	}
	defer ln.Close()
	if adminLn != nil {
		defer adminLn.Close()
	}
	cfg.Listening(ln.Addr().String())
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if names := config.UnknownVariables(os.Environ()); len(names) > 0 {
		log.Warn("ADLINK_* variables that no setting has, ignored: a misspelt one leaves its setting at the default (adlink -h lists them)", "names", names)
	}
	a, err := app.New(cfg, app.Options{Logger: log, Start: ctx})
	if err != nil {
		return err
	}
	// On the way out the HTTP server has stopped first; then the workers
	// stop (a job cut short stays queued), then the fetcher and the store
	// close.
	defer a.Close()

	srv := &http.Server{
		// Every route is a GET: a request body is never read, so a large
		// one is refused rather than drained.
		Handler:           http.MaxBytesHandler(a.Handler, maxBody),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// Long enough for a slow phone to fetch matcher.wasm and a shard;
		// API answers take milliseconds.
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  2 * time.Minute,
		// Above the handler's own bounds on the URL and the header fields,
		// so that it answers a request over them in JSON, not net/http in
		// plain text.
		MaxHeaderBytes: api.MaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Caught before "listening" is logged, so a SIGHUP from then on
	// refreshes and never ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	adminAddr := ""
	var admin *http.Server
	if adminLn != nil {
		adminAddr = adminLn.Addr().String()
		admin = &http.Server{
			// POST /admin/invalidate reads a form of up to 1 MiB.
			Handler:           http.MaxBytesHandler(a.Admin, api.MaxAdminBody),
			ReadHeaderTimeout: 5 * time.Second,
			// No write timeout: a backup takes as long as the state
			// file's size asks (api.AdminDeps.BackupStall bounds a
			// client that stops reading).
			ReadTimeout: 10 * time.Second,
			IdleTimeout: 2 * time.Minute,
			ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
	}
	log.Info("listening", "addr", ln.Addr().String(), "admin_addr", adminAddr, "ads", a.Indexes.All().Len(),
		"markets", len(a.Indexes.All().Markets()), "catalog", a.Catalog().Version, "data", a.DataFile, "redirect_url", cfg.RedirectURL)

	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	if admin != nil {
		go func() { serveErr <- admin.Serve(adminLn) }()
	}
	// The listeners are bound and /readyz says ready: systemd may start
	// the units ordered after this one.
	sd := newNotifier(getenv, log)
	sd.ready()
	for done := false; !done; {
		select {
		case err := <-serveErr:
			return err
		case <-hup:
			sd.reloading()
			a.Reload(ctx, false) // it logs how it ended
			sd.ready()
		case <-ctx.Done():
			done = true
		}
	}
	sd.stopping()
	log.Info("shutting down")
	a.Drain() // /readyz says 503 while in-flight requests finish
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return shutdown(sctx, srv, admin)
}

// shutdown stops the public server and the admin one (nil: none) at
// once, each waiting for its requests until ctx ends: a backup still
// being sent must not spend the public server's grace, whose clicks are
// finishing. Its error is the public server's.
func shutdown(ctx context.Context, srv, admin *http.Server) error {
	var adminDone sync.WaitGroup
	if admin != nil {
		adminDone.Go(func() { admin.Shutdown(ctx) })
	}
	err := srv.Shutdown(ctx)
	adminDone.Wait()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// prepare checks what cfg names on disk and binds its address and its
// admin address (when it has one), and returns the listeners or every
// problem found, loadErr's (config.Load's) among them, together.
func prepare(cfg config.Config, loadErr error) (ln, admin net.Listener, err error) {
	problems := []error{loadErr, cfg.Prepare()}
	// The error names the flag: the admin address is bound even when only
	// -addr was given, and a second server on one machine finds it taken.
	listen := func(flagName, addr string) net.Listener {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil // Load reports it
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s %s: %w", flagName, addr, err))
		}
		return l
	}
	ln = listen("addr", cfg.Addr)
	if cfg.AdminAddr != "" {
		admin = listen("admin-addr", cfg.AdminAddr)
	}
	if err := errors.Join(problems...); err != nil {
		for _, l := range []net.Listener{ln, admin} {
			if l != nil {
				l.Close()
			}
		}
		return nil, nil, err
	}
	return ln, admin, nil
}
