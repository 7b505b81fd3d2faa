// Package app builds the adlink server from its configuration: the catalog
// and its market indexes, the shards and matcher.wasm the page loads, the
// partners, the state store with the click log and the page queue, the
// click keys, the page service and its workers, the metrics, and the HTTP
// handler over them. The command in backend/ serves what it builds; the
// tests that need a whole server build it here too.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink"
	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/backend/retention"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/match"
	"github.com/adlink/adlink/web/matcher"
)

// Options are what a caller puts in place of what the configuration
// names. The zero value builds the server the configuration describes.
type Options struct {
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Start, when not nil, ends the start once cancelled (the server's
	// SIGTERM): Postgres's migrations have no deadline, and one waiting
	// for a lock would otherwise wait as long as the lock is held.
	Start context.Context
	// Now is the clock clicks are stamped with, which also times the
	// Redis fallback and judges feeds' sale and expiry dates; nil is
	// time.Now.
	Now func() time.Time
	// ChangeCheck is the longest the catalog waits for its feeds' next
	// change (a sale's end) before reading Now again; zero is a minute.
	ChangeCheck time.Duration
	// ChangeGap is the least time between reads of the feeds when a
	// change moment starts the second; zero is ChangeGap.
	ChangeGap time.Duration
	// Ads, when not nil, are the catalog, in place of the configured feed
	// files or the embedded demo catalog.
	Ads []match.Ad
	// Matcher and MatcherZstd, when Matcher is not nil, are served as
	// matcher.wasm and its zstd encoding in place of the module embedded
	// in the binary.
	Matcher, MatcherZstd []byte
	// SplitAbove is shards.Options.SplitAbove: zero is its default.
	SplitAbove int
	// RetentionPassed, when not nil, is called after each pass of the
	// retention job with its error.
	RetentionPassed func(error)
	// Refresh, when not nil, refreshes the catalog at each of its ticks in
	// place of every Config.CatalogRefresh.
	Refresh <-chan time.Time
	// OnRefresh, when set, is told how each refresh of the catalog ended,
	// whatever started it.
	OnRefresh func(api.Reload)
	// SiteShards, when set, are siteshards.Options in place of the ones the
	// configuration makes (its Budget from -site-shard-kb still applies
	// when theirs is zero).
	SiteShards *siteshards.Options
	// waiting, in tests, is told the catalog's clock each time its
	// refresh loop starts to wait.
	waiting func(now time.Time)
	// shareRetried, in tests, is told how each share of the removed ads
	// that the retry timer ran ended.
	shareRetried func(error)
}

// siteShardOptions are the site shards' options: -site-shard-kb's budget.
func siteShardOptions(cfg config.Config, opts Options, log *slog.Logger) siteshards.Options {
	var o siteshards.Options
	if opts.SiteShards != nil {
		o = *opts.SiteShards
	}
	if o.Budget == 0 {
		o.Budget = cfg.SiteShardKB * 1000
		if cfg.SiteShardKB == 0 {
			o.Budget = -1 // off
		}
	}
	if o.Now == nil {
		o.Now = opts.Now
	}
	if o.File == "" {
		o.File = filepath.Join(cfg.DataDir, siteshards.ProfilesFile)
	}
	if o.Logger == nil {
		o.Logger = log.With("component", "siteshards")
	}
	return o
}

// App is the server, built and running: its page workers are started.
type App struct {
	// Handler serves every public route.
	Handler http.Handler
	// Admin serves the admin listener's routes: /metrics, POST
	// /admin/reload and GET /admin/backup.
	Admin http.Handler
	// Ads are the catalog as the server started with it; Catalog is the
	// one served now.
	Ads []match.Ad
	// Indexes are the start-up catalog's indexes by market.
	Indexes *market.Set
	// Shards are what the page loads for the start-up catalog: the market
	// shards and matcher.wasm.
	Shards *shards.Set
	// Pages is the page context's service; its workers run until Close.
	Pages *pages.Service
	// Clicks is the click log: the bbolt file's, or Postgres's with
	// -postgres.
	Clicks ClickLog
	// Impressions are the impressions pages reported, where Clicks are.
	Impressions clicks.Impressions
	// Rollups are the clicks and impressions counted for reports, and the
	// advertisers' spend, where Clicks are.
	Rollups Rollups
	// Accounts are who may read reports, and the advertisers' budgets, as
	// the server started; Catalog().Accounts are those served now.
	Accounts *accounts.Book
	// Budget keeps advertisers whose daily budget is spent out of answers,
	// as the server started; Catalog().Budget is the one served now.
	Budget *budget.Gate
	// SiteShards are the shards chosen for each site where a market's own
	// is over -site-shard-kb.
	SiteShards *siteshards.Service
	// Metrics are served at /metrics.
	Metrics *metrics.Metrics
	// DataFile is the state store's file.
	DataFile string

	db        *bolt.DB
	pg        *pgstore.DB
	spooler   *clicks.Spooler // with pg: the clicks Postgres could not take
	redis     *redisstore.Client
	syncStop  context.CancelFunc // stops syncBudgets, and the reads it waits for
	syncDone  chan struct{}
	stopIndex context.CancelFunc // stops the build of the click log's account index
	indexDone chan struct{}
	live      *live
	replicas  *replicas
	stopLive  context.CancelFunc
	liveDone  chan struct{}
	fetcher   *pages.Fetcher
	retention *retention.Job
	draining  atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// credits counts this server's credits (POST /admin/invalidate):
	// without -postgres, the credits' epoch syncBudgets reads.
	credits atomic.Int64
}

// Rollups are the rollups reports read and the spend budgets read.
type Rollups interface {
	clicks.RollupReader
	budget.Spender
}

// ClickLog is the click log, and the listings GET /v2/clicks reads of it.
type ClickLog interface {
	clicks.Store
	clicks.Lister
}

// New builds the server cfg describes, as config.Load returns it, and
// starts its page workers, which analyse the pages queued before a crash.
// The catalog and partners are read first, and every problem with them
// reported together, before the state store is opened. Close releases
// what New opened.
func New(cfg config.Config, opts Options) (a *App, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wasm, zst := opts.Matcher, opts.MatcherZstd
	if wasm == nil {
		wasm, zst = matcher.Files()
	}
	cat, catErr := newLive(cfg, opts, log.With("component", "catalog"), wasm, zst)
	files, accErr := readAccountFiles(cfg)
	var acc *accountSet
	if accErr == nil {
		// The partners' and advertisers' fields are checked even when a
		// feed failed, so that a bad budget is reported with a bad feed
		// line.
		ps, advertisers, err := files.parse(cfg)
		if accErr = err; err == nil {
			acc, accErr = newAccountSet(cfg, ps, advertisers, files)
		}
	}
	if err := errors.Join(catErr, accErr); err != nil {
		return nil, err
	}
	// A budget holds one currency: every refresh is checked as this
	// first catalog is.
	if err := budget.CheckCurrencies(cat.cur.Load().ads, acc.budgets); err != nil {
		return nil, cat.budgetsError(err)
	}
	book := acc.book
	web, err := fs.Sub(adlink.Web, "web")
	if err != nil {
		return nil, err
	}

	first := cat.cur.Load()
	a = &App{Ads: first.ads, Indexes: first.api.Indexes.(*market.Set), Shards: first.api.Shards, live: cat, Accounts: book}
	// "return nil, err" clears a before this runs: close what was built.
	built := a
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if a.db, err = store.Open(cfg.DataDir); err != nil {
		return nil, err
	}
	a.DataFile = a.db.Path()
	var (
		windows   clicks.Windows
		decisions clicks.Decisions
		ledger    clicks.Ledger
		tags      clicks.Tags
	)
	if cfg.PostgresURL != "" {
		start := opts.Start
		if start == nil {
			start = context.Background()
		}
		a.pg, err = pgstore.OpenWith(start, cfg.PostgresURL, pgstore.Options{Logger: log, LockTimeout: cfg.PostgresLockTimeout, MigrateWait: cfg.PostgresMigrateWait})
		if lw := (*pgstore.LockWaitError)(nil); errors.As(err, &lw) {
			return nil, fmt.Errorf("%w; end those sessions (pg_terminate_backend) and start again, or give -postgres-migrate-wait longer than %v", err, cfg.PostgresMigrateWait)
		}
		if err != nil {
			return nil, err
		}
		a.Clicks, a.Impressions, a.Rollups = a.pg.Clicks(), a.pg.Impressions(), a.pg.Rollups()
		windows, decisions, ledger, tags = a.pg.Windows(), a.pg.Decisions(), a.pg.Ledger(), a.pg.Tags()
		log.Info("clicks, impressions, reports and spend are kept in Postgres")
	} else if err = a.boltStores(&windows, &decisions, &ledger, &tags, log); err != nil {
		return nil, err
	}
	a.Metrics = metrics.New()
	limiter, flags, err := a.openRedis(cfg, opts, log)
	if err != nil {
		return nil, err
	}
	if a.redis != nil && a.pg == nil {
		// Redis shares the limits and the budget flags, not the record:
		// replicas of one traffic would each bill a link, and a budget.
		log.Warn("redis without postgres: this server's clicks, their decisions and windows, reports and budget spend stay in its own file; servers that share traffic need -postgres too")
	}
	var spooling clicks.Spooling
	if a.pg != nil {
		if ledger, err = a.spoolClicks(log); err != nil {
			return nil, err
		}
		spooling = a.spooler
	}
	// The credits' epoch is read before the day's spend: a credit that
	// commits between them is read again at the first tick.
	epoch := a.credits.Load()
	if a.pg != nil {
		epoch = a.creditEpoch(context.Background())
	}
	// The replica's id, kept in its data directory, marks the flags it
	// raises: after a restart it still knows which are its own.
	replica, err := budget.LoadOrCreateReplica(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// Today's spend is read now, so an advertiser stopped before a
	// restart stays stopped.
	// A reload that changes the budgets reads the day's spend again.
	// The shared flags are read at once: the gate serves before the
	// next Sync. With Postgres the spend it reads is every replica's, so
	// a flag stops an advertiser only when that spend says so.
	cat.newGate = func(ctx context.Context, budgets map[string]accounts.Budget) (*budget.Gate, error) {
		g, err := budget.New(ctx, budget.Options{Budgets: budgets, Spent: a.Rollups, Flags: flags, Shared: a.pg != nil, Replica: replica, Now: opts.Now})
		if err == nil && flags != nil {
			if err := g.Sync(ctx); err != nil {
				log.Warn("budget: the new gate's first read of the shared flags", "err", err)
			}
		}
		return g, err
	}
	if a.Budget, err = cat.newGate(context.Background(), acc.budgets); err != nil {
		return nil, err
	}
	acc.gate, acc.gateOf = a.Budget, acc.budgets
	cat.cur.Store(cat.cur.Load().with(acc))
	cat.warnAdless(cat.cur.Load(), nil)
	if a.spooler != nil {
		a.shipSpool(log)
	}
	// Without shared flags or Postgres too: a gate a reload made before
	// this server's credit reads the spend again at its first tick.
	a.syncBudgets(log, epoch)
	clickKeys, err := loadClickKeys(cfg)
	if err != nil {
		return nil, err
	}
	log.Info("click keys", "signing", clickKeys.SigningKeyID())
	// With Postgres every replica takes its page jobs from one queue and
	// serves the analyses of all.
	var pageQueue pages.Store
	if a.pg != nil {
		pageQueue = a.pg.Pages(0, 0)
	} else if pageQueue, err = pages.OpenBolt(a.db, 0); err != nil {
		return nil, err
	}
	a.fetcher = pages.NewFetcher(pages.FetchOptions{AllowPrivate: cfg.FetchAllowPrivate})
	// Analyses keep what a new catalog needs to match the page again;
	// the sites are those served now.
	pageService := pages.NewService(pageQueue, a.fetcher, nil, pages.Options{Logger: log.With("component", "pages"),
		Lease: cfg.PageLease, OnAnalysis: a.Metrics.Analysis, Sites: func(pageURL string) [][]string { return cat.accounts().sites(pageURL) },
		Catalog: func() (pages.Reducer, string) {
			c := cat.current()
			return c.Indexes.All(), c.Version
		}})
	a.Metrics.WatchQueue(func() metrics.QueueStats {
		depth, age, err := pageService.QueueStats(context.Background())
		if err != nil {
			log.Warn("reading the page queue for /metrics", "err", err)
		}
		return metrics.QueueStats{Depth: depth, OldestAge: age}
	})
	a.Metrics.WatchCatalog(cat.stats)
	pageService.Start() // pages queued before a crash are analysed now
	a.Pages = pageService
	if a.retention, err = a.newRetention(cfg, opts, log); err != nil {
		return nil, err
	}
	a.retention.Start() // days that aged out while the server was down go now
	// Every replica lands the links of the ads any of them removed.
	if a.pg != nil {
		cat.shareRemoved(context.Background(), a.pg.Removals(log.With("component", "catalog")))
	}
	// A refresh on one replica tells the others: through Redis when there
	// is one, else Postgres.
	switch {
	case a.redis != nil:
		a.replicas = startReplicas(cat, a.redis.Versions(), log.With("component", "catalog"))
	case a.pg != nil:
		a.replicas = startReplicas(cat, a.pg.Versions(log.With("component", "catalog")), log.With("component", "catalog"))
	}
	tick := opts.Refresh
	var ticker *time.Ticker
	if tick == nil && cfg.CatalogRefresh > 0 {
		ticker = time.NewTicker(cfg.CatalogRefresh)
		tick = ticker.C
	}
	// Feeds refresh on the tick, and at the moments their ads change
	// (sales, expiry dates) with or without one.
	if tick != nil || len(cat.sources) > 0 {
		var ctx context.Context
		ctx, a.stopLive = context.WithCancel(context.Background())
		a.liveDone = make(chan struct{})
		go func() {
			defer close(a.liveDone)
			if ticker != nil {
				defer ticker.Stop()
			}
			cat.every(ctx, tick)
		}()
	}

	siteOpts := siteShardOptions(cfg, opts, log)
	if a.pg != nil && siteOpts.Store == nil {
		// A page may fetch the shard one replica's manifest names from
		// another.
		siteOpts.Store = a.pg.SiteShards()
	}
	a.SiteShards = siteshards.New(siteOpts)
	a.Metrics.WatchSiteShards(func() metrics.SiteShardStats {
		s := a.SiteShards.Stats()
		return metrics.SiteShardStats{Profiles: s.Sites, Shards: s.Shards, Bytes: s.Bytes, Builds: s.Builds, HeadBuilds: s.HeadBuilds, Refused: s.Refused,
			Shared: s.Shared, ShareFailed: s.ShareFailed, Fetched: s.Fetched, FetchMissed: s.FetchMissed, FetchFailed: s.FetchFailed}
	})
	invalidate, err := a.invalidator(log)
	if err != nil {
		return nil, err
	}
	a.Admin = api.NewAdmin(api.AdminDeps{Metrics: a.Metrics, Reload: a.Reload, Invalidate: invalidate, Logger: log, Hosts: cfg.AdminHosts,
		Rollups: a.Rollups, Backup: func() (*os.File, error) { return store.Backup(a.db) }})
	// The partners, report readers and budgets come with each catalog
	// version (version.with), none from start-up: a version without
	// them answers 500 rather than serve a set revoked since.
	var awaitCatalog func(context.Context) bool
	if a.replicas != nil {
		awaitCatalog = a.replicas.await
	}
	a.Handler = api.NewServer(api.Deps{
		Config:       cfg,
		Logger:       log,
		Catalog:      cat.current,
		CatalogState: cat.state,
		AwaitCatalog: awaitCatalog,
		Clicks:       a.Clicks,
		ClickKeys:    clickKeys,
		Windows:      windows,
		Decisions:    decisions,
		Ledger:       ledger,
		Spooling:     spooling,
		Impressions:  a.Impressions,
		Rollups:      a.Rollups,
		ClickLog:     a.Clicks,
		Spend:        a.Rollups,
		Tags:         tags,
		SiteShards:   a.SiteShards,
		Pages:        pageService,
		Now:          opts.Now,
		Web:          web,
		Metrics:      a.Metrics,
		Limiter:      limiter,
		Ready:        a.ready,
		Degraded:     a.degraded,
	})
	return a, nil
}

// boltStores sets the click log, impressions and rollups of the bbolt
// file, and its windows, decisions, ledger and yk_tags' bound, and
// starts the build of the click log's account index for a file from
// before it had one (where the last start's build stopped).
func (a *App) boltStores(windows *clicks.Windows, decisions *clicks.Decisions, ledger *clicks.Ledger, tags *clicks.Tags, logger *slog.Logger) error {
	log, err := clicks.New(a.db)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	a.stopIndex, a.indexDone = stop, make(chan struct{})
	go func() {
		defer close(a.indexDone)
		l := logger.With("component", "clicks")
		if err := log.BuildIndex(ctx, l); err != nil && ctx.Err() == nil {
			l.Error("building the click log's account index: listings read the whole range until a start builds it", "err", err)
		}
	}()
	w, err := clicks.NewWindows(a.db)
	if err != nil {
		return err
	}
	d, err := clicks.NewDecisions(a.db)
	if err != nil {
		return err
	}
	l, err := clicks.NewLedger(a.db)
	if err != nil {
		return err
	}
	r, err := clicks.NewRollups(a.db)
	if err != nil {
		return err
	}
	imps, err := clicks.NewImpressions(a.db)
	if err != nil {
		return err
	}
	g, err := clicks.NewTags(a.db)
	if err != nil {
		return err
	}
	a.Clicks, a.Impressions, a.Rollups = log, imps, r
	*windows, *decisions, *ledger, *tags = w, d, l, g
	return nil
}

// spoolClicks returns the ledger that records clicks in Postgres while it
// answers and, while it does not, judges them here and spools them to the
// bbolt file, and makes the impression log spool the same way;
// shipSpool starts the shipping of the spool. The decisions
// and windows that judge a spooled click are Redis's, shared by the
// replicas, when the server has Redis (the file's while Redis does not
// answer either), else the file's. Each shipment tells the budget gate
// served what it billed and refused as over budget, as a live click
// does, so that a budget the spooled clicks spent stops the advertiser
// here at once and raises its flag for the other replicas.
func (a *App) spoolClicks(log *slog.Logger) (clicks.Ledger, error) {
	spool, err := clicks.NewSpool(a.db)
	if err != nil {
		return nil, err
	}
	opts := clicks.SpoolerOptions{Logger: log.With("component", "clicks"), Impressions: a.pg.Impressions(),
		Spooled: a.Metrics.ClickSpooled, Shipped: a.Metrics.ClicksShipped,
		Recorded: func(ctx context.Context, shipped []clicks.Spooled) {
			acc := a.live.accounts()
			if acc == nil {
				return
			}
			cs := make([]*clicks.Click, len(shipped))
			for i := range shipped {
				cs[i] = &shipped[i].Click
			}
			// Should a spend not be read now, the next click reads it,
			// and the ledger holds the budget meanwhile.
			if err := acc.gate.Clicked(ctx, cs...); err != nil {
				log.Warn("budget: the spend of shipped clicks", "err", err)
			}
		}}
	if a.redis != nil {
		d, err := clicks.NewDecisions(a.db)
		if err != nil {
			return nil, err
		}
		w, err := clicks.NewWindows(a.db)
		if err != nil {
			return nil, err
		}
		opts.Decisions, opts.Windows = a.redis.Decisions(d), a.redis.Windows(w)
	}
	a.spooler = clicks.NewSpooler(a.pg.Ledger(), a.pg.Ledger(), spool, opts)
	a.Impressions = a.spooler.Impressions(a.pg.Impressions())
	a.Metrics.WatchSpool(spool.Depth)
	return a.spooler, nil
}

// shipSpool starts the shipping of the spool, what a crash left in it
// first. The budget gate is served by then: a shipment after the gate's
// first read of the day's spend reaches the gate.
func (a *App) shipSpool(log *slog.Logger) {
	a.spooler.Start()
	if n := a.spooler.Depth(); n > 0 {
		log.Warn("clicks spooled before the server stopped are shipped to postgres now", "spooled", n)
	}
}

// openRedis opens the Redis that cfg names and returns what makes the
// server's limiters there, each with a ratelimit.Set of this process to
// answer while Redis does not, and the budget flags the replicas share;
// without one it returns nils: the limiters in this process alone, and no
// flags. A Redis down at start-up is not fatal: the limiters fall back
// until it answers.
func (a *App) openRedis(cfg config.Config, opts Options, log *slog.Logger) (func(kind string) ratelimit.Limiter, budget.Flags, error) {
	if cfg.RedisURL == "" {
		return nil, nil, nil
	}
	rc, err := redisstore.Open(cfg.RedisURL, redisstore.Options{Logger: log, Metrics: a.Metrics, Now: opts.Now})
	if err != nil {
		return nil, nil, err
	}
	a.redis = rc
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rc.Ping(ctx); err != nil {
		log.Warn("redis does not answer: rate limits are kept in this process until it does", "err", err)
	} else {
		log.Info("rate limits and budget flags are kept in redis, shared by replicas")
	}
	return func(kind string) ratelimit.Limiter {
		return rc.Limiter(kind, ratelimit.New(ratelimit.Options{}))
	}, rc.BudgetFlags(), nil
}

// budgetSyncEvery is how often the gate reads the budgets other replicas
// spent: how long their ads may still show here.
const budgetSyncEvery = time.Second

// syncBudgets has the budget gate read the shared flags every
// budgetSyncEvery until Close, which ends a read in progress, and the
// credits' epoch first (with -postgres, Postgres's; else this server's
// count of its own credits): when a credit (with -postgres, of any
// replica, or of adlink invalidate) raised it since epoch, the gate
// reads its advertisers' spend of the day again, and shows again those a
// credit took below their budgets, until a read does. A gate a
// reload serves reads it again at its first tick: it may have read the
// spend before a credit whose epoch the gate before it read.
func (a *App) syncBudgets(log *slog.Logger, epoch int64) {
	ctx, stop := context.WithCancel(context.Background())
	a.syncStop, a.syncDone = stop, make(chan struct{})
	w := creditWatch{gate: a.live.accounts().gate, epoch: epoch}
	go func() {
		defer close(a.syncDone)
		t := time.NewTicker(budgetSyncEvery)
		defer t.Stop()
		syncFailing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				g := a.live.accounts().gate
				w = a.rereadCredited(ctx, g, w, log)
				// Logged once while it fails: Redis down says so itself.
				err := g.Sync(ctx)
				if err != nil && !syncFailing && ctx.Err() == nil {
					log.Warn("budget", "err", err)
				}
				syncFailing = err != nil
			}
		}
	}()
}

// creditReadTimeout bounds a read of the credits' epoch and the spend
// read again after it changed.
var creditReadTimeout = 10 * time.Second

// creditEpoch reads Postgres's credits' epoch (pgstore.DB.CreditEpoch),
// or -1 when it does not answer, which the first epoch read then differs
// from.
func (a *App) creditEpoch(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := a.pg.CreditEpoch(ctx)
	if err != nil {
		return -1
	}
	return n
}

// creditWatch is the gate the credits' epoch was last read for, and
// that epoch: the gate's spend of the day was read after the credits
// before it.
type creditWatch struct {
	gate  *budget.Gate
	epoch int64
	// failing tells that the last read again failed: it is logged once
	// while it fails, each tick trying again (Redis down says so itself).
	failing bool
}

// rereadCredited reads the credits' epoch (without -postgres, credits)
// and, when it is not w's or g
// is not w's gate, has g read its advertisers' spend of the day again; it
// returns what g has read after, w again when Postgres did not answer
// (the next tick tries again). A gate a reload made before a credit, and
// served after the gate before it read that credit, holds the spend
// before the credit (budget.Gate.Carry keeps the larger): only its own
// read takes the credit off. The reads end with ctx.
func (a *App) rereadCredited(ctx context.Context, g *budget.Gate, w creditWatch, log *slog.Logger) creditWatch {
	rctx, cancel := context.WithTimeout(ctx, creditReadTimeout)
	defer cancel()
	n, err := a.credits.Load(), error(nil)
	if a.pg != nil {
		n, err = a.pg.CreditEpoch(rctx)
	}
	if err != nil || (n == w.epoch && g == w.gate) {
		return w
	}
	if err := g.Reread(rctx); err != nil {
		if ctx.Err() != nil {
			return w // Close
		}
		if !w.failing {
			log.Warn("budget: reading the spend again after a credit", "err", err)
		}
		w.failing = true
		return w
	}
	a.Metrics.BudgetReread()
	return creditWatch{gate: g, epoch: n}
}

// Reload refreshes the catalog now, as -catalog-refresh, SIGHUP and POST
// /admin/reload do: the feeds are read again (a feed that has not changed
// is not fetched or parsed again), the new catalog is built beside the one
// serving, checked, and swapped in at once. The partners and advertisers
// files are read again too and, when they changed and pass their checks,
// swapped in with the catalog or alone: each is judged apart, so that a
// catalog refused or failed keeps no key revoked served, and bad files
// stop no catalog (Result is the catalog's, Accounts the files').
// force swaps in a catalog that the catalog's own checks refuse. One
// refresh runs at a time; a second waits for it. With -redis or
// -postgres, a catalog swapped in is announced, and the other replicas
// serve it too.
func (a *App) Reload(ctx context.Context, force bool) api.Reload { return a.live.reload(ctx, force) }

// Catalog is the catalog served now.
func (a *App) Catalog() *api.Catalog { return a.live.current() }

// ready tells /readyz whether the server can answer: not draining and
// the store open. Postgres down is degraded, not unready: clicks spool.
func (a *App) ready(ctx context.Context) error {
	if a.draining.Load() {
		return errors.New("shutting down")
	}
	// A closed bbolt file refuses transactions.
	return a.db.View(func(*bolt.Tx) error { return nil })
}

// degradedPing bounds how long /readyz waits for Postgres.
const degradedPing = time.Second

// degraded tells /readyz why the server answers with less than it should:
// with -postgres, Postgres does not answer, or clicks wait in the spool.
func (a *App) degraded(ctx context.Context) string {
	if a.spooler == nil {
		return ""
	}
	if why := a.spooler.Degraded(); why != "" {
		return why
	}
	ctx, cancel := context.WithTimeout(ctx, degradedPing)
	defer cancel()
	if err := a.pg.Ping(ctx); err != nil {
		return "postgres does not answer: " + err.Error()
	}
	return ""
}

// Drain makes /readyz answer 503, so that a load balancer sends no more
// requests while those in flight finish; the server still answers them.
func (a *App) Drain() { a.draining.Store(true) }

// newRetention returns the retention job over the raw rows where they are
// kept. With Postgres every replica runs it, one pass at a time, and the
// days exported are recorded there, so each is exported once whichever
// replica's pass comes to it.
func (a *App) newRetention(cfg config.Config, opts Options, log *slog.Logger) (*retention.Job, error) {
	dir := cfg.ExportDir
	if dir == "" {
		dir = filepath.Join(cfg.DataDir, "export")
	}
	o := retention.Options{Retention: cfg.Retention, Dir: dir, Now: opts.Now,
		Logger: log.With("component", "retention"), Metrics: a.Metrics, Passed: opts.RetentionPassed}
	if a.pg != nil {
		host := cfg.RetentionHost
		if host == "" {
			var err error
			if host, err = os.Hostname(); err != nil {
				return nil, fmt.Errorf("retention: the host's name (give -retention-host): %w", err)
			}
		}
		r := a.pg.Retainer()
		o.Exports, o.Host, o.Turn = r, host, r.TryTurn
		return retention.New(r, o), nil
	}
	r, err := clicks.NewRetainer(a.db)
	if err != nil {
		return nil, err
	}
	return retention.New(r, o), nil
}

// Close stops the page workers (a job cut short stays queued for the next
// start), the retention job (a day cut short is finished at the next
// start) and the build of the click log's account index (the next start
// goes on with it), then closes the fetcher and the store. Call it once the HTTP
// server has stopped; later calls return the first one's error.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		a.Drain()
		if a.stopLive != nil {
			a.stopLive()
			<-a.liveDone
		}
		if a.replicas != nil {
			a.replicas.close()
		}
		if a.live != nil {
			a.live.close()
		}
		if a.Pages != nil {
			a.Pages.Stop()
		}
		siteErr := a.SiteShards.Close()
		if a.retention != nil {
			a.retention.Stop()
		}
		if a.stopIndex != nil {
			a.stopIndex() // the next start goes on where it stopped
			<-a.indexDone
		}
		if a.syncStop != nil {
			a.syncStop()
			<-a.syncDone
		}
		if a.fetcher != nil {
			a.fetcher.Close()
		}
		if a.spooler != nil {
			a.spooler.Stop() // what is left spooled ships after the next start
		}
		if a.pg != nil {
			a.pg.Close()
		}
		if a.db != nil {
			a.closeErr = a.db.Close()
		}
		a.closeErr = errors.Join(a.closeErr, siteErr)
		if a.redis != nil {
			a.closeErr = errors.Join(a.closeErr, a.redis.Close())
		}
	})
	return a.closeErr
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

// inPage prepares the shards of every market and matcher.wasm, compressed
// once (what prev, the catalog before, has of them is taken from it), and
// logs which zstd encoding of the module it serves. Without a
// built module the shards are still served.
func inPage(indexes *market.Set, wasm, zst []byte, redirectURL string, splitAbove int, prev *shards.Set, fast bool, log *slog.Logger) (*shards.Set, error) {
	if wasm == nil && prev == nil {
		log.Warn("matcher.wasm is not built: pages cannot match locally; run make wasm")
	}
	set, err := shards.Build(indexes, shards.Options{Matcher: wasm, MatcherZstd: zst, RedirectURL: redirectURL, SplitAbove: splitAbove, Previous: prev, Fast: fast})
	if err != nil {
		return nil, fmt.Errorf("shards: %w", err)
	}
	if m := set.Matcher(); m != nil && prev == nil { // said once, at start-up
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
	return set, nil
}
