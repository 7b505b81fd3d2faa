package evaluate

import (
	"testing"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// BenchmarkRelevanceQuery times BenchmarkRelevance's query path alone, one
// op a pass over the dev queries, for CPU and allocation profiles: match
// (ctx.dist=none, size 10), then the link entries written; and the link
// entries alone, by the server's writer and by the module's.
func BenchmarkRelevanceQuery(b *testing.B) {
	j, ads := devSet(b)
	qs := j.Queries()
	ix, err := match.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	opts := (&contract.Links{Base: "http://localhost:8080", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo"}).ServerOptions()
	var buf []byte
	b.Run("match+links", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for _, q := range qs {
				hits := ix.Match(&match.Query{Text: q, Dist: match.DistNone})
				buf = ix.AppendServerResponse(buf[:0], hits, &opts)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs))/1000, "µs/query")
	})
	// The link entries alone, for the hits of every query: the server's
	// writer beside the module's, which write the same bytes.
	hits := make([][]match.Hit, len(qs))
	for i, q := range qs {
		hits[i] = ix.Match(&match.Query{Text: q, Dist: match.DistNone})
	}
	modOpts := (&contract.Links{Base: "http://localhost:8080", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo"}).Options()
	for _, w := range []struct {
		name  string
		write func([]byte, []match.Hit) []byte
	}{
		{"links-server", func(dst []byte, h []match.Hit) []byte { return ix.AppendServerResponse(dst, h, &opts) }},
		{"links-module", func(dst []byte, h []match.Hit) []byte { return ix.AppendResponse(dst, h, &modOpts) }},
	} {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				for _, h := range hits {
					buf = w.write(buf[:0], h)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs))/1000, "µs/query")
		})
	}
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
