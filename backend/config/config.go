// Package config is the adlink server's configuration: a plain struct with
// defaults, filled from ADLINK_* environment variables and then command-line
// flags (a flag wins over the environment), and validated once at start-up
// with every problem reported together: Load reports the values, Prepare
// what they name on disk.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	redisstore "github.com/adlink/adlink/backend/store/redis"
)

// Config is everything the server needs to start.
type Config struct {
	// Addr is the listen address (-addr, ADLINK_ADDR).
	Addr string
	// DataDir holds the embedded state, one bbolt file (-data, ADLINK_DATA_DIR).
	DataDir string
	// RedirectURL is the seed's {redirect_url}, the base of every ad link,
	// without a trailing slash (-redirect-url, ADLINK_REDIRECT_URL). Load
	// defaults it to "http://" + Addr, with localhost for a wildcard host.
	RedirectURL string
	// Catalogs are the feeds to serve, files or http(s) URLs, each with
	// options after a '#' (catalog.ParseSource) (-catalog, repeatable;
	// ADLINK_CATALOG, comma-separated). None means the embedded demo catalog.
	Catalogs []string
	// CatalogRefresh is how often the feeds are read again; zero only on
	// SIGHUP and POST /admin/reload (-catalog-refresh,
	// ADLINK_CATALOG_REFRESH).
	CatalogRefresh time.Duration
	// CatalogMaxDrop is the share of its ads (0 to 1) a refreshed catalog
	// may lose against the one served; one that lost more is refused
	// unless forced (-catalog-max-drop, ADLINK_CATALOG_MAX_DROP).
	CatalogMaxDrop float64
	// CatalogTimeout bounds one fetch of a feed URL (-catalog-timeout,
	// ADLINK_CATALOG_TIMEOUT).
	CatalogTimeout time.Duration
	// CatalogMaxBytes bounds a feed, as read and once decompressed
	// (-catalog-max-bytes, ADLINK_CATALOG_MAX_BYTES).
	CatalogMaxBytes int64
	// SiteShardKB is the most kilobytes (1,000 bytes, with zstd) a page
	// downloads for the in-page matcher when its market's own shard is
	// larger: a shard of the ads the site's analysed pages point to
	// (backend/siteshards); 0 serves every market's own shard
	// (-site-shard-kb, ADLINK_SITE_SHARD_KB).
	SiteShardKB int
	// AdminAddr is the admin listener's address, which serves /metrics,
	// POST /admin/reload, POST /admin/invalidate, GET /admin/backup and
	// GET /admin/sites/review; empty serves none (-admin-addr,
	// ADLINK_ADMIN_ADDR).
	AdminAddr string
	// AdminHosts are the host names the admin listener answers under
	// /admin/ besides addresses, localhost and names without a dot: the
	// names an operator's tools reach it by (-admin-hosts,
	// ADLINK_ADMIN_HOSTS, comma-separated).
	AdminHosts []string
	// PartnersFile is a JSON file of partners (-partners, ADLINK_PARTNERS).
	// The server needs it, or Demo, or both.
	PartnersFile string
	// AdvertisersFile is a JSON file of advertisers' report tokens and
	// daily budgets (-advertisers, ADLINK_ADVERTISERS); optional.
	AdvertisersFile string
	// Demo adds the demo partner, api_key=demo and site_id=demo for pages
	// on localhost (-demo, ADLINK_DEMO); a partner of PartnersFile with the
	// key "demo" stands in for it.
	Demo bool
	// FetchAllowPrivate lets the page fetcher reach loopback and private
	// addresses; only the demo and the tests set it (-fetch-allow-private,
	// ADLINK_FETCH_ALLOW_PRIVATE).
	FetchAllowPrivate bool
	// PageLease is how long a page analysis stays its worker's after the
	// worker last renewed it (three times a lease): how soon another
	// worker, of this replica or another, takes over a page whose worker
	// died (-page-lease, ADLINK_PAGE_LEASE).
	PageLease time.Duration
	// ReportRows bounds the rows of every report running on the server
	// together (-report-rows, ADLINK_REPORT_ROWS): a report is held in
	// memory, at most some 1.4 KB a row at its peak, so the default of
	// 600,000 holds under 1 GB. One account's reports hold at most half
	// (never less than report.MaxRows), or all but report.MaxRows while no
	// other account's report runs. At least report.MaxRows, so that
	// the largest report can run; 0 for no bound.
	ReportRows int
	// TrustedProxies are the peers whose X-Forwarded-For and country header
	// are believed (-trusted-proxies, ADLINK_TRUSTED_PROXIES, comma-separated
	// CIDRs).
	TrustedProxies []netip.Prefix
	// CountryHeader is the request header a trusted proxy or CDN puts the
	// client's ISO 3166 country in, read for loc=use_geo (-country-header,
	// ADLINK_COUNTRY_HEADER).
	CountryHeader string
	// KeyRate and KeyBurst are the default limit of /v2 requests per
	// api_key, per second and at once (-rate-key, ADLINK_RATE_KEY;
	// -rate-key-burst, ADLINK_RATE_KEY_BURST). A partner may set its own.
	KeyRate  float64
	KeyBurst int
	// KeyNetworkShare is the part of a key's limit (rate and burst) that
	// one client network (an IPv4 address, an IPv6 /64) may take, beside
	// the key's whole limit, so one client cannot spend a public api_key's
	// budget for its other readers (-rate-key-network-share,
	// ADLINK_RATE_KEY_NETWORK_SHARE; above 0, at most 1). One IPv6 /48 or
	// IPv4 /24 may take twice that.
	KeyNetworkShare float64
	// IPRate and IPBurst limit /v1/redirect per client network (an IPv4
	// address, an IPv6 /64), per second and at once (-rate-ip,
	// ADLINK_RATE_IP; -rate-ip-burst, ADLINK_RATE_IP_BURST); over the
	// limit the visitor still lands and the click does not bill.
	IPRate  float64
	IPBurst int
	// PageRate and PageBurst are the default limit of unseen pages each site
	// may queue for analysis, per second and at once (-rate-pages,
	// ADLINK_RATE_PAGES; -rate-pages-burst, ADLINK_RATE_PAGES_BURST). A
	// partner may set its own.
	PageRate  float64
	PageBurst int
	// PageNetworkShare is the part of a site's page limit that one client
	// network may take, beside the site's whole limit
	// (-rate-pages-network-share, ADLINK_RATE_PAGES_NETWORK_SHARE; above 0,
	// at most 1). One IPv6 /48 or IPv4 /24 may take twice that.
	PageNetworkShare float64
	// ClickKeys sign click URLs and site tokens: the first signs, every one
	// verifies, so a key can rotate (-click-keys, ADLINK_CLICK_KEYS,
	// "kid:base64secret,..."; prefer the variable, a flag shows in the
	// process list). With none the server generates a key in DataDir on
	// first start and keeps it there.
	ClickKeys []clicks.Key
	// NetworkDailyClicks caps the billable clicks of one client network
	// (an IPv4 address, an IPv6 /64) per UTC day; the clicks past it land
	// and are recorded as network_cap (-network-daily-clicks,
	// ADLINK_NETWORK_DAILY_CLICKS).
	NetworkDailyClicks int
	// PrefixDailyClicks caps the billable clicks of one IPv6 /48 per UTC
	// day, however many /64s (networks) they come from, counted in the
	// click ledger with the networks' windows: a /48 is what a tunnel
	// broker gives anyone, and each of its 65,536 /64s would have its own
	// NetworkDailyClicks. The clicks past it land and are recorded as
	// prefix_cap; 0 is no cap (-prefix-daily-clicks,
	// ADLINK_PREFIX_DAILY_CLICKS).
	PrefixDailyClicks int
	// IPv4PrefixDailyClicks caps the billable clicks of one IPv4 /24 per
	// UTC day, whichever of its 256 addresses (networks) they come from,
	// counted as a /48's: a hosting provider rents a /24 by the month, and
	// each address would have its own NetworkDailyClicks. The clicks past
	// it are recorded as prefix_cap; 0 is no cap
	// (-ipv4-prefix-daily-clicks, ADLINK_IPV4_PREFIX_DAILY_CLICKS).
	IPv4PrefixDailyClicks int
	// PrefixAdDailyClicks caps the billable clicks of one IPv6 /48 or IPv4
	// /24 on one ad per UTC day, whichever of its networks they come
	// from: under the prefix's own cap alone, one holder of a prefix could
	// spend all of it on one advertiser's ad. The clicks past it land and
	// are recorded as prefix_ad_cap; 0 is no cap
	// (-prefix-ad-daily-clicks, ADLINK_PREFIX_AD_DAILY_CLICKS).
	PrefixAdDailyClicks int
	// SiteDailyTags caps the distinct yk_tags the links a site's pages
	// made record per UTC day: no signature binds such a link's yk_tag,
	// and each value would be a report row kept for good. Later new ones
	// are recorded as no tag; signed links keep theirs. 0 is no cap
	// (-site-daily-tags, ADLINK_SITE_DAILY_TAGS).
	SiteDailyTags int
	// ClickTTL is how long a click URL the server signed stays billable
	// (-click-ttl, ADLINK_CLICK_TTL).
	ClickTTL time.Duration
	// SiteTokenTTL is how long the site token of a shard manifest, which
	// the page puts in the click URLs it makes, stays valid: a beacon
	// counts such a link's impression only while it is, and a click with
	// it alone bills nothing (-site-token-ttl, ADLINK_SITE_TOKEN_TTL).
	SiteTokenTTL time.Duration
	// ClickTokenTTL is how long the click token the impression beacon
	// gives an in-page ad stays billable (-click-token-ttl,
	// ADLINK_CLICK_TOKEN_TTL).
	ClickTokenTTL time.Duration
	// ImpressionWindow is how often an ad's impression counts for one
	// site and one client network, whatever page of the site: once per window, the windows counted
	// from the Unix epoch; a replayed beacon counts no more
	// (-impression-window, ADLINK_IMPRESSION_WINDOW). Whole minutes, from
	// a minute to a day.
	ImpressionWindow time.Duration
	// ImpressionPrefixNetworks bounds the impressions of an ad on a site
	// counted per window from one IPv6 /48, whatever its /64s: its
	// networks share that many impression keys between them
	// (clicks.ImpressionNetworks), so a reader rotating /64s counts at
	// most that many times, where each /64 would count once. 0: each /64
	// counts as its own (-impression-prefix-networks,
	// ADLINK_IMPRESSION_PREFIX_NETWORKS).
	ImpressionPrefixNetworks int
	// ClickMinDelay is how soon after its click token was issued a click
	// may come and bill; sooner is too_fast (-click-min-delay,
	// ADLINK_CLICK_MIN_DELAY).
	ClickMinDelay time.Duration
	// Retention is how long raw click and impression rows stay in the
	// state file: each whole UTC day older is exported to ExportDir and
	// removed, while the rollups reports read stay (-retention,
	// ADLINK_RETENTION). 0 keeps every row.
	Retention time.Duration
	// ExportDir is where retention writes its daily export files
	// (-export-dir, ADLINK_EXPORT_DIR). Load defaults it to
	// DataDir/export.
	ExportDir string
	// RetentionHost names this server in the exports table, beside the
	// path of each file its passes export, so that an operator finds the
	// file (-retention-host, ADLINK_RETENTION_HOST). Empty is the
	// machine's host name; a container's is seldom the one to look on.
	RetentionHost string
	// PostgresURL, when set, is the Postgres database that keeps the
	// durable record several servers share: clicks, impressions, the
	// rollups reports read, budget spend, decisions and windows (-postgres,
	// ADLINK_POSTGRES_URL; a postgres:// URL or libpq key=value string).
	// Unset, they stay in DataDir's bbolt file.
	PostgresURL string
	// PostgresLockTimeout bounds how long a statement of the schema
	// migrations a server applies at start waits for a lock, before it
	// gives up and the migrations are tried again after a pause, so that
	// the queries of the running replicas queued behind it go on
	// (-postgres-lock-timeout, ADLINK_POSTGRES_LOCK_TIMEOUT).
	PostgresLockTimeout time.Duration
	// PostgresMigrateWait bounds how long the migrations are tried again
	// while a statement gives up on its lock timeout at every try, from
	// the start or the last migration a try applied: past it the start
	// fails, naming the sessions that held up the last try,
	// rather than wait unseen behind a transaction left open
	// (-postgres-migrate-wait, ADLINK_POSTGRES_MIGRATE_WAIT). Zero tries
	// again for as long as it takes.
	PostgresMigrateWait time.Duration
	// RedisURL, when set, is the Redis that the rate limits are kept in,
	// shared by every replica that names it (-redis, ADLINK_REDIS_URL): a
	// redis:// or rediss:// URL as go-redis reads it, or a Redis Cluster's
	// redis-cluster:// or rediss-cluster:// URL naming some of its nodes
	// (redisstore.Open). Empty keeps them in this process.
	RedisURL string
	// LogLevel is the least level logged: debug (which adds a line per
	// request), info, warn or error (-log-level, ADLINK_LOG_LEVEL).
	LogLevel slog.Level
	// PrintVersion asks for the version to be printed instead of serving
	// (-version).
	PrintVersion bool
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Addr:             "localhost:8080",
		AdminAddr:        "127.0.0.1:9464",
		CatalogMaxDrop:   0.25,
		SiteShardKB:      150,
		CatalogTimeout:   time.Minute,
		CatalogMaxBytes:  1 << 30,
		DataDir:          ".data",
		CountryHeader:    "CF-IPCountry",
		KeyRate:          50,
		KeyBurst:         100,
		KeyNetworkShare:  0.2,
		IPRate:           2,
		IPBurst:          20,
		PageRate:         1,
		PageBurst:        30,
		PageNetworkShare: 0.2,
		PageLease:        5 * time.Second,
		ReportRows:       600_000,
		// A replica's queries of a table wait this long at most behind
		// a migration's ALTER TABLE.
		PostgresLockTimeout: 5 * time.Second,
		// A rolling upgrade whose replica cannot migrate for this long
		// stops there, its error in the orchestrator's view, rather than
		// look like a slow start.
		PostgresMigrateWait: 15 * time.Minute,
		// One household or office behind one address clicks a few ads a
		// day; a carrier's NAT shares an address wider, so not fewer.
		NetworkDailyClicks: 50,
		// Ten networks' caps. A provider that gives each home a /56 puts
		// 256 in a /48, and a carrier giving each phone a /64 more: raise
		// it where such readers are many, as NetworkDailyClicks for NAT.
		PrefixDailyClicks: 500,
		// Four a day from each of its 256 addresses: a /24 is 256
		// households or offices more often than a /48 is, and a carrier's
		// NAT puts thousands of phones behind a few of them; raise it as
		// NetworkDailyClicks where such readers are many.
		IPv4PrefixDailyClicks: 1000,
		// Readers of one /48 or /24 who click one ad in one day are a
		// handful; a competitor rotating its networks is many.
		PrefixAdDailyClicks: 10,
		// A publisher's campaigns or placements of a day, not a reader's.
		SiteDailyTags: 50,
		ClickTTL:      24 * time.Hour,
		SiteTokenTTL:  time.Hour,
		ClickTokenTTL: time.Hour,
		// A reader who comes back to a page after half an hour sees its
		// ads anew; a reload or a replay within it is not a new view.
		ImpressionWindow: 30 * time.Minute,
		// Two readers of one /48 (256 homes of a /56 each) seeing the same
		// ad on the same site in one window share a key one time in 64.
		ImpressionPrefixNetworks: 64,
		// The token comes a second after the ad came into view; a reader's
		// quickest reaction to what they see is about a quarter second.
		ClickMinDelay: 250 * time.Millisecond,
		// A quarter of a year: long enough to settle a month's invoices
		// and disputes from the raw rows.
		Retention: 90 * 24 * time.Hour,
		TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("127.0.0.1/32"),
			netip.MustParsePrefix("::1/128"),
		},
	}
}

// shippedRetention is the least -retention with -postgres: a UTC day is
// exported a day and the retention after its start, later than any of
// its clicks shipped within clicks.ShipHorizon, with an hour for clocks.
const shippedRetention = clicks.ShipHorizon + time.Hour

// Load starts from Default, applies the ADLINK_* variables getenv returns,
// then the flags in args, and validates the result. Every problem is in the
// returned error, one per line, a flag's syntax included: parsing goes on
// past a bad flag. The Config is returned with the error, filled as far as
// it could be, so that the caller can add the problems it finds (Prepare)
// and report them all at once. Usage goes to out on -h, with the error
// flag.ErrHelp.
func Load(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c := Default()
	var problems []error
	bad := func(format string, a ...any) { problems = append(problems, fmt.Errorf(format, a...)) }

	proxies := "127.0.0.1/32,::1/128"
	if v := getenv("ADLINK_ADDR"); v != "" {
		c.Addr = v
	}
	if v := getenv("ADLINK_DATA_DIR"); v != "" {
		c.DataDir = v
	}
	c.RedirectURL = getenv("ADLINK_REDIRECT_URL")
	c.Catalogs = splitList(getenv("ADLINK_CATALOG"))
	if v := getenv("ADLINK_ADMIN_ADDR"); v != "" {
		c.AdminAddr = v
	}
	c.AdminHosts = splitList(getenv("ADLINK_ADMIN_HOSTS"))
	c.PartnersFile = getenv("ADLINK_PARTNERS")
	c.AdvertisersFile = getenv("ADLINK_ADVERTISERS")
	envBool := func(name string, dst *bool) {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad("%s=%q: want true or false", name, v)
				return
			}
			*dst = b
		}
	}
	envBool("ADLINK_DEMO", &c.Demo)
	envBool("ADLINK_FETCH_ALLOW_PRIVATE", &c.FetchAllowPrivate)
	if v := getenv("ADLINK_TRUSTED_PROXIES"); v != "" {
		proxies = v
	}
	if v := getenv("ADLINK_COUNTRY_HEADER"); v != "" {
		c.CountryHeader = v
	}
	envFloat := func(name string, dst *float64) {
		if v := getenv(name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				bad("%s=%q: want a number", name, v)
				return
			}
			*dst = f
		}
	}
	envInt := func(name string, dst *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				bad("%s=%q: want a whole number", name, v)
				return
			}
			*dst = n
		}
	}
	envFloat("ADLINK_RATE_KEY", &c.KeyRate)
	envInt("ADLINK_RATE_KEY_BURST", &c.KeyBurst)
	envFloat("ADLINK_RATE_KEY_NETWORK_SHARE", &c.KeyNetworkShare)
	envFloat("ADLINK_RATE_IP", &c.IPRate)
	envInt("ADLINK_RATE_IP_BURST", &c.IPBurst)
	envFloat("ADLINK_RATE_PAGES", &c.PageRate)
	envInt("ADLINK_RATE_PAGES_BURST", &c.PageBurst)
	envInt("ADLINK_REPORT_ROWS", &c.ReportRows)
	envFloat("ADLINK_RATE_PAGES_NETWORK_SHARE", &c.PageNetworkShare)
	envInt("ADLINK_NETWORK_DAILY_CLICKS", &c.NetworkDailyClicks)
	envInt("ADLINK_PREFIX_DAILY_CLICKS", &c.PrefixDailyClicks)
	envInt("ADLINK_IPV4_PREFIX_DAILY_CLICKS", &c.IPv4PrefixDailyClicks)
	envInt("ADLINK_PREFIX_AD_DAILY_CLICKS", &c.PrefixAdDailyClicks)
	envInt("ADLINK_SITE_DAILY_TAGS", &c.SiteDailyTags)
	envDuration := func(name string, dst *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				bad("%s=%q: want a duration such as 24h", name, v)
				return
			}
			*dst = d
		}
	}
	envDuration("ADLINK_CLICK_TTL", &c.ClickTTL)
	envDuration("ADLINK_CATALOG_REFRESH", &c.CatalogRefresh)
	envDuration("ADLINK_CATALOG_TIMEOUT", &c.CatalogTimeout)
	envFloat("ADLINK_CATALOG_MAX_DROP", &c.CatalogMaxDrop)
	envInt("ADLINK_SITE_SHARD_KB", &c.SiteShardKB)
	if v := getenv("ADLINK_CATALOG_MAX_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad("ADLINK_CATALOG_MAX_BYTES=%q: want a whole number of bytes", v)
		} else {
			c.CatalogMaxBytes = n
		}
	}
	envDuration("ADLINK_SITE_TOKEN_TTL", &c.SiteTokenTTL)
	envDuration("ADLINK_CLICK_TOKEN_TTL", &c.ClickTokenTTL)
	envDuration("ADLINK_IMPRESSION_WINDOW", &c.ImpressionWindow)
	envInt("ADLINK_IMPRESSION_PREFIX_NETWORKS", &c.ImpressionPrefixNetworks)
	envDuration("ADLINK_CLICK_MIN_DELAY", &c.ClickMinDelay)
	envDuration("ADLINK_RETENTION", &c.Retention)
	envDuration("ADLINK_PAGE_LEASE", &c.PageLease)
	c.ExportDir = getenv("ADLINK_EXPORT_DIR")
	c.RetentionHost = getenv("ADLINK_RETENTION_HOST")
	c.PostgresURL = getenv("ADLINK_POSTGRES_URL")
	envDuration("ADLINK_POSTGRES_LOCK_TIMEOUT", &c.PostgresLockTimeout)
	envDuration("ADLINK_POSTGRES_MIGRATE_WAIT", &c.PostgresMigrateWait)
	c.RedisURL = getenv("ADLINK_REDIS_URL")
	clickKeys := getenv("ADLINK_CLICK_KEYS")
	if v := getenv("ADLINK_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("ADLINK_LOG_LEVEL=%q: want debug, info, warn or error", v)
		}
	}

	fs := flag.NewFlagSet("adlink", flag.ContinueOnError)
	// The flag package prints each bad flag and the usage as it meets
	// them; Load reports them with the other problems instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen `address` (ADLINK_ADDR)")
	fs.StringVar(&c.DataDir, "data", c.DataDir, "state `directory`, holds adlink.db (ADLINK_DATA_DIR)")
	fs.StringVar(&c.RedirectURL, "redirect-url", c.RedirectURL, "base `URL` of ad links; default http://<addr> (ADLINK_REDIRECT_URL)")
	fs.Var(&listFlag{list: &c.Catalogs, show: catalog.Redacted}, "catalog", "catalog feed `file or URL` (JSONL, CSV, Merchant Center XML or TSV; options after #), repeatable; none serves the embedded demo (ADLINK_CATALOG, comma-separated)")
	fs.DurationVar(&c.CatalogRefresh, "catalog-refresh", c.CatalogRefresh, "read the catalog feeds again this often; 0: only on SIGHUP and POST /admin/reload (ADLINK_CATALOG_REFRESH)")
	fs.IntVar(&c.SiteShardKB, "site-shard-kb", c.SiteShardKB, "most `KB` (zstd) a page downloads for the in-page matcher when its market's shard is larger: a shard chosen for the site; 0 serves the market's whole shard (ADLINK_SITE_SHARD_KB)")
	fs.Float64Var(&c.CatalogMaxDrop, "catalog-max-drop", c.CatalogMaxDrop, "`part` (0 to 1) of its ads a refreshed catalog, or one of its feeds, may lose; more is refused unless forced (ADLINK_CATALOG_MAX_DROP)")
	fs.DurationVar(&c.CatalogTimeout, "catalog-timeout", c.CatalogTimeout, "bound on one fetch of a feed URL (ADLINK_CATALOG_TIMEOUT)")
	fs.Int64Var(&c.CatalogMaxBytes, "catalog-max-bytes", c.CatalogMaxBytes, "most `bytes` of one feed, as read and decompressed (ADLINK_CATALOG_MAX_BYTES)")
	fs.Var(&listFlag{list: &c.AdminHosts, comma: true}, "admin-hosts", "host `names` the admin listener answers /admin/ under besides addresses, localhost and names without a dot, comma-separated or repeated (ADLINK_ADMIN_HOSTS)")
	fs.StringVar(&c.AdminAddr, "admin-addr", c.AdminAddr, "admin listen `address` for /metrics, POST /admin/reload, POST /admin/invalidate, GET /admin/backup and GET /admin/sites/review; empty: none (ADLINK_ADMIN_ADDR)")
	fs.StringVar(&c.PartnersFile, "partners", c.PartnersFile, "partners JSON `file`; this or -demo is needed (ADLINK_PARTNERS)")
	fs.StringVar(&c.AdvertisersFile, "advertisers", c.AdvertisersFile, "advertisers JSON `file`: report tokens and daily budgets (ADLINK_ADVERTISERS)")
	fs.BoolVar(&c.Demo, "demo", c.Demo, "add the demo partner, api_key=demo site_id=demo on localhost (ADLINK_DEMO)")
	fs.BoolVar(&c.FetchAllowPrivate, "fetch-allow-private", c.FetchAllowPrivate, "let the page fetcher reach loopback and private addresses (ADLINK_FETCH_ALLOW_PRIVATE)")
	fs.DurationVar(&c.PageLease, "page-lease", c.PageLease, "how long a page analysis stays its worker's unless renewed: how soon another worker takes over one whose worker died (ADLINK_PAGE_LEASE)")
	fs.IntVar(&c.ReportRows, "report-rows", c.ReportRows, "`rows` of all the reports running on the server at once, held in memory; 0 for no bound (ADLINK_REPORT_ROWS)")
	fs.StringVar(&proxies, "trusted-proxies", proxies, "comma-separated `CIDRs` whose X-Forwarded-For and country header are trusted (ADLINK_TRUSTED_PROXIES)")
	fs.StringVar(&c.CountryHeader, "country-header", c.CountryHeader, "request `header` with the client's country, from a trusted proxy (ADLINK_COUNTRY_HEADER)")
	fs.Float64Var(&c.KeyRate, "rate-key", c.KeyRate, "default /v2 `requests` per second per api_key (ADLINK_RATE_KEY)")
	fs.IntVar(&c.KeyBurst, "rate-key-burst", c.KeyBurst, "default /v2 `requests` at once per api_key (ADLINK_RATE_KEY_BURST)")
	fs.Float64Var(&c.KeyNetworkShare, "rate-key-network-share", c.KeyNetworkShare, "`part` (0 to 1) of an api_key's limit one client network may take, and twice that one /48 or /24 (ADLINK_RATE_KEY_NETWORK_SHARE)")
	fs.Float64Var(&c.IPRate, "rate-ip", c.IPRate, "/v1/redirect `requests` per second per client network, IPv4 address or IPv6 /64 (ADLINK_RATE_IP)")
	fs.IntVar(&c.IPBurst, "rate-ip-burst", c.IPBurst, "/v1/redirect `requests` at once per client network (ADLINK_RATE_IP_BURST)")
	fs.Float64Var(&c.PageRate, "rate-pages", c.PageRate, "default unseen `pages` per second a site may queue (ADLINK_RATE_PAGES)")
	fs.IntVar(&c.PageBurst, "rate-pages-burst", c.PageBurst, "default unseen `pages` at once a site may queue (ADLINK_RATE_PAGES_BURST)")
	fs.Float64Var(&c.PageNetworkShare, "rate-pages-network-share", c.PageNetworkShare, "`part` (0 to 1) of a site's page limit one client network may take, and twice that one /48 or /24 (ADLINK_RATE_PAGES_NETWORK_SHARE)")
	fs.IntVar(&c.NetworkDailyClicks, "network-daily-clicks", c.NetworkDailyClicks, "billable `clicks` per UTC day per client network, IPv4 address or IPv6 /64 (ADLINK_NETWORK_DAILY_CLICKS)")
	fs.IntVar(&c.PrefixDailyClicks, "prefix-daily-clicks", c.PrefixDailyClicks, "billable `clicks` per IPv6 /48 per UTC day, whatever its /64s; 0: no cap (ADLINK_PREFIX_DAILY_CLICKS)")
	fs.IntVar(&c.IPv4PrefixDailyClicks, "ipv4-prefix-daily-clicks", c.IPv4PrefixDailyClicks, "billable `clicks` per IPv4 /24 per UTC day, whatever its addresses; 0: no cap (ADLINK_IPV4_PREFIX_DAILY_CLICKS)")
	fs.IntVar(&c.PrefixAdDailyClicks, "prefix-ad-daily-clicks", c.PrefixAdDailyClicks, "billable `clicks` per IPv6 /48 or IPv4 /24 per ad per UTC day, whatever its networks; 0: no cap (ADLINK_PREFIX_AD_DAILY_CLICKS)")
	fs.IntVar(&c.SiteDailyTags, "site-daily-tags", c.SiteDailyTags, "distinct yk_tags per site per UTC day its pages' own links record; later ones record none; 0: no cap (ADLINK_SITE_DAILY_TAGS)")
	// A func flag: -h must not print the keys from the environment as
	// the default.
	fs.Func("click-keys", "click signing `keys` kid:base64secret,...; the first signs; none: one generated in the data directory (ADLINK_CLICK_KEYS, preferred)",
		func(s string) error { clickKeys = s; return nil })
	fs.DurationVar(&c.ClickTTL, "click-ttl", c.ClickTTL, "how long a signed click URL stays billable (ADLINK_CLICK_TTL)")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "least `level` logged: debug (a line per request), info, warn or error (ADLINK_LOG_LEVEL)")
	fs.DurationVar(&c.SiteTokenTTL, "site-token-ttl", c.SiteTokenTTL, "how long the site token of a shard manifest stays valid, which the page's links carry; alone it bills no click (ADLINK_SITE_TOKEN_TTL)")
	fs.DurationVar(&c.ClickTokenTTL, "click-token-ttl", c.ClickTokenTTL, "how long an in-page ad's click token stays billable (ADLINK_CLICK_TOKEN_TTL)")
	fs.DurationVar(&c.ImpressionWindow, "impression-window", c.ImpressionWindow, "an ad's impression counts at most once per `time` for one site and client network (ADLINK_IMPRESSION_WINDOW)")
	fs.IntVar(&c.ImpressionPrefixNetworks, "impression-prefix-networks", c.ImpressionPrefixNetworks, "an ad's impressions on a site count at most this many `times` per window from one IPv6 /48, whatever its /64s; 0: each /64 counts once (ADLINK_IMPRESSION_PREFIX_NETWORKS)")
	fs.DurationVar(&c.ClickMinDelay, "click-min-delay", c.ClickMinDelay, "least `time` between an in-page ad's click token and a billable click (ADLINK_CLICK_MIN_DELAY)")
	fs.DurationVar(&c.Retention, "retention", c.Retention, "how long raw click and impression rows stay in the state file before they are exported and removed; 0 keeps them (ADLINK_RETENTION)")
	fs.StringVar(&c.ExportDir, "export-dir", c.ExportDir, "`directory` of retention's daily export files; default <data>/export (ADLINK_EXPORT_DIR)")
	fs.StringVar(&c.RetentionHost, "retention-host", c.RetentionHost, "`name` of this server in the Postgres record of each file retention exports; default the host name (ADLINK_RETENTION_HOST)")
	// A func flag: -h must not print a password of the environment's URL.
	fs.Func("postgres", "Postgres `URL` that keeps clicks, impressions, reports, spend and the page analyses and their queue for every replica; none: the data directory's file (ADLINK_POSTGRES_URL, preferred)",
		func(s string) error { c.PostgresURL = s; return nil })
	fs.DurationVar(&c.PostgresLockTimeout, "postgres-lock-timeout", c.PostgresLockTimeout, "longest `time` a statement of the schema migrations at start waits for a lock before they are tried again, so that the replicas' queries queued behind it go on (ADLINK_POSTGRES_LOCK_TIMEOUT)")
	fs.DurationVar(&c.PostgresMigrateWait, "postgres-migrate-wait", c.PostgresMigrateWait, "longest `time` the schema migrations at start are tried again after giving up on a lock; past it the start fails, naming the sessions that held up the last try; 0: for as long as it takes (ADLINK_POSTGRES_MIGRATE_WAIT)")
	// A func flag, as -click-keys: the URL may hold a password.
	fs.Func("redis", "`URL` of the Redis that keeps the rate limits and the budgets spent today and carries the catalog announcements, shared by replicas, redis://[user:password@]host:port/db, or a Redis Cluster's redis-cluster://[user:password@]host:port,host:port...; none: in this process (ADLINK_REDIS_URL)",
		func(s string) error { c.RedisURL = s; return nil })
	fs.BoolVar(&c.PrintVersion, "version", false, "print the version and exit")
	fs.VisitAll(func(f *flag.Flag) { f.Value = keepOnError{f.Value} })
	for rest := args; len(rest) > 0; {
		err := fs.Parse(rest)
		if errors.Is(err, flag.ErrHelp) {
			// The usage names each flag's type from its own Value.
			fs.VisitAll(func(f *flag.Flag) { f.Value = f.Value.(keepOnError).Value })
			fs.SetOutput(out)
			fmt.Fprint(out, "Usage: adlink [flags]             serve\n"+
				"       adlink report [flags]      print a report from a stopped server's -data or from -postgres (adlink report -help)\n"+
				"       adlink invalidate [flags]  credit billed clicks found invalid, in a stopped server's -data or in -postgres (adlink invalidate -help)\n"+
				"       adlink review-sites [flags] rank the sites whose clicks to look at (adlink review-sites -help)\n"+
				"       adlink reload [flags]      refresh the running server's catalog and wait for the end (adlink reload -help)\n"+
				"Flags (each also an ADLINK_* variable; a flag wins):\n")
			fs.PrintDefaults()
			return c, err
		}
		next := fs.Args()
		switch {
		case err != nil:
			problems = append(problems, err)
			if len(next) > 0 && err.Error() == "bad flag syntax: "+next[0] { // the one error the parser does not step over
				next = next[1:]
			}
		case len(next) > 0: // the parser stops at the first argument that is no flag
			bad("unexpected argument %q", next[0])
			next = next[1:]
		}
		rest = next
	}

	c.TrustedProxies = nil
	for _, s := range splitList(proxies) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			bad("trusted proxy %q: want a CIDR such as 10.0.0.0/8", s)
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}
	if keys, err := clicks.ParseKeys(clickKeys); err != nil {
		bad("click-keys: %w", err)
	} else {
		c.ClickKeys = keys
	}
	if c.RedirectURL == "" {
		c.RedirectURL = "http://" + publicAddr(c.Addr)
	}
	c.RedirectURL = strings.TrimRight(c.RedirectURL, "/")
	if c.ExportDir == "" && strings.TrimSpace(c.DataDir) != "" {
		c.ExportDir = filepath.Join(c.DataDir, "export")
	}
	problems = append(problems, c.Validate())
	return c, errors.Join(problems...)
}

// UnknownVariables returns the names of the ADLINK_* variables of environ
// (NAME=value, as os.Environ gives it) that Load does not read, sorted: a
// misspelt one leaves its setting at the default, which a misspelt flag
// never does.
func UnknownVariables(environ []string) []string {
	known := map[string]bool{}
	Load(nil, func(name string) string { known[name] = true; return "" }, io.Discard)
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ADLINK_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	return slices.Compact(unknown)
}

// Validate reports every problem of c together, or nil.
func (c *Config) Validate() error {
	var problems []error
	bad := func(format string, a ...any) { problems = append(problems, fmt.Errorf(format, a...)) }
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("addr %q: want host:port", c.Addr)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("data directory is empty")
	}
	if p := c.PostgresURL; p != "" && !strings.HasPrefix(p, "postgres://") && !strings.HasPrefix(p, "postgresql://") && !strings.Contains(p, "=") {
		bad("postgres: want a postgres:// URL or a key=value connection string")
	}
	if c.PartnersFile == "" && !c.Demo {
		bad("no partners: give -partners FILE (ADLINK_PARTNERS) for your partners, or -demo (ADLINK_DEMO=true) for the demo partner")
	}
	u, err := url.Parse(c.RedirectURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		bad("redirect-url %q: want an absolute http or https URL", c.RedirectURL)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		bad("redirect-url %q: want no query, fragment or user info", c.RedirectURL)
	}
	for _, f := range c.Catalogs {
		if strings.TrimSpace(f) == "" {
			bad("catalog file name is empty")
		} else if _, err := catalog.ParseSource(f); err != nil {
			problems = append(problems, err)
		}
	}
	for _, h := range c.AdminHosts {
		if !validHostName(h) {
			bad("admin-hosts %q: want a host name such as adlink-1.internal, without a scheme or port", h)
		}
	}
	if c.AdminAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			bad("admin-addr %q: want host:port, or empty for none", c.AdminAddr)
		}
	}
	if c.CatalogRefresh < 0 {
		bad("catalog-refresh %v: want a positive duration, or 0 for none", c.CatalogRefresh)
	}
	if !(c.CatalogMaxDrop >= 0 && c.CatalogMaxDrop <= 1) {
		bad("catalog-max-drop %v: want a part from 0 to 1", c.CatalogMaxDrop)
	}
	if c.SiteShardKB != 0 && c.SiteShardKB < 8 {
		bad("site-shard-kb %d: want at least 8 KB, or 0 to serve each market's whole shard", c.SiteShardKB)
	}
	if c.CatalogTimeout <= 0 {
		bad("catalog-timeout %v: want a positive duration", c.CatalogTimeout)
	}
	if c.CatalogMaxBytes <= 0 {
		bad("catalog-max-bytes %d: want a positive number of bytes", c.CatalogMaxBytes)
	}
	if strings.TrimSpace(c.CountryHeader) == "" {
		bad("country-header is empty")
	}
	for _, r := range []struct {
		name  string
		rate  float64
		burst int
	}{{"rate-key", c.KeyRate, c.KeyBurst}, {"rate-ip", c.IPRate, c.IPBurst}, {"rate-pages", c.PageRate, c.PageBurst}} {
		if !(r.rate > 0) || math.IsInf(r.rate, 0) {
			bad("%s %v: want a positive number per second", r.name, r.rate)
		}
		if r.burst < 1 {
			bad("%s-burst %d: want at least 1", r.name, r.burst)
		}
	}
	for _, r := range []struct {
		name  string
		share float64
	}{{"rate-key-network-share", c.KeyNetworkShare}, {"rate-pages-network-share", c.PageNetworkShare}} {
		if !(r.share > 0 && r.share <= 1) {
			bad("%s %v: want a part above 0 and at most 1", r.name, r.share)
		}
	}
	if c.ReportRows != 0 && c.ReportRows < report.MaxRows {
		bad("report-rows %d: want 0 or at least %d, the rows of the largest report", c.ReportRows, report.MaxRows)
	}
	if c.PageLease < time.Second {
		bad("page-lease %v: want at least 1s", c.PageLease)
	}
	if c.PostgresLockTimeout < 10*time.Millisecond {
		bad("postgres-lock-timeout %v: want at least 10ms", c.PostgresLockTimeout)
	}
	if c.PostgresMigrateWait < 0 {
		bad("postgres-migrate-wait %v: want 0 (no bound) or more", c.PostgresMigrateWait)
	}
	if _, err := clicks.NewKeys(c.ClickKeys...); err != nil && len(c.ClickKeys) > 0 {
		bad("click-keys: %w", err)
	}
	if c.NetworkDailyClicks < 1 {
		bad("network-daily-clicks %d: want at least 1", c.NetworkDailyClicks)
	}
	if c.PrefixDailyClicks < 0 {
		bad("prefix-daily-clicks %d: want 0 (no cap) or more", c.PrefixDailyClicks)
	}
	if c.IPv4PrefixDailyClicks < 0 {
		bad("ipv4-prefix-daily-clicks %d: want 0 (no cap) or more", c.IPv4PrefixDailyClicks)
	}
	if c.PrefixAdDailyClicks < 0 {
		bad("prefix-ad-daily-clicks %d: want 0 (no cap) or more", c.PrefixAdDailyClicks)
	}
	if c.SiteDailyTags < 0 {
		bad("site-daily-tags %d: want 0 (no cap) or more", c.SiteDailyTags)
	}
	if c.ClickTTL <= 0 {
		bad("click-ttl %v: want a positive duration", c.ClickTTL)
	}
	if c.SiteTokenTTL <= 0 {
		bad("site-token-ttl %v: want a positive duration", c.SiteTokenTTL)
	}
	if c.ClickTokenTTL <= 0 {
		bad("click-token-ttl %v: want a positive duration", c.ClickTokenTTL)
	}
	if c.ImpressionWindow < time.Minute || c.ImpressionWindow > 24*time.Hour || c.ImpressionWindow%time.Minute != 0 {
		bad("impression-window %v: want whole minutes from 1m to 24h", c.ImpressionWindow)
	}
	if c.ImpressionPrefixNetworks < 0 || c.ImpressionPrefixNetworks > 65536 {
		bad("impression-prefix-networks %d: want 0 (no bound) to 65536, the /64s of a /48", c.ImpressionPrefixNetworks)
	}
	if c.Retention != 0 && c.Retention < 24*time.Hour {
		bad("retention %v: want 0 (keep every row) or at least 24h", c.Retention)
	} else if c.Retention != 0 && c.PostgresURL != "" && c.Retention < shippedRetention {
		// A click spooled in an outage and shipped within the horizon
		// should find its day not yet exported: one exported before it
		// came goes to a late file of its own beside the day's.
		bad("retention %v: with -postgres want 0 or at least %v, so that clicks spooled by a replica and shipped in time land in days not yet exported",
			c.Retention, shippedRetention)
	}
	if c.Retention != 0 && strings.TrimSpace(c.ExportDir) == "" {
		bad("export-dir is empty")
	}
	if c.RedisURL != "" {
		// The error names the part that is wrong, never the URL, which may
		// hold a password.
		if err := redisstore.CheckURL(c.RedisURL); err != nil {
			bad("redis: want a redis://, rediss://, redis-cluster:// or rediss-cluster:// URL: %w", err)
		}
	}
	if c.ClickMinDelay < 0 || c.ClickMinDelay >= c.ClickTokenTTL {
		bad("click-min-delay %v: want 0 or more, and less than click-token-ttl", c.ClickMinDelay)
	}
	return errors.Join(problems...)
}

// Prepare checks what c names on disk and reports every problem together:
// each catalog file and the partners file must open, and the data
// directory must exist or be made, which Prepare does. Names Validate
// reports as empty are left to it.
func (c *Config) Prepare() error {
	var problems []error
	open := func(what, name string) {
		if strings.TrimSpace(name) == "" {
			return
		}
		f, err := os.Open(name)
		if err != nil {
			if pe, ok := errors.AsType[*fs.PathError](err); ok {
				pe.Path = catalog.Redacted(pe.Path) // a mistyped feed URL may hold credentials
			}
			problems = append(problems, fmt.Errorf("%s: %w", what, err))
			return
		}
		f.Close()
	}
	for _, name := range c.Catalogs {
		if src, err := catalog.ParseSource(name); err == nil && !src.IsURL() {
			open("catalog", src.Location)
		}
	}
	open("partners", c.PartnersFile)
	open("advertisers", c.AdvertisersFile)
	if strings.TrimSpace(c.DataDir) != "" {
		if err := os.MkdirAll(c.DataDir, 0o750); err != nil {
			problems = append(problems, fmt.Errorf("data directory: %w", err))
		}
	}
	if c.Retention != 0 && strings.TrimSpace(c.ExportDir) != "" {
		if err := os.MkdirAll(c.ExportDir, 0o750); err != nil {
			problems = append(problems, fmt.Errorf("export directory: %w", err))
		}
	}
	return errors.Join(problems...)
}

// Trusted reports whether a peer address is one of the trusted proxies.
func (c *Config) Trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range c.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Listening records addr, the address the listener got. Where Addr asked
// for any free port (port 0), Addr takes the port it got, and so does a
// RedirectURL that Load derived from Addr: the links the server writes
// (click URLs, the shard manifests' redirect_url) must reach it, not port
// 0. A RedirectURL given explicitly is kept as given.
func (c *Config) Listening(addr string) {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || port != "0" {
		return
	}
	_, got, err := net.SplitHostPort(addr)
	if err != nil {
		return
	}
	derived := c.RedirectURL == "http://"+publicAddr(c.Addr)
	c.Addr = net.JoinHostPort(host, got)
	if derived {
		c.RedirectURL = "http://" + publicAddr(c.Addr)
	}
}

// publicAddr is addr as a client can reach it: a wildcard listen host
// (":8080", "0.0.0.0:8080", "[::]:8080") becomes localhost.
func publicAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // Validate reports it
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// validHostName reports whether s is a DNS host name: dot-separated
// labels of letters, digits and inner hyphens, a trailing dot allowed.
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// keepOnError is a flag that keeps its value when given a bad one: the
// flag package's numbers become 0, which Validate would report a second
// time.
type keepOnError struct{ flag.Value }

func (k keepOnError) Set(s string) error {
	old := k.String()
	if err := k.Value.Set(s); err != nil {
		k.Value.Set(old)
		return err
	}
	return nil
}

// IsBoolFlag lets a boolean flag go without a value, as the flag package
// does for its own.
func (k keepOnError) IsBoolFlag() bool {
	b, ok := k.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// listFlag is a repeatable flag; its first use replaces what the
// environment set. With comma, each use may be a comma-separated list.
type listFlag struct {
	list  *[]string
	set   bool
	comma bool
	// show, when set, is each value as -h shows it: a feed URL's
	// credentials are not for a terminal or a container's log.
	show func(string) string
}

func (l *listFlag) String() string {
	if l.list == nil {
		return ""
	}
	if l.show == nil {
		return strings.Join(*l.list, ",")
	}
	shown := make([]string, len(*l.list))
	for i, v := range *l.list {
		shown[i] = l.show(v)
	}
	return strings.Join(shown, ",")
}

func (l *listFlag) Set(s string) error {
	if !l.set {
		*l.list, l.set = nil, true
	}
	if l.comma {
		*l.list = append(*l.list, splitList(s)...)
		return nil
	}
	*l.list = append(*l.list, s)
	return nil
}
