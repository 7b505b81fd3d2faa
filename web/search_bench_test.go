package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/match"
	"github.com/chromedp/chromedp"
)

// searchQueries are the searches BenchmarkSearchInPage makes on the demo
// search page, each at every ctx.dist: words and phrases the German demo
// catalog has ads for, and some it has not.
var searchQueries = []string{
	"kopfhörer", "iphone 15", "lg handy verkaufen", "samsung galaxy", "laptop 16 GB",
	"drucker", "fernseher 55 zoll", "spielkonsole", "smartphone", "tintenpatronen",
	"bluetooth lautsprecher", "kaffeevollautomat",
}

const searchFields = "price,logoad_type"

// search is a query and its ctx.dist.
type search struct{ q, dist string }

// searchPass times the searches in the page. It captures the module's
// exports as the widget instantiates it, and each request as the widget
// encodes it, to time the module's own calls apart from the widget's
// work around them. It runs every search through adlink.search once,
// which loads the module, then once more, timed (V8's baseline code), for
// warmMs more (V8 optimises hot code in the background), and then passes
// times: reps times every search through adlink.search, then the same
// requests straight into the module. It resolves to the microseconds per
// search of the median passes and of the first timed one, and the number
// of links each search answered.
const searchPass = `(async (qs, fields, reps, passes, warmMs) => {
	const Instance = WebAssembly.Instance;
	let ex;
	WebAssembly.Instance = function (m, i) { const inst = new Instance(m, i); ex = inst.exports; return inst; };
	const encode = TextEncoder.prototype.encode, reqs = [];
	TextEncoder.prototype.encode = function (s) { const b = encode.call(this, s); reqs.push(b); return b; };
	const counts = [];
	for (const [q, d] of qs) counts.push((await adlink.search(q, {"ctx.dist": d, fields})).link.length);
	WebAssembly.Instance = Instance;
	TextEncoder.prototype.encode = encode;
	if (!ex || reqs.length !== qs.length) throw new Error("captured " + reqs.length + " requests of " + qs.length);
	const search = async () => { for (const [q, d] of qs) await adlink.search(q, {"ctx.dist": d, fields}); };
	const module = () => {
		for (const r of reqs) {
			const p = ex.alloc(r.length) >>> 0;
			new Uint8Array(ex.memory.buffer, p, r.length).set(r);
			const res = ex.match_search(p, r.length);
			ex.free(p);
			ex.free(Number(res >> 32n));
		}
	};
	let t0 = performance.now();
	await search();
	const first = (performance.now() - t0) * 1000 / qs.length;
	for (t0 = performance.now(); performance.now() - t0 < warmMs; ) await search();
	const full = [], alone = [];
	for (let p = 0; p < passes; p++) {
		let t = performance.now();
		for (let r = 0; r < reps; r++) await search();
		full.push(performance.now() - t);
		t = performance.now();
		for (let r = 0; r < reps; r++) module();
		alone.push(performance.now() - t);
	}
	const us = (v) => v.sort((a, b) => a - b)[passes >> 1] * 1000 / (reps * qs.length);
	return {search: us(full), module: us(alone), first, counts};
})`

// BenchmarkSearchInPage: what adlink.search costs a publisher's page in
// Chromium (V8 running matcher.wasm, with the widget's request and
// JSON.parse around it) beside the same searches natively, on the same
// de-DE shard. Package wasm times the module alone under wazero.
func BenchmarkSearchInPage(b *testing.B) {
	srv := startBackend(b)
	var searches []search
	for _, q := range searchQueries {
		for _, d := range []string{"high", "low", "none"} {
			searches = append(searches, search{q, d})
		}
	}
	qs, _ := json.Marshal(func() (out [][2]string) {
		for _, s := range searches {
			out = append(out, [2]string{s.q, s.dist})
		}
		return out
	}())
	const reps, passes, warmMs = 10, 7, 3000
	var page inPage
	var native float64
	for range b.N {
		br := newBrowser(b)
		br.lean(b)
		br.do(b, chromedp.Navigate(srv.URL+"/demo/search.html"))
		page = eval[inPage](b, br, fmt.Sprintf("%s(%s, %q, %d, %d, %d)", searchPass, qs, searchFields, reps, passes, warmMs))
		br.noConsoleErrors(b)
		native = nativeSearch(b, srv, searches, page.Counts, reps, passes)
	}
	b.ReportMetric(page.Module, "µs/query-chromium")
	b.ReportMetric(page.Search, "µs/search-chromium")
	b.ReportMetric(native, "µs/query-native")
	b.ReportMetric(page.Module/native, "x-native")
	fmt.Printf("query in Chromium on the demo de-DE shard, once V8 has optimised the module: matcher.wasm %.1f µs, native %.1f µs: %.1fx (target <= 3x)\n",
		page.Module, native, page.Module/native)
	fmt.Printf("  adlink.search, with the widget's request and JSON.parse around the module: %.1f µs; before V8 optimised it %.1f µs\n", page.Search, page.First)
}

// inPage is what searchPass resolves to.
type inPage struct {
	Search, Module, First float64
	Counts                []int
}

// nativeSearch matches the same searches with match/ over the shard the
// page loaded, as the module does (match.Match and the JSON answer), and
// returns the microseconds per search. The number of links of each must
// be the page's: the two sides did the same work.
func nativeSearch(b *testing.B, srv *backend, searches []search, counts []int, reps, passes int) float64 {
	var m struct {
		RedirectURL string `json:"redirect_url"`
		Shard       struct{ URL string }
	}
	if err := json.Unmarshal(get(b, srv.URL+"/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de"), &m); err != nil {
		b.Fatal(err)
	}
	ix, err := match.Open(get(b, srv.URL+m.Shard.URL))
	if err != nil {
		b.Fatal(err)
	}
	fields, _ := match.ParseFields(searchFields, match.SearchFieldNames)
	o := match.LinkOptions{Context: match.ContextSearch, APIKey: "demo", SiteID: "demo", RedirectURL: m.RedirectURL, Fields: fields}
	queries := make([]match.Query, len(searches))
	for i, s := range searches {
		text, _ := match.ParseText(s.q)
		op, dist, _, _ := match.ParseOperator("", s.dist)
		queries[i] = match.Query{Text: text, Country: "de", Lang: "de", Operator: op, Dist: dist,
			Size: match.DefaultSize, DistinctAdvertiser: match.DefaultDistinctAdvertiser}
		if n := len(ix.Match(&queries[i])); i >= len(counts) || n != counts[i] {
			b.Fatalf("%q at %s: %d links natively, the page's counts %v", s.q, s.dist, n, counts)
		}
	}
	var buf []byte
	times := make([]time.Duration, passes)
	for p := range times {
		t := time.Now()
		for range reps {
			for i := range queries {
				buf = ix.AppendResponse(buf[:0], ix.Match(&queries[i]), &o)
			}
		}
		times[p] = time.Since(t)
	}
	slices.Sort(times)
	return float64(times[passes/2].Nanoseconds()) / 1e3 / float64(reps*len(queries))
}
