package app

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
	"github.com/adlink/adlink/match"
)

// BenchmarkReplicaConverge times a reload on one of three replicas to the
// moment all three serve the new catalog (ms-converge), beside the
// reload's own time on that replica (ms-reload), over 20,000 generated
// ads whose feed changes by a price each time: on Redis (pub/sub) and on
// Postgres alone (LISTEN/NOTIFY). The other two read their feeds at once
// when told, together, on the same cores. Over 200 ads, whose reload
// takes next to nothing, the rest is the word's own way.
func BenchmarkReplicaConverge(b *testing.B) {
	for _, c := range []struct {
		store string
		ads   int
	}{{"redis", 20_000}, {"postgres", 20_000}, {"redis", 200}, {"postgres", 200}} {
		store := c.store
		b.Run(fmt.Sprintf("%s_%d_ads", c.store, c.ads), func(b *testing.B) {
			var redisURL, pgURL string
			if store == "redis" {
				redisURL = testredis.Start(b, testredis.Options{}).URL()
			} else {
				pgURL = testpg.New(b)
			}
			ads := testcatalog.Generate(c.ads, 21)
			priced := slices.IndexFunc(ads, func(a match.Ad) bool { return a.PriceCents > 0 })
			ms := deployment(b, redisURL, pgURL, ads, "A", "B", "C")
			var reload, converge time.Duration
			for i := 0; b.Loop(); i++ {
				ads[priced].PriceCents += 1 + int64(i%2)
				write(b, ms, ads)
				for _, m := range ms {
					m.drain()
				}
				start := time.Now()
				r := ms[0].Reload(context.Background(), false)
				reload += time.Since(start)
				if r.Result != resultSwapped {
					b.Fatalf("reload on A: %+v", r)
				}
				for _, m := range ms[1:] {
					m.serving(b, r.Version)
				}
				converge += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(converge.Seconds()*1000/n, "ms-converge")
			b.ReportMetric(reload.Seconds()*1000/n, "ms-reload")
			b.ReportMetric(converge.Seconds()/reload.Seconds(), "ratio")
		})
	}
}
