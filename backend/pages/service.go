// Package pages is adlink's page context: it canonicalises page URLs, keeps
// a durable queue of pages waiting for analysis, fetches them safely,
// extracts their main text and stores the ad criteria they contain, so
// /v2/page/link can answer with ads that fit the page.
//
// A page is unknown, then queued (pending: exactly one job however many
// first requests arrive, persisted before the request is answered), then
// analysed or failed. Analyses older than the TTL are served while they are
// redone; failed pages are tried again after a doubling back-off.
//
// Store keeps the records and the queue, its contract in its doc comment;
// Bolt implements it in the server's bbolt file, and pgstore.Pages in a
// Postgres database that several servers share. A worker renews its hold
// on its job while it works, so a job outlives a worker that died by at
// most a lease (Options.Lease). The Fetcher refuses
// internal addresses on every connection (after DNS, redirects included),
// caps redirects, time and the decoded body, accepts only HTML and honours
// robots.txt. A page's redirects must stay on its site's domains
// (Options.Sites), and a canonical URL it declares is honoured only on the
// host it was fetched from; it never replaces what the canonical page's
// own fetch stored.
package pages

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxQueue     = 1000
	DefaultJobTimeout   = 30 * time.Second
	DefaultTTL          = 24 * time.Hour
	DefaultRetryBackoff = 5 * time.Minute
	DefaultMaxBackoff   = 24 * time.Hour
	DefaultRetention    = 30 * 24 * time.Hour
	// DefaultLease is how long a worker's hold on a job lasts unless it
	// renews it, which it does three times a lease while it works: a job
	// whose worker died is taken by another within a lease, however long
	// the pages take to fetch.
	DefaultLease = 5 * time.Second
	sweepEvery   = time.Hour
	sweepBatch   = 10000
	// storePoll is how often Wait and Drain look at the store again,
	// since another process's workers may finish the jobs they wait for.
	storePoll = 100 * time.Millisecond
)

// Status is the state of a page as the API reports it.
type Status uint8

// The page states.
const (
	// StatusPending: the page is queued for analysis.
	StatusPending Status = iota
	// StatusAnalysed: the page's criteria are known.
	StatusAnalysed
	// StatusFailed: the page could not be analysed; it is tried again later.
	StatusFailed
)

// String returns the status as the API's "status" field spells it.
func (s Status) String() string {
	switch s {
	case StatusPending:
		return "pending"
	case StatusAnalysed:
		return "analysed"
	case StatusFailed:
		return "failed"
	}
	return "unknown"
}

// PageFetcher fetches a page's HTML; *Fetcher is the real one. The page's
// host and every redirect's must pass hosts, when not nil, or the fetch
// fails with ErrOffSite.
type PageFetcher interface {
	Fetch(ctx context.Context, pageURL string, hosts HostFilter) (*Document, error)
}

// Reducer keeps only the ad criteria a page's text contains;
// *match.Index is one.
type Reducer interface {
	Reduce(title, text string) (string, string)
}

// Options configure a Service. The zero value of each field is its default.
type Options struct {
	// Workers is the number of pages analysed at once (2 x GOMAXPROCS).
	Workers int
	// JobTimeout bounds one page's fetch and analysis.
	JobTimeout time.Duration
	// Lease is how long a job stays held after its worker last renewed
	// the hold (Store.Extend): how soon another worker, in this process or
	// another, takes the job of a worker that died.
	Lease time.Duration
	// TTL is the age after which an analysis is redone; the old one is
	// served meanwhile.
	TTL time.Duration
	// RetryBackoff is the wait before a failed page is tried again; it
	// doubles with each failure in a row, up to MaxBackoff.
	RetryBackoff time.Duration
	MaxBackoff   time.Duration
	// Retention is how long a page's record is kept without being
	// requested and re-analysed; older ones are deleted, so the state file
	// does not grow without end.
	Retention time.Duration
	// Sites returns the domains of each registered site the page is on
	// (SitesOf builds it from the partner registry's sites). A page's
	// redirects must stay on the domains of one of them, and a canonical
	// URL it declares is honoured only there. Nil takes each page's own
	// host as its only domain.
	Sites func(pageURL string) [][]string
	// Now is the clock; tests set it.
	Now    func() time.Time
	Logger *slog.Logger
	// OnAnalysis, when set, is told the outcome of each finished analysis,
	// "analysed" or "failed", for the service's metrics.
	OnAnalysis func(outcome string)
	// Catalog, when set, gives the reducer of the catalog served and its
	// version, in place of NewService's reduce: an analysis then keeps the
	// page's whole title and text beside the reduced ones, and a page
	// analysed against another version of the catalog is reduced again
	// against the current one when it is looked up, not fetched again.
	Catalog func() (Reducer, string)
}

// Result is what the service knows of a page.
type Result struct {
	Status Status
	// URL is the canonical URL the analysis is stored under.
	URL string
	// Title and Text are the reduced title and main text to match against.
	Title, Text string
	Lang        string
	// Reason says why a page failed.
	Reason string
	// RetryAfter is when a pending page is likely to be analysed.
	RetryAfter time.Duration
}

// Service answers page lookups and runs the analysis workers.
type Service struct {
	store  Store
	fetch  PageFetcher
	reduce func() Reducer
	o      Options
	log    *slog.Logger

	jobNanos  atomic.Int64 // moving average of a job's duration
	rematched rematchCache
	recent    recentAnswers // answers while the store does not answer

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a job completes
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// NewService returns a Service over store. reduce gives the current
// index's Reducer for each analysis. Start runs the workers.
func NewService(store Store, fetch PageFetcher, reduce func() Reducer, o Options) *Service {
	if o.Workers <= 0 {
		o.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = DefaultJobTimeout
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: store, fetch: fetch, reduce: reduce, o: o, log: o.Logger, changed: make(chan struct{})}
	s.jobNanos.Store(int64(100 * time.Millisecond))
	return s
}

// Start runs the worker pool until Stop. Jobs left in the queue by an
// earlier process are taken first.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for range s.o.Workers {
		s.wg.Add(1)
		go s.work(ctx)
	}
	s.wg.Add(1)
	go s.sweepLoop(ctx)
}

func (s *Service) sweepLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sweep(ctx)
		}
	}
}

// Sweep deletes the records older than the retention; Start runs it every
// hour. It returns how many it deleted.
func (s *Service) Sweep(ctx context.Context) int {
	n, err := s.store.Sweep(ctx, s.o.Now().Add(-s.o.Retention), sweepBatch)
	if err != nil {
		s.log.Error("sweeping old page records", "err", err)
	}
	return n
}

// Stop stops the workers and waits for them. A job cut short stays queued
// and is done after the next Start, in this process or the next.
func (s *Service) Stop() {
	s.mu.Lock()
	cancel := s.cancel
	s.cancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
}

// Lookup returns what is known of the canonical page URL, queueing it for
// analysis when it is unknown, failed long enough ago or older than the
// TTL. It returns ErrQueueFull when an unknown page cannot be queued.
func (s *Service) Lookup(ctx context.Context, pageURL string) (*Result, error) {
	return s.LookupAdmit(ctx, pageURL, nil)
}

// LookupAdmit is Lookup with a gate on new work, such as a per-site rate
// limit: admit, when not nil, is called before a page that is not queued
// yet is queued, and an error from it is returned instead (for an unknown
// page) or skips the re-analysis (for a stale or failed one). Looking up a
// page already queued does not call it, so polling a pending page costs
// nothing, and of many concurrent first lookups of one page only one calls
// it (Store.Push).
//
// A URL not known itself whose query has parameters that the pages at its
// path were seen not to vary by is looked up without them.
//
// While the store does not answer, a page is answered as this process last
// answered it analysed, else pending (Retry-After 5 s), and nothing is
// queued.
func (s *Service) LookupAdmit(ctx context.Context, pageURL string, admit func() error) (*Result, error) {
	res, err := s.lookupAdmit(ctx, pageURL, admit)
	if err != nil && isStoreError(err) && ctx.Err() == nil {
		return s.unavailable(pageURL, err), nil
	}
	if err == nil && res.Status == StatusAnalysed {
		s.remember(pageURL, res)
	}
	return res, err
}

func (s *Service) lookupAdmit(ctx context.Context, pageURL string, admit func() error) (*Result, error) {
	var refused error // admit's answer, told apart from the queue's errors
	if a := admit; a != nil {
		admit = func() error { refused = a(); return refused }
	}
	rec, err := s.store.Get(ctx, pageURL)
	if err != nil {
		return nil, storeError{err}
	}
	if rec == nil && strings.Contains(pageURL, "?") {
		rule, err := s.store.Get(ctx, ruleKey(pageURL))
		if err != nil {
			return nil, storeError{err}
		}
		if rule != nil && len(rule.Ignore) > 0 {
			if u := withoutParams(pageURL, rule.Ignore); u != pageURL {
				pageURL = u
				if rec, err = s.store.Get(ctx, pageURL); err != nil {
					return nil, storeError{err}
				}
			}
		}
	}
	// What was read under pageURL: a record stored after it (a worker
	// completing the page meanwhile) keeps Push from queuing it again.
	var seen time.Time
	if rec != nil {
		seen = rec.At
	}
	push := func() error {
		_, err := s.store.Push(ctx, pageURL, seen, admit)
		if err != nil && err != refused && !errors.Is(err, ErrQueueFull) {
			return storeError{err}
		}
		return err
	}
	// A canonical page analysed again may name a canonical of its own:
	// its record is then an alias too, with no analysis to serve.
	for hops := 0; rec != nil && rec.Alias != ""; hops++ {
		if hops == maxAliasHops {
			rec = nil // as unknown: fetched again, the page stores its own
			break
		}
		target, err := s.store.Get(ctx, rec.Alias)
		if err != nil {
			return nil, storeError{err}
		}
		rec = target
	}
	now := s.o.Now()
	if rec == nil {
		if err := push(); err != nil {
			return nil, err
		}
		return &Result{Status: StatusPending, URL: pageURL, RetryAfter: s.retryAfter(ctx)}, nil
	}
	if rec.Failed && !now.Before(rec.RetryAt) || !rec.Failed && now.Sub(rec.At) > s.o.TTL {
		// Serve what we have while it is redone; a full queue, a refusal
		// by admit or a store that does not answer only delays.
		if err := push(); err != nil && !errors.Is(err, ErrQueueFull) && err != refused && !isStoreError(err) {
			return nil, err
		}
	}
	res := &Result{URL: rec.URL, Lang: rec.Lang}
	if rec.Failed {
		res.Status, res.Reason = StatusFailed, rec.Reason
		return res, nil
	}
	res.Status, res.Title, res.Text = StatusAnalysed, rec.Title, rec.Text
	s.rematch(rec, res)
	return res, nil
}

// maxAliasHops bounds the canonical pages a lookup follows, one naming
// the next, so that no chain or loop of them holds it.
const maxAliasHops = 4

// QueueStats returns how many pages are queued, those being analysed
// included, and how long the oldest has waited (0 when the queue is
// empty).
func (s *Service) QueueStats(ctx context.Context) (depth int, oldest time.Duration, err error) {
	depth, err = s.store.Len(ctx)
	if err != nil {
		return 0, 0, err
	}
	at, ok, err := s.store.Oldest(ctx)
	if err != nil {
		return depth, 0, err
	}
	if ok {
		oldest = max(0, time.Since(at)) // the store stamps jobs with the real clock
	}
	return depth, oldest, nil
}

// retryAfter estimates when a newly queued page will be analysed.
func (s *Service) retryAfter(ctx context.Context) time.Duration {
	n, err := s.store.Len(ctx)
	if err != nil {
		n = 0
	}
	job := time.Duration(s.jobNanos.Load())
	d := time.Duration(n/s.o.Workers+1) * job
	return min(max(d, 100*time.Millisecond), 30*time.Second)
}

// Drain waits until the queue is empty and no job is running, or ctx is
// done. Tests use it instead of sleeping.
func (s *Service) Drain(ctx context.Context) error {
	for {
		ch := s.changedChan()
		n, err := s.store.Len(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-time.After(storePoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Wait waits until pageURL is no longer queued, or ctx is done.
func (s *Service) Wait(ctx context.Context, pageURL string) error {
	for {
		ch := s.changedChan()
		q, err := s.store.Queued(ctx, pageURL)
		if err != nil {
			return err
		}
		if !q {
			return nil
		}
		select {
		case <-ch:
		case <-time.After(storePoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Service) changedChan() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Service) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Service) work(ctx context.Context) {
	defer s.wg.Done()
	for {
		pageURL, err := s.store.Claim(ctx, s.o.Lease)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("page queue", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		start := time.Now()
		renewing, stopRenewing := context.WithCancel(ctx)
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			s.renew(renewing, pageURL)
		}()
		recs := s.run(ctx, pageURL)
		stopRenewing()
		<-renewed
		if ctx.Err() != nil {
			s.release(ctx, pageURL)
			return
		}
		if err := s.complete(ctx, pageURL, recs); err != nil {
			if ctx.Err() != nil {
				// Stopped while the store refused the analysis: the job
				// goes back as well, not held by this process for a lease.
				s.release(ctx, pageURL)
				return
			}
			// The job stays queued. Pause as the store's own errors do, so a
			// failing disk does not turn into fetching the page in a loop.
			s.log.Error("storing page analysis", "url", pageURL, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		if s.o.OnAnalysis != nil && len(recs) > 0 {
			outcome := "analysed"
			if recs[0].Failed {
				outcome = "failed"
			}
			s.o.OnAnalysis(outcome)
		}
		d := time.Since(start)
		old := s.jobNanos.Load()
		s.jobNanos.Store(old + (int64(d)-old)/8)
		s.notify()
	}
}

// release hands the job pageURL back on stopping: it stays queued, for
// another replica at once or the next start.
func (s *Service) release(ctx context.Context, pageURL string) {
	if err := s.store.Release(context.WithoutCancel(ctx), pageURL); err != nil {
		s.log.Error("releasing a page job", "url", pageURL, "err", err)
	}
}

// complete stores the records of the job pageURL, trying again for half
// a lease, a fiftieth of a lease apart, before the job is left queued to
// be fetched again. A Postgres that restarted fails a statement once on
// each connection the pool kept from before, so a few tries mostly pass.
func (s *Service) complete(ctx context.Context, pageURL string, recs []*Record) error {
	until := time.Now().Add(s.o.Lease / 2)
	for try := 1; ; try++ {
		err := s.store.Complete(ctx, pageURL, recs...)
		if err == nil || ctx.Err() != nil || time.Now().After(until) {
			return err
		}
		if try == 1 {
			s.log.Warn("storing page analysis, trying again", "url", pageURL, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.o.Lease / 50):
		}
	}
}

// renew extends the hold on pageURL three times a lease until ctx ends,
// so that the job stays this worker's however long it takes and passes to
// another within a lease of this process dying.
func (s *Service) renew(ctx context.Context, pageURL string) {
	t := time.NewTicker(s.o.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held, err := s.store.Extend(ctx, pageURL, s.o.Lease)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.Warn("renewing the hold on a page job", "url", pageURL, "err", err)
		case !held:
			// Another worker may analyse it too; both store the same.
			s.log.Warn("lost the hold on a page job: its lease passed", "url", pageURL)
			return
		}
	}
}

// run fetches and analyses one page and returns the records to store.
func (s *Service) run(ctx context.Context, pageURL string) (recs []*Record) {
	ctx, cancel := context.WithTimeout(ctx, s.o.JobTimeout)
	defer cancel()
	prev, _ := s.store.Get(ctx, pageURL)
	fail := func(reason string) []*Record {
		n := 1
		if prev != nil && prev.Failed {
			n = prev.Attempts + 1
		}
		now := s.o.Now()
		return []*Record{{URL: pageURL, Failed: true, Reason: reason, At: now,
			Attempts: n, RetryAt: now.Add(backoff(s.o.RetryBackoff, s.o.MaxBackoff, n))}}
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("page analysis panicked", "url", pageURL, "panic", r)
			recs = fail("analysis failed")
		}
	}()
	sites := s.sitesOf(pageURL)
	if len(sites) == 0 {
		s.log.Info("page not analysed", "url", pageURL, "reason", "not on a registered site's domains")
		return fail("page is not on the site's domains")
	}
	within := &siteHosts{sites: sites}
	doc, err := s.fetch.Fetch(ctx, pageURL, within.allow)
	if err != nil {
		var fe *FetchError
		reason := "fetch failed"
		if errors.As(err, &fe) {
			reason = fe.Reason
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "analysis timed out"
		}
		s.log.Info("page not analysed", "url", pageURL, "reason", reason, "err", err)
		return fail(reason)
	}
	ex, err := ExtractPage(doc.HTML, doc.URL)
	if err != nil {
		s.log.Info("page not analysed", "url", pageURL, "err", err)
		return fail("analysis failed")
	}
	title := ex.Title
	if len(ex.Headings) > 0 {
		title += "\n" + strings.Join(ex.Headings, "\n")
	}
	text := ex.Text
	r, version := s.current()
	var full []byte
	if version != "" {
		full = packFull(title, text)
	}
	if r != nil {
		title, text = r.Reduce(title, text)
	}
	rec := &Record{URL: pageURL, Title: title, Text: text, Lang: ex.Lang, At: s.o.Now(), Catalog: version, Full: full}
	c := canonicalOf(pageURL, doc.URL, ex.Canonical, within)
	if c == "" {
		return []*Record{rec}
	}
	alias := &Record{URL: pageURL, Alias: c, At: rec.At}
	// Variants of this page in the parameters its canonical leaves out
	// are this page too, from now on (LookupAdmit).
	var rule []*Record
	if names := droppedParams(pageURL, c); len(names) > 0 {
		rule = append(rule, s.learn(ctx, pageURL, names, rec.At))
	}
	cur, err := s.store.Get(ctx, c)
	switch {
	case err != nil:
		s.log.Error("reading a canonical page's record", "url", c, "err", err)
		return []*Record{rec}
	case cur != nil && cur.Source == "" && !cur.Failed && cur.Alias == "":
		// The canonical page was analysed from its own URL: it keeps
		// that analysis, and this page shares it.
		return append([]*Record{alias}, rule...)
	case cur != nil && cur.Source == "":
		// Its own fetch failed or named yet another page: this page
		// keeps its own analysis rather than share neither.
		return []*Record{rec}
	}
	rec.URL, rec.Source = c, pageURL
	return append([]*Record{rec, alias}, rule...)
}

// learn returns the query rule of pageURL's path with names added.
func (s *Service) learn(ctx context.Context, pageURL string, names []string, at time.Time) *Record {
	rule := &Record{URL: ruleKey(pageURL), At: at}
	if old, err := s.store.Get(ctx, rule.URL); err == nil && old != nil {
		rule.Ignore = old.Ignore
	}
	for _, n := range names {
		if len(rule.Ignore) < maxIgnored && len(n) <= 64 && !slices.Contains(rule.Ignore, n) {
			rule.Ignore = append(rule.Ignore, n)
		}
	}
	slices.Sort(rule.Ignore)
	return rule
}

// sitesOf returns the domain lists of the sites pageURL is on.
func (s *Service) sitesOf(pageURL string) [][]string {
	if s.o.Sites != nil {
		return s.o.Sites(pageURL)
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil
	}
	return [][]string{{hostOf(u)}}
}

// siteHosts is the HostFilter of one fetch: every host it allows is on
// the domains of one site, which it narrows the candidates down to. A
// fetch calls it one hop after another, never at once.
type siteHosts struct {
	sites [][]string
}

func (h *siteHosts) allow(host string) bool {
	var on [][]string
	for _, d := range h.sites {
		if onDomains(host, d) {
			on = append(on, d)
		}
	}
	if len(on) == 0 {
		return false
	}
	h.sites = on
	return true
}

// canonicalOf returns the canonical URL a page declares when it differs
// from pageURL, is on the host the page was finally fetched from (final)
// and that host is on the site's domains (within), else "". Not merely the
// same site: a page on one host must not speak for another's, nor a
// redirect lend a page another host's name.
func canonicalOf(pageURL, final, declared string, within *siteHosts) string {
	if declared == "" {
		return ""
	}
	c, err := Canonical(declared)
	if err != nil || c == pageURL {
		return ""
	}
	cu, err1 := url.Parse(c)
	fu, err2 := url.Parse(final)
	if err1 != nil || err2 != nil || hostOf(cu) != hostOf(fu) {
		return ""
	}
	if within != nil && !within.allow(hostOf(cu)) {
		return ""
	}
	return c
}

// backoff is the wait before the next try of a page that failed attempts
// times in a row: base, doubling, at most max.
func backoff(base, max time.Duration, attempts int) time.Duration {
	d := base
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
