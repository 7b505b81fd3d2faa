package metrics

import "github.com/prometheus/client_golang/prometheus"

// SiteShardStats are what /metrics says of the site shards
// (backend/siteshards): what is kept, and the builds so far.
type SiteShardStats struct {
	Profiles, Shards int
	Bytes            int64
	// Builds are the site shards built, HeadBuilds the markets' heads,
	// Refused the builds the rate or the full queue put off.
	Builds, HeadBuilds, Refused int
	// Shared, ShareFailed, Fetched, FetchMissed and FetchFailed are
	// siteshards.Stats': the shards shared with the other replicas
	// through Postgres, and read from it.
	Shared, ShareFailed, Fetched, FetchMissed, FetchFailed int
}

// WatchSiteShards has /metrics read the site shards' stats at each scrape.
func (m *Metrics) WatchSiteShards(stats func() SiteShardStats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&siteShardCollector{stats: stats})
}

var (
	siteProfilesDesc = prometheus.NewDesc("adlink_site_profiles",
		"Sites whose profile (what their analysed pages are about) is kept.", nil, nil)
	siteShardsDesc = prometheus.NewDesc("adlink_site_shards",
		"Site shards and market heads kept to serve.", nil, nil)
	siteShardBytesDesc = prometheus.NewDesc("adlink_site_shard_bytes",
		"Bytes of the site shards kept, every encoding of each and its fragments.", nil, nil)
	siteShardBuildsDesc = prometheus.NewDesc("adlink_site_shard_builds_total",
		"Site shards built, by kind (site, head).", []string{"kind"}, nil)
	siteShardRefusedDesc = prometheus.NewDesc("adlink_site_shard_builds_refused_total",
		"Site shard builds put off by the build rate or a full queue; the site is served the head meanwhile.", nil, nil)
	siteShardSharedDesc = prometheus.NewDesc("adlink_site_shards_shared_total",
		"Site shards written to or named again in Postgres for the other replicas, by result (ok, failed).", []string{"result"}, nil)
	siteShardFetchedDesc = prometheus.NewDesc("adlink_site_shards_fetched_total",
		"Requests for a site shard this replica did not build looked up in Postgres, by result (ok, missing, failed: no answer or bytes not served).", []string{"result"}, nil)
)

// siteShardCollector reads the site shards' stats once per scrape.
type siteShardCollector struct {
	stats func() SiteShardStats
}

func (c *siteShardCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{siteProfilesDesc, siteShardsDesc, siteShardBytesDesc, siteShardBuildsDesc, siteShardRefusedDesc, siteShardSharedDesc, siteShardFetchedDesc} {
		ch <- d
	}
}

func (c *siteShardCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(siteProfilesDesc, prometheus.GaugeValue, float64(s.Profiles))
	ch <- prometheus.MustNewConstMetric(siteShardsDesc, prometheus.GaugeValue, float64(s.Shards))
	ch <- prometheus.MustNewConstMetric(siteShardBytesDesc, prometheus.GaugeValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(siteShardBuildsDesc, prometheus.CounterValue, float64(s.Builds), "site")
	ch <- prometheus.MustNewConstMetric(siteShardBuildsDesc, prometheus.CounterValue, float64(s.HeadBuilds), "head")
	ch <- prometheus.MustNewConstMetric(siteShardRefusedDesc, prometheus.CounterValue, float64(s.Refused))
	ch <- prometheus.MustNewConstMetric(siteShardSharedDesc, prometheus.CounterValue, float64(s.Shared), "ok")
	ch <- prometheus.MustNewConstMetric(siteShardSharedDesc, prometheus.CounterValue, float64(s.ShareFailed), "failed")
	ch <- prometheus.MustNewConstMetric(siteShardFetchedDesc, prometheus.CounterValue, float64(s.Fetched), "ok")
	ch <- prometheus.MustNewConstMetric(siteShardFetchedDesc, prometheus.CounterValue, float64(s.FetchMissed), "missing")
	ch <- prometheus.MustNewConstMetric(siteShardFetchedDesc, prometheus.CounterValue, float64(s.FetchFailed), "failed")
}
