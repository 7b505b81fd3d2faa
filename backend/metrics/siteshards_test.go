package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSiteShardMetrics(t *testing.T) {
	m := New()
	m.WatchSiteShards(func() SiteShardStats {
		return SiteShardStats{Profiles: 7, Shards: 3, Bytes: 123456, Builds: 5, HeadBuilds: 2, Refused: 9}
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	for _, want := range []string{
		"adlink_site_profiles 7", "adlink_site_shards 3", "adlink_site_shard_bytes 123456",
		`adlink_site_shard_builds_total{kind="site"} 5`, `adlink_site_shard_builds_total{kind="head"} 2`,
		"adlink_site_shard_builds_refused_total 9",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var none *Metrics
	none.WatchSiteShards(nil)
}
