// Package api is adlink's HTTP interface: the routes, parameter parsing and
// validation, JSON and JSONP responses and errors, and the handlers of the
// search context, the click redirect and the health check.
package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/contract"
)

// Deps are what the server needs. Config, Indexes or Catalog, and Clicks
// are required, and Partners unless each Catalog version brings its own;
// Logger and Now default to a discarding logger and time.Now.
type Deps struct {
	Config config.Config
	Logger *slog.Logger
	// Catalog, when set, is the catalog served now, read once at the start
	// of each request; it takes the place of Indexes and Shards, which are
	// then ignored.
	Catalog func() *Catalog
	// CatalogState, when set, says in /readyz how the catalog's refreshes
	// go.
	CatalogState func() CatalogState
	// AwaitCatalog, when set, waits until ctx ends for the catalog a
	// replica heard the others announce and is reading, when it is behind
	// on one, and tells whether a newer catalog came; it returns false at
	// once when the replica is not behind. A click link another replica
	// made for an ad new in its catalog then lands here too.
	AwaitCatalog func(ctx context.Context) bool
	// Indexes and Shards are a catalog that never changes.
	Indexes market.Indexes
	// Partners are who may ask for ads, for Catalog versions without
	// their own (Catalog.Partners). Nil with Catalog: every version must
	// bring its partners and report readers, and one without answers 500.
	Partners partners.Registry
	Clicks   clicks.Recorder
	// Pages is the page context; without it /v2/page/link answers 503.
	Pages Pages
	// Now is the clock clicks are stamped with.
	Now func() time.Time
	// Shards are the market shards and matcher.wasm the page loads; nil
	// serves none.
	Shards *shards.Set
	// SiteShards, when set, choose for each site the shard its pages load
	// where the market's own is over their budget, and learn from the
	// pages the server answers; nil serves every market's own shard.
	SiteShards SiteShards
	// Web holds widget.js, demo/ (the demo publisher pages) and the
	// report dashboard's dashboard.html, .js and .css; nil serves none.
	Web fs.FS
	// Metrics count requests and rate-limit rejections; nil counts nothing.
	// They are served on the admin listener (NewAdmin), not here.
	Metrics *metrics.Metrics
	// ClickKeys sign the click URLs of every answer and the site token of
	// the shard manifest, and verify clicks; nil signs nothing and bills no
	// click.
	ClickKeys *clicks.Keys
	// Windows hold each client network's billable clicks; required with
	// ClickKeys.
	Windows clicks.Windows
	// Decisions hold the decision ids of signed click URLs and click
	// tokens already clicked, so each bills once; required with ClickKeys.
	Decisions clicks.Decisions
	// Ledger records each click with its decision and window in one
	// durable step; without it, Decisions, Windows and Clicks do it one
	// after another (clicks.Sequential).
	Ledger clicks.Ledger
	// Spooling, when set, is the Ledger itself where it may spool a
	// click rather than record it in the shared record (with Postgres):
	// the redirect records through it to learn whether it did, as a
	// spooled click's spend is read when it ships, not at the click.
	Spooling clicks.Spooling
	// Impressions record the ads pages showed (GET /v1/impression); without
	// them the beacon answers 503 and in-page ads get no click tokens.
	Impressions clicks.Impressions
	// Tags bound the yk_tags of links pages made per site and UTC day
	// (config.SiteDailyTags), shared by the replicas that share Rollups;
	// nil holds the bound in this process alone.
	Tags clicks.Tags
	// Accounts are who may read reports, and the advertisers' budgets,
	// for versions without their own; nil is no report reader and no
	// budget, unless Catalog is set and Partners is not (see Partners).
	Accounts *accounts.Book
	// Rollups are what GET /v2/report reads; without them it answers 503.
	Rollups clicks.RollupReader
	// ClickLog is what GET /v2/clicks reads, where Rollups are; without
	// it the listing answers 503.
	ClickLog clicks.Lister
	// Spend is where an advertiser's spend of a day of its budget is read
	// (GET /v2/budget): the store the ledger bills against, which the
	// budget gate reads too; without it the budget answers 503.
	Spend clicks.SpendReader
	// Budget keeps the ads of advertisers whose daily budget is spent out
	// of answers and shard manifests, and paces even ones; nil shows
	// every ad (the ledger still bills no click over a budget).
	Budget *budget.Gate
	// Limiter, when set, makes the Limiter of each kind of key the server
	// limits (keys, ips, sites, reports): a shared one (Redis) holds each
	// limit across replicas. Nil keeps each kind in a ratelimit.Set in
	// this process.
	Limiter func(kind string) ratelimit.Limiter
	// Ready, when set, tells /readyz whether the server's state is usable
	// (the store open, not shutting down); an error makes it a 503.
	Ready func(ctx context.Context) error
	// Degraded, when set, says why the server answers with less than it
	// should (Postgres down, clicks spooled), or "" when it does not;
	// /readyz then says "degraded" with the reason, still 200: the
	// server answers every request.
	Degraded func(ctx context.Context) string
}

// server holds the dependencies the handlers share; it has no other state
// than what its tagGate remembers of the day's yk_tags.
type server struct {
	cfg      config.Config
	log      *slog.Logger
	catalog  func() *Catalog
	state    func() CatalogState
	await    func(ctx context.Context) bool
	partners partners.Registry
	clicks   clicks.Recorder
	pages    Pages
	now      func() time.Time
	web      fs.FS
	metrics  *metrics.Metrics
	ready    func(ctx context.Context) error
	degraded func(ctx context.Context) string
	ids      *idSource
	limits   limiters
	judge    *clicks.Judge
	ledger   clicks.Ledger
	spooling clicks.Spooling
	imps     clicks.Impressions
	accounts *accounts.Book
	rollups  clicks.RollupReader
	clickLog clicks.Lister
	spend    clicks.SpendReader
	budget   *budget.Gate
	sites    SiteShards
	tags     *tagGate
	// running holds each account's reports running, by account: a
	// chan struct{} of reportsAtOnce places.
	running sync.Map
	// reportRows bound the rows of every account's reports running.
	reportRows *reportRows
}

// NewServer returns the handler of every adlink route. It panics when a
// required dependency is missing, a programming error.
func NewServer(d Deps) http.Handler {
	if (d.Indexes == nil && d.Catalog == nil) || (d.Partners == nil && d.Catalog == nil) || d.Clicks == nil {
		panic("api.NewServer: Indexes or Catalog, Partners (or Catalog) and Clicks are required")
	}
	if d.ClickKeys != nil && (d.Windows == nil || d.Decisions == nil) {
		panic("api.NewServer: ClickKeys need Windows and Decisions")
	}
	s := &server{
		cfg:      d.Config,
		log:      d.Logger,
		catalog:  d.Catalog,
		state:    d.CatalogState,
		await:    d.AwaitCatalog,
		partners: d.Partners,
		clicks:   d.Clicks,
		pages:    d.Pages,
		now:      d.Now,
		web:      d.Web,
		metrics:  d.Metrics,
		ready:    d.Ready,
		degraded: d.Degraded,
		ids:      newIDSource(),
		limits:   newLimiters(d.Limiter),
		judge:    newJudge(d.ClickKeys, d.Windows, d.Decisions, d.Config),
		ledger:   d.Ledger,
		spooling: d.Spooling,
		imps:     d.Impressions,
		accounts: d.Accounts,
		rollups:  d.Rollups,
		clickLog: d.ClickLog,
		spend:    d.Spend,
		budget:   d.Budget,
		sites:    d.SiteShards,
		tags:     newTagGate(d.Tags, d.Config.SiteDailyTags),

		reportRows: newReportRows(d.Config.ReportRows),
	}
	if s.accounts == nil && d.Partners != nil {
		// No report readers, no budgets. Without d.Partners, the
		// versions d.Catalog serves bring their own (accountsIn).
		s.accounts, _ = accounts.New(nil, nil)
	}
	if s.reportRows != nil {
		s.metrics.WatchReportRows(s.reportRows.holding)
	}
	if s.ledger == nil {
		s.ledger = clicks.Sequential{Decisions: d.Decisions, Windows: d.Windows, Store: d.Clicks}
	}
	if s.catalog == nil {
		static := &Catalog{Indexes: d.Indexes, Shards: d.Shards}
		s.catalog = func() *Catalog { return static }
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = slog.New(requestIDHandler{s.log.Handler()})
	if s.now == nil {
		s.now = time.Now
	}
	if s.sites == nil {
		s.sites = (*siteshards.Service)(nil) // serves each market's own shard
	}
	mux := http.NewServeMux()
	s.routes(mux)
	return s.observe(mux)
}

// errorCache keeps every cache from storing an error. As JSONP an error
// is a 200, and a 404 is stored by default, as any 200 is; many errors
// pass (a full page queue, a shard or an ad a replica still reading a
// new catalog lacks, a partner the next reload adds), and a shared
// cache that kept one would give it to every reader of that URL.
const errorCache = "no-store"

// handlerFunc is a handler that returns its failure instead of writing it.
// It returns an error only before it has written anything.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// jsonp adapts a /v2 handler: cross-origin readable, and its errors written
// as JSONP when the request has a valid callback.
func (s *server) jsonp(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", exposedHeaders)
		if err := h(w, r); err != nil {
			q, _ := url.ParseQuery(r.URL.RawQuery)
			s.fail(w, r, err, callbackOf(q))
		}
	})
}

// exposedHeaders are the response headers a cross-origin script may read.
const exposedHeaders = "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id"

// public adapts what the widget fetches from another origin, the shards and
// matcher.wasm: every answer readable there, errors too, so the widget sees
// a 404 as a 404 and not as a failed fetch.
func (s *server) public(h handlerFunc) http.Handler {
	p := s.plain(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		p.ServeHTTP(w, r)
	})
}

// plain adapts a handler whose errors are always plain JSON.
func (s *server) plain(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.fail(w, r, err, "")
		}
	})
}

// statusClientGone is the status counted for a request whose client
// left before its answer.
const statusClientGone = 499

// fail writes err as the error body. A 5xx is logged as an error with its
// cause; a 4xx is the client's mistake and only logged at debug level.
// No cache may keep an error (errorCache), whatever the handler set
// before it failed.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error, callback string) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client left before its answer: no fault of the server's,
		// and no one reads what is written. Counted as 499 (nginx's
		// "client closed request"), not as a 5xx that alerts page on.
		s.log.DebugContext(r.Context(), "client gone", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(statusClientGone)
		return
	}
	e := asError(err)
	w.Header().Set("Cache-Control", errorCache)
	level := slog.LevelDebug
	if e.Status >= 500 {
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "request failed",
		"method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", err)
	e.setRetryAfter(w.Header())
	body := e.body()
	if e.Status == http.StatusInternalServerError {
		body = e.bodyWithID(RequestID(r.Context()))
	}
	respond(w, e.Status, body, callback)
}

// authorize checks the request's key and site: 401 for an unknown key, 403
// for a site that is not the key's.
func (s *server) authorize(ctx context.Context, apiKey, siteID string) (partners.Site, error) {
	reg, err := s.partnersIn(ctx)
	if err != nil {
		return partners.Site{}, err
	}
	site, err := reg.Site(ctx, apiKey, siteID)
	switch {
	case err == nil:
		return site, nil
	case errors.Is(err, partners.ErrUnknownKey):
		return site, problemError(http.StatusUnauthorized, contract.UnknownAPIKey(), err)
	case errors.Is(err, partners.ErrForeignSite):
		return site, problemError(http.StatusForbidden, contract.ForeignSite(siteID), err)
	default:
		return site, internal(fmt.Errorf("partners: %w", err))
	}
}

// notFound is the JSON answer for whatever no route claims: a 405 for a
// method other than GET and HEAD (every route is a GET), else a 404.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		allow := "GET, HEAD"
		if strings.HasPrefix(r.URL.Path, "/v2/") {
			allow += ", OPTIONS"
		}
		w.Header().Set("Allow", allow)
		return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: "method " + quote(r.Method) + " is not allowed; use GET"}
	}
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such endpoint: " + quote(r.URL.Path)}
}
