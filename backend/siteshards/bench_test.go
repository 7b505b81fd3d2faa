package siteshards_test

import (
	"path/filepath"
	"testing"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// icecat reads the Icecat catalog from the shared data, or skips.
func icecat(tb testing.TB) []match.Ad {
	dir := filepath.Join(dataDir(tb), "catalog", "icecat")
	ads, err := testcatalog.Icecat(dir)
	if err != nil {
		tb.Skipf("skipping: no Icecat catalog at %s (%v); see ../shared/data/README.md", dir, err)
	}
	return ads
}

func BenchmarkAgreement(b *testing.B) {
	ads := icecat(b)
	mi, err := market.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	arts := loadArticles(b, mi.All())
	for range b.N {
		site, whole, n := agreement(b, mi, arts, 150<<10)
		b.ReportMetric(site, "top3-agreement")
		b.ReportMetric(whole, "top3-agreement-whole-market")
		b.ReportMetric(float64(n), "top3-ads")
	}
}
