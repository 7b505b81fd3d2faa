package evaluate

import (
	"testing"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// BenchmarkRelevanceQuery times BenchmarkRelevance's query path alone, one
// op a pass over the dev queries, for CPU and allocation profiles: match
// (ctx.dist=none, size 10), then the link entries written.
func BenchmarkRelevanceQuery(b *testing.B) {
	j, ads := devSet(b)
	qs := j.Queries()
	ix, err := match.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	opts := (&contract.Links{Base: "http://localhost:8080", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo"}).Options()
	var buf []byte
	b.Run("match+links", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for _, q := range qs {
				hits := ix.Match(&match.Query{Text: q, Dist: match.DistNone})
				buf = ix.AppendResponse(buf[:0], hits, &opts)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs))/1000, "µs/query")
	})
	b.Run("match", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for _, q := range qs {
				ix.Match(&match.Query{Text: q, Dist: match.DistNone})
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs))/1000, "µs/query")
	})
}
