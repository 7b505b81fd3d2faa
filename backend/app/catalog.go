package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// ShardGrace is how long an earlier catalog's shards are still served
// after a swap: a page holds a manifest for its Cache-Control lifetime and
// then as long as the reader keeps it open.
const ShardGrace = time.Hour

// maxRetired bounds the earlier catalogs whose shards are kept, however
// often the catalog changes: a page whose shard is gone asks for the
// manifest again.
const maxRetired = 2

// The results of a refresh.
const (
	resultSwapped   = "swapped"
	resultUnchanged = "unchanged"
	resultRefused   = "refused"
	resultFailed    = "failed"
)

// live is the catalog served and its refreshes: each builds the next
// version beside the one serving, checks it, and swaps it in at once; the
// requests in flight finish on the version they started with.
type live struct {
	cfg     config.Config
	log     *slog.Logger
	now     func() time.Time
	fetcher *catalog.Fetcher
	sources []catalog.Source
	// fixed is a catalog given in code (Options.Ads), which no refresh
	// changes.
	fixed     []match.Ad
	wasm, zst []byte
	split     int
	onRefresh func(api.Reload)
	// replicas, when set, tell the other replicas of each catalog this one
	// swaps in, and name the version they agreed on.
	replicas *replicas
	// removals, with -postgres, share the ads refreshes removed with the
	// other replicas (shareRemoved). unshared, under mu, are those this
	// replica removed that a share has not recorded yet; shareFailed,
	// under mu, has the next refresh share again though it swaps nothing;
	// shareDown, under mu, is set from a failed share to one that
	// succeeds, an outage logged once. shareRetry, under bgMu, shares
	// again after shareWait, under mu, when a share failed
	// (retryShare), and close waits for it with retrying; shareRetried,
	// in tests, is told how each ended.
	removals     catalog.Removals
	unshared     map[string]api.Removed
	shareFailed  bool
	shareDown    bool
	shareRetry   *time.Timer
	shareWait    time.Duration
	retrying     sync.WaitGroup
	shareRetried func(error)
	// pending, under mu, are the partners and advertisers a reload read
	// from changed files, the first whose budgets fit served with its
	// catalog (accounts.go); newGate makes the budget gate of new budgets.
	pending []*accountSet
	newGate func(context.Context, map[string]accounts.Budget) (*budget.Gate, error)

	cur atomic.Pointer[version]
	mu  sync.Mutex // one refresh at a time
	// changes is when the feeds' ads next change though their bytes do
	// not (a Merchant Center sale starts or ends, an item expires), in
	// Unix nanoseconds, 0 for never: every refreshes then. changed wakes
	// every when a read set it.
	changes atomic.Int64
	changed chan struct{}
	// recheck bounds each wait for changes, so that a clock that jumps
	// (or a test's) is read again.
	recheck time.Duration
	// gap is the least time from the last read of the feeds (readAt, in
	// Unix nanoseconds) to a refresh for a change moment.
	gap    time.Duration
	readAt atomic.Int64
	// waiting, in tests, is told the time every read before each wait.
	waiting func(now time.Time)
	// stale, under mu, is set when a refresh read feeds it did not serve:
	// the fetcher then knows them as unchanged, but they are not served.
	stale bool
	// warnings, under mu, are what the feeds last read say that is not
	// read (catalog.Result.Warnings), for each refresh's answer.
	warnings []string
	// took, under mu, is how long the last refresh's steps took, for its
	// log line.
	took struct{ read, index, shards time.Duration }

	// bgMu guards the recompression of the last swap's shards, which runs
	// after it (recompress): bgStop cuts it short, bg waits for it, and
	// closed, set by close, starts no more.
	bgMu   sync.Mutex
	bgStop context.CancelFunc
	bg     sync.WaitGroup
	closed bool
	// beforeRecompress, in tests, runs in the background before the
	// shards of a swap are recompressed, with the context that cuts it
	// short.
	beforeRecompress func(context.Context)

	stateMu     sync.Mutex
	last        *api.RefreshState
	refreshes   map[string]int
	lastFailure time.Time
}

// version is one catalog as served, with the ads it was built from.
type version struct {
	api      *api.Catalog
	ads      []match.Ad
	loadedAt time.Time
	// feeds are how many ads each source gave, in the order of
	// live.sources; nil for the demo catalog and one given in code.
	feeds []int
	// acc are the partners and advertisers served with it.
	acc *accountSet
}

// newLive reads the catalog the configuration names, or fixed, and builds
// its first version; every problem of every feed is reported together.
func newLive(cfg config.Config, opts Options, log *slog.Logger, wasm, zst []byte) (*live, error) {
	l := &live{cfg: cfg, log: log, now: time.Now, fixed: opts.Ads, wasm: wasm, zst: zst, split: opts.SplitAbove,
		onRefresh: opts.OnRefresh, refreshes: map[string]int{}, changed: make(chan struct{}, 1), recheck: cmp.Or(opts.ChangeCheck, time.Minute),
		gap: cmp.Or(opts.ChangeGap, ChangeGap), waiting: opts.waiting, shareRetried: opts.shareRetried,
		fetcher: catalog.NewFetcher(catalog.FetchOptions{Timeout: cfg.CatalogTimeout, MaxBytes: cfg.CatalogMaxBytes})}
	if opts.Now != nil { // the graces a swap starts run on the handlers' clock
		l.now = opts.Now
	}
	var problems []error
	for _, s := range cfg.Catalogs {
		src, err := catalog.ParseSource(s)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		l.sources = append(l.sources, src)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	if l.fixed == nil && len(l.sources) == 0 && cfg.PartnersFile != "" {
		// Real partners on the demo's ads, whose clicks bill the demo's
		// advertisers: a variable misspelt in the service's environment
		// file leaves no other trace.
		l.log.Warn("no -catalog: the partners of -partners are served the embedded demo catalog; give -catalog FILE or URL (ADLINK_CATALOG) for your own ads")
	}
	ads, feeds, _, err := l.read(context.Background())
	if err != nil {
		return nil, err
	}
	v, err := l.build(ads, catalog.Version(ads), nil)
	if err != nil {
		return nil, err
	}
	v.feeds = feeds
	// The links of ads removed before a restart land after it.
	if l.cfg.DataDir != "" {
		if v.api.Removed, err = loadRemoved(l.removedFile(), l.now(), v.api.Indexes.All()); err != nil {
			l.log.Warn("the removed ads' file does not read: the click links of ads removed before the start get 404", "file", l.removedFile(), "err", err)
		}
	}
	l.cur.Store(v)
	return l, nil
}

// saveRemoved writes the removed ads of next, served in place of prev,
// when either has some: their budgets may have changed with the ads.
func (l *live) saveRemoved(prev, next *version) {
	if l.cfg.DataDir == "" || len(next.api.Removed) == 0 && len(prev.api.Removed) == 0 {
		return
	}
	if err := saveRemoved(l.removedFile(), next.api.Removed); err != nil {
		l.log.Warn("the removed ads' file is not written: after a restart, the click links of ads removed would get 404", "file", l.removedFile(), "err", err)
	}
}

// removedFile is where the removed ads are kept across restarts.
func (l *live) removedFile() string { return filepath.Join(l.cfg.DataDir, RemovedFile) }

// current is the catalog served now.
func (l *live) current() *api.Catalog { return l.cur.Load().api }

// read reads every source, or the embedded demo catalog when there are
// none, and reports how many ads each source gave and whether every
// source is as it was last time.
func (l *live) read(ctx context.Context) (ads []match.Ad, feeds []int, unchanged bool, err error) {
	if l.fixed != nil {
		return l.fixed, nil, true, nil
	}
	opts := catalog.Options{BaseURL: l.cfg.RedirectURL, Now: l.now()}
	if len(l.sources) == 0 {
		ads, err := catalog.Demo(opts)
		return ads, nil, true, err
	}
	l.readAt.Store(opts.Now.UnixNano())
	var problems []error
	var warnings []string
	unchanged = true
	seen := map[string]string{} // id -> source
	var changes time.Time
	for _, src := range l.sources {
		res, err := l.fetcher.Fetch(ctx, src, opts)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		unchanged = unchanged && res.Unchanged
		if len(res.Warnings) > 0 && !res.Unchanged {
			// Told when read, not at every refresh that finds it as it was.
			l.log.Warn("catalog feed: attributes skipped: each is no attribute adlink reads or Google defines", "source", src.Name,
				"warnings", res.Warnings)
		}
		warnings = append(warnings, res.Warnings...)
		if !res.Until.IsZero() && (changes.IsZero() || res.Until.Before(changes)) {
			changes = res.Until
		}
		// One feed's ids are checked as it is read; several feeds' here.
		for i := 0; len(l.sources) > 1 && i < len(res.Ads); i++ {
			id := res.Ads[i].ID
			if first, dup := seen[id]; dup {
				if len(problems) < catalog.MaxErrors {
					problems = append(problems, fmt.Errorf("%s: id: duplicate id %q (also in %s)", src.Name, id, first))
				}
				continue
			}
			seen[id] = src.Name
		}
		ads = append(ads, res.Ads...)
		feeds = append(feeds, len(res.Ads))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, nil, false, err
	}
	l.warnings = warnings
	var at int64
	if !changes.IsZero() {
		at = changes.UnixNano()
	}
	if l.changes.Swap(at) != at {
		select {
		case l.changed <- struct{}{}:
		default:
		}
	}
	return ads, feeds, unchanged, nil
}

// build indexes ads, whose content hash is ver, and cuts their shards,
// beside the version prev that serves: what prev's shards have of the new
// ones is taken from them, and the new version carries prev's shards and
// the ads gone since, for pages and click links that still name them.
func (l *live) build(ads []match.Ad, ver string, prev *version) (*version, error) {
	start := time.Now()
	var prevIndexes *market.Set
	if prev != nil {
		prevIndexes, _ = prev.api.Indexes.(*market.Set)
	}
	indexes, err := market.Rebuild(ads, prevIndexes)
	if err != nil {
		return nil, fmt.Errorf("indexing the catalog: %w", err)
	}
	l.took.index = time.Since(start)
	start = time.Now()
	var prevShards *shards.Set
	if prev != nil {
		prevShards = prev.api.Shards
	}
	// A refresh serves its new shards at fast levels at once (recompress
	// makes them smaller after the swap); a cold start has no catalog to
	// serve meanwhile, and compresses them at the best levels.
	set, err := inPage(indexes, l.wasm, l.zst, l.cfg.RedirectURL, l.split, prevShards, prev != nil, l.log)
	if err != nil {
		return nil, err
	}
	l.took.shards = time.Since(start)
	now := l.now()
	next := &version{ads: ads, loadedAt: now,
		api: &api.Catalog{Version: ver, Indexes: indexes, Shards: set}}
	if prev == nil {
		return next, nil
	}
	old := prev.api
	// A page matched on the shards of an earlier catalog names its
	// criteria; the links it makes count as long as a click token does,
	// across later refreshes too (up to maxRetired of them, as shards),
	// and a token issued by then is clicked up to its TTL later still.
	if b := criteriaBefore(prev.ads, ads, indexes.All(), now.Add(l.cfg.ClickTokenTTL), l.log); b != nil {
		b.From = now
		next.api.Before = append(next.api.Before, *b)
	}
	for _, b := range old.Before {
		if now.Before(b.Until.Add(l.cfg.ClickTokenTTL)) && len(next.api.Before) < maxRetired {
			next.api.Before = append(next.api.Before, b)
		}
	}
	next.api.Retired = append(next.api.Retired, api.Retired{Shards: old.Shards, Until: now.Add(ShardGrace)})
	for _, r := range old.Retired {
		if now.Before(r.Until) && len(next.api.Retired) < maxRetired {
			next.api.Retired = append(next.api.Retired, r)
		}
	}
	// A removed ad's click links land until the last of them expires.
	until := now.Add(max(l.cfg.ClickTTL, l.cfg.SiteTokenTTL))
	all := indexes.All()
	removed := map[string]api.Removed{}
	for id, r := range old.Removed {
		if _, back := all.Lookup(id); !back && now.Before(r.Until) {
			removed[id] = r
		}
	}
	// Feeds keep their order from one refresh to the next, so most ads
	// are found where the last one kept left off, without a search.
	at := 0
	for i := range prev.ads {
		id := prev.ads[i].ID
		if at < len(ads) && ads[at].ID == id {
			at++
			continue
		}
		if k, kept := all.Lookup(id); kept {
			at = k + 1 // the index's ordinals are the ads' positions
			continue
		}
		removed[id] = api.Removed{Ad: prev.ads[i], Until: until}
	}
	// The budgets are those served until now: the reload that removes an
	// advertiser's ads may take it out of the advertisers file too.
	next.api.Removed = lastBudgets(removed, prev.acc)
	return next, nil
}

// reload refreshes the catalog: reads the sources, checks the catalog they
// make, and swaps it in; a refused or failed refresh leaves the catalog
// served as it was. force swaps in a catalog the checks would refuse. A
// catalog swapped in is announced to the other replicas, if there are any.
func (l *live) reload(ctx context.Context, force bool) api.Reload {
	res := l.reloadAs(ctx, force, "")
	switch {
	case l.replicas == nil:
	case res.Result == resultSwapped && res.Version != l.replicas.agreed():
		l.replicas.announce(ctx, res.Version)
	default:
		l.replicas.retry()
	}
	return res
}

// warnAdless logs the budgeted advertisers no ad of v's catalog has, when
// they are not those of was, the version v replaced (nil at start), so
// that an unchanged pair is not logged at every refresh. A budget under a
// misspelt id holds nobody, and the advertiser meant has none.
func (l *live) warnAdless(v, was *version) {
	if v == was || v.acc == nil {
		return
	}
	ids := budget.Adless(v.ads, v.acc.budgets)
	if len(ids) == 0 || was != nil && was.acc != nil && slices.Equal(ids, budget.Adless(was.ads, was.acc.budgets)) {
		return
	}
	l.log.Warn("daily budgets of advertisers no ad of the catalog has: check their ids against the catalog's advertisers",
		"advertisers", ids)
}

// reloadAs refreshes the catalog, on word from the replica from when it is
// not "": then a catalog of the version the replicas agreed on is served
// without the checks, which the replica that announced it passed or was
// forced past.
func (l *live) reloadAs(ctx context.Context, force bool, from string) api.Reload {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := time.Now()
	l.took.read, l.took.index, l.took.shards = 0, 0, 0
	was := l.cur.Load()
	res := l.refreshAll(ctx, force)
	if res.Result != resultSwapped {
		l.shareAgain(ctx)
	}
	cur := l.cur.Load()
	l.warnAdless(cur, was)
	res.Version, res.Ads, res.Warnings = cur.api.Version, len(cur.ads), l.warnings
	attrs := []any{"result", res.Result, "version", res.Version, "ads", res.Ads, "duration_ms", time.Since(start).Milliseconds(),
		"read_ms", l.took.read.Milliseconds(), "index_ms", l.took.index.Milliseconds(), "shards_ms", l.took.shards.Milliseconds()}
	if from != "" {
		attrs = append(attrs, "announced_by", from)
	}
	for _, a := range [][2]string{{"accounts", res.Accounts}, {"partners", res.Partners}, {"advertisers", res.Advertisers},
		{"accounts_error", res.AccountsError}} {
		if a[1] != "" {
			attrs = append(attrs, a[0], a[1])
		}
	}
	switch {
	case failing(res.Result):
		l.log.Warn("catalog refresh: the catalog served stays", append(attrs, "err", res.Error)...)
	case failing(res.Partners) && failing(res.Advertisers):
		l.log.Warn("catalog refresh: the partners and advertisers served stay", attrs...)
	case failing(res.Partners):
		l.log.Warn("catalog refresh: the partners served stay", attrs...)
	case failing(res.Advertisers):
		l.log.Warn("catalog refresh: the advertisers served stay", attrs...)
	default:
		l.log.Info("catalog refresh", attrs...)
	}
	l.stateMu.Lock()
	// Only the catalog's results count: partners swapped alone are no
	// catalog swap.
	l.refreshes[res.Result]++
	l.last = &api.RefreshState{At: l.now().UTC(), Result: res.Result, Error: res.Error,
		Accounts: res.Accounts, Partners: res.Partners, Advertisers: res.Advertisers, AccountsError: res.AccountsError}
	if l.last.Failing() {
		l.lastFailure = l.last.At
	}
	l.stateMu.Unlock()
	if l.onRefresh != nil {
		l.onRefresh(res)
	}
	return res
}

func (l *live) refresh(ctx context.Context, force bool) api.Reload {
	prev := l.cur.Load()
	start := time.Now()
	ads, feeds, unchanged, err := l.read(ctx)
	l.took.read = time.Since(start)
	if err != nil {
		l.stale = true // some feeds may have been read
		return api.Reload{Result: resultFailed, Error: summary(err)}
	}
	if unchanged && !force && !l.stale {
		return api.Reload{Result: resultUnchanged}
	}
	// The version hashes every byte of the catalog on one core. When the
	// feeds changed, so that the catalog most likely did, it is worked
	// out beside the checks and the build, which only a replicas' word
	// needs it before; a catalog that came out the same is then built for
	// nothing, and not served.
	verc := make(chan string, 1)
	go func() { verc <- catalog.Version(ads) }()
	ver := ""
	version := func() string {
		if ver == "" {
			ver = <-verc
		}
		return ver
	}
	defer version() // no hash left running past the refresh
	if (unchanged || l.replicas != nil) && version() == prev.api.Version {
		l.stale = false
		return api.Reload{Result: resultUnchanged}
	}
	l.stale = true
	// Neither force nor the replicas' word passes this check: the ledger
	// would bill no click of such an ad, which answers would still show.
	acc, err := l.accountsFor(ads, prev)
	if err != nil {
		return api.Reload{Result: resultRefused, Error: summary(err)}
	}
	if !force && (l.replicas == nil || version() != l.replicas.agreed()) {
		if err := l.check(prev, len(ads), feeds); err != nil {
			if version() == prev.api.Version {
				l.stale = false
				return api.Reload{Result: resultUnchanged}
			}
			return api.Reload{Result: resultRefused, Error: err.Error() + "; POST /admin/reload?force=true serves it all the same"}
		}
	}
	next, err := l.build(ads, "", prev)
	if version() == prev.api.Version {
		l.stale = false
		return api.Reload{Result: resultUnchanged}
	}
	if err != nil {
		return api.Reload{Result: resultFailed, Error: summary(err)}
	}
	next.api.Version = ver
	next.feeds = feeds
	// The other replicas' removed ads are merged in before the swap, and
	// this one's shared before it is announced, with the budgets served.
	next = next.with(acc)
	l.noteRemoved(prev, next)
	l.serve(l.share(ctx, next))
	l.stale = false
	l.saveRemoved(prev, l.cur.Load())
	l.recompress(next.api.Shards)
	return api.Reload{Result: resultSwapped}
}

// recompress brings set's shards and fragments that a refresh compressed
// at fast levels to the best levels, in the background on half the cores,
// so that searches keep the rest. A newer swap stops the one before: the
// shards the two share are the newer one's to do, and the older one's
// own are soon retired.
func (l *live) recompress(set *shards.Set) {
	l.bgMu.Lock()
	defer l.bgMu.Unlock()
	if l.bgStop != nil {
		l.bgStop()
	}
	if l.closed {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	l.bgStop = stop
	hook := l.beforeRecompress
	l.bg.Go(func() {
		if hook != nil {
			hook(ctx)
		}
		start := time.Now()
		n, err := set.Recompress(ctx, max(1, runtime.GOMAXPROCS(0)/2))
		switch {
		case errors.Is(err, context.Canceled):
			l.log.Info("catalog shards: recompression cut short", "recompressed", n, "duration_ms", time.Since(start).Milliseconds())
		case err != nil:
			l.log.Error("catalog shards: recompression failed; they stay at fast levels", "recompressed", n, "err", err)
		default:
			l.log.Info("catalog shards recompressed at the best levels", "recompressed", n, "duration_ms", time.Since(start).Milliseconds())
		}
	})
}

// waitRecompressed waits until the shards of the swaps so far are at the
// best levels, or their recompression was cut short.
func (l *live) waitRecompressed() { l.bg.Wait() }

// close stops the recompression of shards and the retries of a failed
// share, and waits for them.
func (l *live) close() {
	l.bgMu.Lock()
	l.closed = true
	if l.bgStop != nil {
		l.bgStop()
	}
	if l.shareRetry != nil {
		l.shareRetry.Stop()
	}
	l.bgMu.Unlock()
	l.bg.Wait()
	l.retrying.Wait()
}

// failing tells whether a refresh's result, of the catalog or of the
// accounts files, leaves what they had served.
func failing(result string) bool { return result == resultRefused || result == resultFailed }

// summary is an error's first lines, for /readyz and the reload's answer;
// the log has them all.
func summary(err error) string {
	lines := strings.Split(err.Error(), "\n")
	const most = 5
	if len(lines) <= most {
		return strings.Join(lines, "; ")
	}
	return strings.Join(lines[:most], "; ") + fmt.Sprintf("; and %d more", len(lines)-most)
}

// state is what /readyz says of the catalog.
func (l *live) state() api.CatalogState {
	cur := l.cur.Load()
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	s := api.CatalogState{Version: cur.api.Version, Ads: len(cur.ads), LoadedAt: cur.loadedAt.UTC(), LastRefresh: l.last}
	if l.replicas != nil {
		s.Replicas = l.replicas.state(cur.api.Version)
	}
	return s
}

// stats is what /metrics says of the catalog.
func (l *live) stats() metrics.CatalogStats {
	cur := l.cur.Load()
	now := l.now()
	s := metrics.CatalogStats{Version: cur.api.Version, Ads: len(cur.ads), LoadedAt: cur.loadedAt, Refreshes: map[string]int{}}
	for _, r := range cur.api.Retired {
		if now.Before(r.Until) {
			s.Retired++
		}
	}
	for _, r := range cur.api.Removed {
		if now.Before(r.Until) {
			s.Removed++
		}
	}
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	for k, v := range l.refreshes {
		s.Refreshes[k] = v
	}
	s.LastFailure = l.lastFailure
	s.Failing = l.last != nil && l.last.Failing()
	if l.replicas != nil {
		s.Replicas = true
		s.Announcements = map[string]int{}
		s.Announcements["sent"], s.Announcements["failed"], s.Announcements["heard"], s.Behind = l.replicas.counts(cur.api.Version)
	}
	return s
}
