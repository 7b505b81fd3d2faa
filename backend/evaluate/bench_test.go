package evaluate

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// sharedData is where the real catalogs and judgments live, beside the
// project.
var sharedData = filepath.Join("..", "..", "..", "shared", "data")

func needData(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(sharedData, "relevance", "judgments-dev.csv")); err != nil {
		tb.Skip("../shared/data is absent: the relevance and Icecat figures need it")
	}
}

const icecatPrefix = "ICECAT.1."

// ours runs a query through the matcher as /v2/search/link does with
// ctx.dist=none and returns Icecat document ids, best first.
func ours(ix *match.Index, q string) []string {
	hits := ix.Match(&match.Query{Text: q, Dist: match.DistNone, Size: match.MaxSize, DistinctAdvertiser: match.MaxDistinctAdvertiser})
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = strings.TrimPrefix(ix.Ad(h.Ad).ID, icecatPrefix)
	}
	return out
}

type bleveDoc struct {
	Title        string `json:"title"`
	Description  string `json:"description"`
	Manufacturer string `json:"manufacturer"`
	Model        string `json:"model"`
}

func buildBleve(tb testing.TB, ads []match.Ad) bleve.Index {
	idx, err := bleve.NewMemOnly(bleve.NewIndexMapping())
	if err != nil {
		tb.Fatal(err)
	}
	batch := idx.NewBatch()
	for _, a := range ads {
		if err := batch.Index(strings.TrimPrefix(a.ID, icecatPrefix), bleveDoc{a.Title, a.Description, a.Manufacturer, a.Model}); err != nil {
			tb.Fatal(err)
		}
		if batch.Size() >= 1000 {
			if err := idx.Batch(batch); err != nil {
				tb.Fatal(err)
			}
			batch = idx.NewBatch()
		}
	}
	if err := idx.Batch(batch); err != nil {
		tb.Fatal(err)
	}
	return idx
}

// theirs is the baseline: a match query over title, description,
// manufacturer and model.
func theirs(tb testing.TB, idx bleve.Index, q string, size int) []string {
	var qs []query.Query
	for _, f := range []string{"title", "description", "manufacturer", "model"} {
		m := bleve.NewMatchQuery(q)
		m.SetField(f)
		qs = append(qs, m)
	}
	req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery(qs...), size, 0, false)
	res, err := idx.Search(req)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

// latency runs each query reps times and returns per-run milliseconds.
func latency(qs []string, reps int, run func(q string)) []float64 {
	var ms []float64
	for range reps {
		for _, q := range qs {
			t := time.Now()
			run(q)
			ms = append(ms, float64(time.Since(t).Nanoseconds())/1e6)
		}
	}
	return ms
}

// BenchmarkRelevance prints nDCG@10, judged share, query latency and build
// time for the matcher beside Bleve, on the Icecat catalog and its
// judgments.
func BenchmarkRelevance(b *testing.B) {
	needData(b)
	j, err := ReadJudgmentsFile(filepath.Join(sharedData, "relevance", "judgments-dev.csv"))
	if err != nil {
		b.Fatal(err)
	}
	ads, err := testcatalog.Icecat(filepath.Join(sharedData, "catalog", "icecat"))
	if err != nil {
		b.Fatal(err)
	}
	qs := j.Queries()
	for range b.N {
		// Each system is timed alone, with only its own index in memory.
		t0 := time.Now()
		ix, err := match.Build(ads)
		if err != nil {
			b.Fatal(err)
		}
		buildOurs := time.Since(t0).Seconds()
		var nOurs, jOurs float64
		for _, q := range qs {
			n, s := NDCG(ours(ix, q), j[q], 10)
			nOurs, jOurs = nOurs+n, jOurs+s
		}
		// Timed as the server answers a request with the default size:
		// match, then write the link entries.
		var buf []byte
		opts := (&contract.Links{Base: "http://localhost:8080", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo"}).Options()
		lo := latency(qs, 20, func(q string) {
			hits := ix.Match(&match.Query{Text: q, Dist: match.DistNone})
			buf = ix.AppendResponse(buf[:0], hits, &opts)
		})
		ix = nil
		runtime.GC()

		t0 = time.Now()
		bl := buildBleve(b, ads)
		buildTheirs := time.Since(t0).Seconds()
		var nTheirs, jTheirs float64
		for _, q := range qs {
			n, s := NDCG(theirs(b, bl, q, match.MaxSize), j[q], 10)
			nTheirs, jTheirs = nTheirs+n, jTheirs+s
		}
		lt := latency(qs, 5, func(q string) { theirs(b, bl, q, match.DefaultSize) })
		bl.Close()
		nq := float64(len(qs))

		b.ReportMetric(nOurs/nq, "ndcg@10")
		b.ReportMetric(nTheirs/nq, "bleve_ndcg@10")
		b.ReportMetric(jOurs/nq, "judged_share")
		b.ReportMetric(jTheirs/nq, "bleve_judged_share")
		b.ReportMetric(Percentile(lo, 0.5)*1000, "p50_µs")
		b.ReportMetric(Percentile(lo, 0.99)*1000, "p99_µs")
		b.ReportMetric(Percentile(lt, 0.5)*1000, "bleve_p50_µs")
		b.ReportMetric(Percentile(lt, 0.99)*1000, "bleve_p99_µs")
		b.ReportMetric(Percentile(lt, 0.5)/Percentile(lo, 0.5), "p50_speedup_x")
		b.ReportMetric(buildOurs, "build_s")
		b.ReportMetric(buildTheirs, "bleve_build_s")
		b.ReportMetric(buildTheirs/buildOurs, "build_speedup_x")
	}
}

// BenchmarkScale1M builds the index of a generated 1,000,000-product
// catalog and prints build time, heap per product and query latency beside
// their targets (30 s, 600 B, p99 1 ms).
func BenchmarkScale1M(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ads := testcatalog.Generate(n, 1)
		qs := scaleQueries(ads)
		t0 := time.Now()
		ix, err := match.Build(ads)
		if err != nil {
			b.Fatal(err)
		}
		build := time.Since(t0).Seconds()
		ads = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		perAd := float64(after.HeapAlloc-before.HeapAlloc) / n

		high := latency(qs, 5, func(q string) { ix.Match(&match.Query{Text: q}) })
		none := latency(qs, 5, func(q string) { ix.Match(&match.Query{Text: q, Dist: match.DistNone}) })
		runtime.KeepAlive(ix)

		b.ReportMetric(build, "build_s")
		b.ReportMetric(build/30, "build_of_target")
		b.ReportMetric(perAd, "heap_B/product")
		b.ReportMetric(perAd/600, "heap_of_target")
		b.ReportMetric(Percentile(high, 0.5)*1000, "high_p50_µs")
		b.ReportMetric(Percentile(high, 0.99)*1000, "high_p99_µs")
		b.ReportMetric(Percentile(none, 0.5)*1000, "none_p50_µs")
		b.ReportMetric(Percentile(none, 0.99)*1000, "none_p99_µs")
		b.ReportMetric(Percentile(high, 0.99)/1, "high_p99_of_1ms_target")
	}
}

// scaleQueries draws 200 realistic queries from a generated catalog:
// brand, brand and category, model, and two title words.
func scaleQueries(ads []match.Ad) []string {
	var qs []string
	step := len(ads) / 50
	for i := 0; i < len(ads) && len(qs) < 200; i += step {
		a := ads[i]
		w := strings.Fields(a.Title)
		qs = append(qs, a.Manufacturer, a.Manufacturer+" "+a.Category, a.Model)
		if len(w) >= 2 {
			qs = append(qs, w[len(w)-2]+" "+w[len(w)-1])
		}
	}
	return qs
}
