// Package metrics holds adlink's Prometheus metrics in a registry of their
// own: requests and latency by route and status, the page queue, page
// analyses by outcome, clicks by billable and reason, and rate-limit
// rejections. A nil *Metrics is valid and records nothing, so tests and
// callers that do not care need not build one.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the service's counters, histograms and gauges. Its methods
// are safe for concurrent use and do nothing on a nil *Metrics.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	analyses    *prometheus.CounterVec
	clicks      *prometheus.CounterVec
	invalidated prometheus.Counter
	rereads     prometheus.Counter
	impressions prometheus.Counter
	repeats     prometheus.Counter
	tagsDropped prometheus.Counter
	rateLimited *prometheus.CounterVec
	retention   retentionMetrics

	redis       redisMetrics
	spool       spoolMetrics
	reportsBusy prometheus.Counter
	clickRecord *prometheus.HistogramVec
}

// New returns the metrics registered in a new registry, with the Go
// runtime and process collectors beside them.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "adlink_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "status"}),
		analyses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_page_analyses_total",
			Help: "Page analyses finished, by outcome (analysed, failed).",
		}, []string{"outcome"}),
		clicks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_clicks_total",
			Help: "Clicks recorded, by whether they are billable and why not.",
		}, []string{"billable", "reason"}),
		rereads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_budget_rereads_total",
			Help: "Times the budget gate read its advertisers' spend of the day again after a credit of invalid clicks.",
		}),
		invalidated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_clicks_invalidated_total",
			Help: "Billed clicks the operator invalidated later (POST /admin/invalidate), their advertisers credited.",
		}),
		impressions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_impressions_total",
			Help: "Ad impressions recorded from pages' impression beacons.",
		}),
		repeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_impression_repeats_total",
			Help: "Ad impressions of beacons not recorded: their ad, page and client network counted in the window already.",
		}),
		tagsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_yk_tags_dropped_total",
			Help: "Impressions and clicks of links pages made recorded without their yk_tag: their site had its day's yk_tags, or the tags' store did not answer.",
		}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_rate_limited_total",
			Help: "Requests refused with 429, by the limit they ran into (api_key, api_key_network, api_key_prefix, ip, ip_prefix, site, site_network, site_prefix, report).",
		}, []string{"limit"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.analyses, m.clicks, m.invalidated, m.rereads, m.impressions, m.repeats, m.tagsDropped, m.rateLimited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.retention = newRetentionMetrics(m.reg)
	m.redis = newRedisMetrics(m.reg)
	m.spool = newSpoolMetrics(m.reg)
	m.reportsBusy = newReportsBusy(m.reg)
	m.clickRecord = newClickRecord(m.reg)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry the metrics are in, for more collectors and for
// tests to gather from.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Request counts one answered request. route is the mux pattern that
// matched ("GET /v2/search/link"), never the raw path, so the label set
// stays small whatever paths clients send.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	s := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, s).Inc()
	m.latency.WithLabelValues(route, s).Observe(d.Seconds())
}

// Analysis counts one finished page analysis by outcome: "analysed" or
// "failed".
func (m *Metrics) Analysis(outcome string) {
	if m == nil {
		return
	}
	m.analyses.WithLabelValues(outcome).Inc()
}

// Click counts one recorded click. reason says why a click is not billable
// ("bad_signature", "expired", "bot", "duplicate"); use "" for a billable
// one. Keep reasons to a small fixed set: each is a time series.
func (m *Metrics) Click(billable bool, reason string) {
	if m == nil {
		return
	}
	m.clicks.WithLabelValues(strconv.FormatBool(billable), reason).Inc()
}

// Invalidated counts n billed clicks made not billable, their advertisers
// credited.
func (m *Metrics) Invalidated(n int64) {
	if m == nil {
		return
	}
	m.invalidated.Add(float64(n))
}

// BudgetReread counts a read again of the budgets' spend after a credit.
func (m *Metrics) BudgetReread() {
	if m == nil {
		return
	}
	m.rereads.Inc()
}

// Impressions counts n recorded impressions and the repeats not
// recorded.
func (m *Metrics) Impressions(n, repeats int) {
	if m == nil {
		return
	}
	m.impressions.Add(float64(n))
	m.repeats.Add(float64(repeats))
}

// TagDropped counts one impression or click of a link a page made
// recorded without its yk_tag.
func (m *Metrics) TagDropped() {
	if m == nil {
		return
	}
	m.tagsDropped.Inc()
}

// RateLimited counts one request refused by a rate limit: "api_key",
// "ip", "ip_prefix" or "site" among them.
func (m *Metrics) RateLimited(limit string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(limit).Inc()
}

// QueueStats is the page queue as /metrics shows it.
type QueueStats struct {
	// Depth is the number of pages queued, those being analysed included.
	Depth int
	// OldestAge is how long the oldest queued page has waited; 0 when the
	// queue is empty.
	OldestAge time.Duration
}

// WatchQueue exports the queue's depth and oldest age, read from stats at
// each scrape.
func (m *Metrics) WatchQueue(stats func() QueueStats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&queueCollector{stats: stats})
}

var (
	queueDepthDesc = prometheus.NewDesc("adlink_page_queue_depth",
		"Pages waiting for analysis, those being analysed included.", nil, nil)
	queueAgeDesc = prometheus.NewDesc("adlink_page_queue_oldest_age_seconds",
		"How long the oldest queued page has waited.", nil, nil)
)

// queueCollector reads the queue once per scrape for both gauges.
type queueCollector struct {
	stats func() QueueStats
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueAgeDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.Depth))
	ch <- prometheus.MustNewConstMetric(queueAgeDesc, prometheus.GaugeValue, s.OldestAge.Seconds())
}

// CatalogStats are what /metrics says of the catalog served and its
// refreshes.
type CatalogStats struct {
	// Version is the content hash of the catalog served.
	Version string
	// Ads is how many ads it has.
	Ads int
	// LoadedAt is when it began to be served.
	LoadedAt time.Time
	// LastFailure is when a refresh last failed or was refused; zero when
	// none has.
	LastFailure time.Time
	// Failing is whether the last refresh failed or was refused: the
	// catalog served is older than the feeds.
	Failing bool
	// Refreshes counts refreshes by result: swapped, unchanged, refused
	// or failed.
	Refreshes map[string]int
	// Retired is how many earlier versions' shards are still served.
	Retired int
	// Removed is how many removed ads still land their click links.
	Removed int
	// Replicas is whether the replicas announce their catalogs to each
	// other (-redis or -postgres); Behind, whether this one serves another
	// catalog than the one announced last; Announcements count those sent,
	// failed and heard from other replicas.
	Replicas      bool
	Behind        bool
	Announcements map[string]int
}

// WatchCatalog exports the catalog's version, size and refreshes, read from
// stats at each scrape.
func (m *Metrics) WatchCatalog(stats func() CatalogStats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&catalogCollector{stats: stats})
}

var (
	catalogInfoDesc = prometheus.NewDesc("adlink_catalog_info",
		"The catalog served: 1, labelled with its version (a content hash).", []string{"version"}, nil)
	catalogAdsDesc = prometheus.NewDesc("adlink_catalog_ads",
		"Ads in the catalog served.", nil, nil)
	catalogLoadedDesc = prometheus.NewDesc("adlink_catalog_loaded_timestamp_seconds",
		"When the catalog served began to be served.", nil, nil)
	catalogFailingDesc = prometheus.NewDesc("adlink_catalog_refresh_failing",
		"1 when the last catalog refresh failed or was refused, so the catalog served is older than its feeds.", nil, nil)
	catalogFailureDesc = prometheus.NewDesc("adlink_catalog_refresh_last_failure_timestamp_seconds",
		"When a catalog refresh last failed or was refused; 0 when none has.", nil, nil)
	catalogRefreshesDesc = prometheus.NewDesc("adlink_catalog_refreshes_total",
		"Catalog refreshes, by result (swapped, unchanged, refused, failed).", []string{"result"}, nil)
	catalogRetiredDesc = prometheus.NewDesc("adlink_catalog_retired_versions",
		"Earlier catalog versions whose shards are still served for pages that hold their manifest.", nil, nil)
	catalogRemovedDesc = prometheus.NewDesc("adlink_catalog_removed_ads",
		"Ads removed from the catalog whose click links still land.", nil, nil)
	catalogBehindDesc = prometheus.NewDesc("adlink_catalog_behind",
		"1 while this replica serves another catalog than the one a replica announced last: its feeds could not be read, or gave another.", nil, nil)
	catalogAnnouncementsDesc = prometheus.NewDesc("adlink_catalog_announcements_total",
		"Catalog announcements between replicas: sent by this one, failed to send, heard from others.", []string{"outcome"}, nil)
)

// catalogCollector reads the catalog's state once per scrape.
type catalogCollector struct {
	stats func() CatalogStats
}

func (c *catalogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{catalogInfoDesc, catalogAdsDesc, catalogLoadedDesc, catalogFailingDesc,
		catalogFailureDesc, catalogRefreshesDesc, catalogRetiredDesc, catalogRemovedDesc, catalogBehindDesc, catalogAnnouncementsDesc} {
		ch <- d
	}
}

func (c *catalogCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(catalogInfoDesc, 1, s.Version)
	gauge(catalogAdsDesc, float64(s.Ads))
	gauge(catalogLoadedDesc, unixSeconds(s.LoadedAt))
	failing := 0.0
	if s.Failing {
		failing = 1
	}
	gauge(catalogFailingDesc, failing)
	gauge(catalogFailureDesc, unixSeconds(s.LastFailure))
	for _, r := range []string{"swapped", "unchanged", "refused", "failed"} {
		ch <- prometheus.MustNewConstMetric(catalogRefreshesDesc, prometheus.CounterValue, float64(s.Refreshes[r]), r)
	}
	gauge(catalogRetiredDesc, float64(s.Retired))
	gauge(catalogRemovedDesc, float64(s.Removed))
	if !s.Replicas {
		return
	}
	behind := 0.0
	if s.Behind {
		behind = 1
	}
	gauge(catalogBehindDesc, behind)
	for _, o := range []string{"sent", "failed", "heard"} {
		ch <- prometheus.MustNewConstMetric(catalogAnnouncementsDesc, prometheus.CounterValue, float64(s.Announcements[o]), o)
	}
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
