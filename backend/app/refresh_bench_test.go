package app

import (
	"bytes"
	"context"
	"hash/maphash"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/internal/cputime"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// icecatDir is ../shared/data/catalog/icecat seen from this package.
const icecatDir = "../../../shared/data/catalog/icecat"

// BenchmarkRefresh times a changed feed to the moment the server serves
// it (a refresh: read, check, index, cut the shards, swap), beside a cold
// start of the server on the same feed, for the Icecat products (where
// ../shared/data has them) and a million generated products. The feed
// changes by one ad removed and one price changed. Each is timed on the
// clock and by the process's CPU time (all its cores together), which the
// machine's other work does not inflate. It also reports the
// refresh's steps, the recompression of its shards at the best levels
// that follows the swap (and the zstd bytes of every shard and fragment
// before it beside after it), and three floors: indexing the whole
// changed catalog alone (a refresh that changes any ad does that),
// reading the feed's bytes and hashing its lines (the least a changed
// feed's read costs), and compressing the shards the refresh made, the
// whole catalog's and its changed markets', at the fast levels on every
// core (the least a refresh whose shards are new bytes spends before it
// serves them).
func BenchmarkRefresh(b *testing.B) {
	for _, c := range []struct {
		name string
		ads  func(b *testing.B) []match.Ad
	}{
		{"icecat", func(b *testing.B) []match.Ad {
			if _, err := os.Stat(icecatDir); err != nil {
				b.Skipf("Icecat data not found at %s (../shared/data from the project root): %v", icecatDir, err)
			}
			ads, err := testcatalog.Icecat(icecatDir)
			if err != nil {
				b.Fatal(err)
			}
			return ads
		}},
		{"generated_1M", func(*testing.B) []match.Ad { return testcatalog.Generate(1_000_000, 1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			ads := c.ads(b)
			path := filepath.Join(b.TempDir(), "feed.jsonl")
			writeFile(b, path, feed(b, ads))
			changed := slices.Clone(ads[1:])
			for i := range changed {
				if changed[i].PriceCents > 0 {
					changed[i].PriceCents++
					break
				}
			}
			changedFeed := feed(b, changed)
			var cold, refresh, read, index, cut, recompress, floorIndex, floorRead, floorCompress time.Duration
			var fastBytes, bestBytes int
			var coldCPU, refreshCPU time.Duration
			for b.Loop() {
				writeFile(b, path, feed(b, ads))
				cfg := testConfig(b)
				cfg.Catalogs = []string{path}
				// A process's first cold start compresses matcher.wasm;
				// the servers built before in this one kept it.
				shards.ForgetModule()
				runtime.GC()
				start, cpu := time.Now(), cputime.Process()
				a, err := New(cfg, Options{})
				if err != nil {
					b.Fatal(err)
				}
				cold += time.Since(start)
				coldCPU += cputime.Process() - cpu
				writeFile(b, path, changedFeed)
				before := a.Catalog().Shards
				runtime.GC()
				start, cpu = time.Now(), cputime.Process()
				r := a.Reload(context.Background(), false)
				refresh += time.Since(start)
				refreshCPU += cputime.Process() - cpu
				if r.Result != "swapped" || r.Ads != len(changed) {
					b.Fatalf("refresh: %+v", r)
				}
				read, index, cut = read+a.live.took.read, index+a.live.took.index, cut+a.live.took.shards
				fastBytes += zstdBytes(a.Catalog().Shards)
				start = time.Now()
				a.live.waitRecompressed()
				recompress += time.Since(start)
				bestBytes += zstdBytes(a.Catalog().Shards)
				newShards := shardsNotIn(a.Catalog().Shards, before)
				a.Close()

				runtime.GC()
				start = time.Now()
				compressFast(b, newShards)
				floorCompress += time.Since(start)

				runtime.GC()
				start = time.Now()
				if _, err := match.Build(changed); err != nil {
					b.Fatal(err)
				}
				floorIndex += time.Since(start)
				runtime.GC()
				start = time.Now()
				readLines(b, path)
				floorRead += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(float64(len(ads)), "ads")
			b.ReportMetric(refresh.Seconds()/n, "refresh_s")
			b.ReportMetric(cold.Seconds()/n, "cold_start_s")
			b.ReportMetric(refresh.Seconds()/cold.Seconds(), "refresh_vs_cold_x")
			b.ReportMetric(refreshCPU.Seconds()/n, "refresh_cpu_s")
			b.ReportMetric(coldCPU.Seconds()/n, "cold_start_cpu_s")
			b.ReportMetric(refreshCPU.Seconds()/coldCPU.Seconds(), "refresh_vs_cold_cpu_x")
			b.ReportMetric(read.Seconds()/n, "read_s")
			b.ReportMetric(index.Seconds()/n, "index_s")
			b.ReportMetric(cut.Seconds()/n, "shards_s")
			b.ReportMetric(recompress.Seconds()/n, "recompress_after_s")
			b.ReportMetric(float64(fastBytes)/float64(bestBytes), "fast_vs_best_zstd_x")
			b.ReportMetric(floorIndex.Seconds()/n, "floor_index_all_s")
			b.ReportMetric(floorRead.Seconds()/n, "floor_read_lines_s")
			b.ReportMetric(floorCompress.Seconds()/n, "floor_compress_new_shards_s")
		})
	}
}

// zstdBytes is the zstd size of every shard and fragment of set.
func zstdBytes(set *shards.Set) int {
	n := set.Pick("", "").Size(shards.Zstd)
	for _, f := range set.Fragments(set.Pick("", "")) {
		n += f.Size(shards.Zstd)
	}
	for _, b := range set.Markets() {
		n += b.Size(shards.Zstd)
		for _, f := range set.Fragments(b) {
			n += f.Size(shards.Zstd)
		}
	}
	return n
}

// shardsNotIn is the bytes of the shards of set, the whole catalog's and
// each market's, that before does not have: those a refresh made.
func shardsNotIn(set, before *shards.Set) [][]byte {
	made := map[string][]byte{}
	for _, sh := range append(slices.Collect(maps.Values(set.Markets())), set.Pick("", "")) {
		if before.Shard(sh.SHA256) == nil {
			made[sh.SHA256] = sh.Bytes(shards.Identity)
		}
	}
	return slices.Collect(maps.Values(made))
}

// compressFast compresses each of data with zstd and gzip at the fast
// levels, on every core, the largest first: the least a refresh that
// made those shards spends compressing them before it serves them.
func compressFast(b *testing.B, data [][]byte) {
	data = slices.Clone(data)
	slices.SortFunc(data, func(x, y []byte) int { return len(y) - len(x) })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(data); i = int(next.Add(1)) - 1 {
				if _, err := shards.NewFastBlob(data[i], "application/octet-stream"); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// readLines reads the file at path and hashes each of its lines, as a
// changed feed's read does before it decodes the lines that changed.
func readLines(b *testing.B, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	seed := maphash.MakeSeed()
	var sum uint64
	for line := range bytes.Lines(data) {
		sum ^= maphash.Bytes(seed, line)
	}
	if sum == 0 && len(data) > 0 {
		b.Log("all lines hashed to nothing")
	}
}

// BenchmarkSwapUnderLoad sends searches from several clients at once over
// 50,000 generated ads, first while the catalog is swapped again and again
// (each refresh forced between two feeds) until the last swap's shards
// are recompressed, and then as long again in the steady state, and reports the p99 latency, errors and peak heap of the
// swaps beside those of the steady state.
func BenchmarkSwapUnderLoad(b *testing.B) {
	ads := testcatalog.Generate(50_000, 2)
	path := filepath.Join(b.TempDir(), "feed.jsonl")
	feeds := [2][]byte{feed(b, ads), feed(b, ads[:len(ads)-1000])}
	writeFile(b, path, feeds[0])
	cfg := testConfig(b)
	cfg.Catalogs = []string{path}
	cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 1e9, 1e9, 1
	a, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	var queries []string
	for _, r := range testcatalog.Requests(ads, 2000, 3, false) {
		queries = append(queries, r.Values().Encode())
	}
	const clients = 4
	const swaps = 3

	// phase sends searches until stop is closed, and returns their latency
	// histogram, errors, and the peak heap seen.
	phase := func(stop <-chan struct{}) (h *histogram, errs int, peak uint64) {
		h = new(histogram)
		var mu sync.Mutex
		var wg sync.WaitGroup
		var next atomic.Int64
		var errCount atomic.Int64
		sampleDone := make(chan struct{})
		go func() {
			defer close(sampleDone)
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		for range clients {
			wg.Go(func() {
				mine := new(histogram)
				for {
					select {
					case <-stop:
						mu.Lock()
						h.add(mine)
						mu.Unlock()
						return
					default:
					}
					q := queries[int(next.Add(1))%len(queries)]
					req := httptest.NewRequest(http.MethodGet, "/v2/search/link?"+q, nil)
					rec := httptest.NewRecorder()
					start := time.Now()
					a.Handler.ServeHTTP(rec, req)
					mine.record(time.Since(start))
					if rec.Code != http.StatusOK {
						errCount.Add(1)
					}
				}
			})
		}
		wg.Wait()
		<-sampleDone
		return h, int(errCount.Load()), peak
	}

	for b.Loop() {
		runtime.GC()
		swapStart := time.Now()
		stop := make(chan struct{})
		var swapHist *histogram
		var swapErrs int
		var swapPeak uint64
		done := make(chan struct{})
		go func() {
			defer close(done)
			swapHist, swapErrs, swapPeak = phase(stop)
		}()
		for i := range swaps {
			writeFile(b, path, feeds[(i+1)%2])
			if r := a.Reload(context.Background(), true); r.Result != "swapped" {
				b.Fatalf("swap %d: %+v", i, r)
			}
		}
		// The swaps' shards recompressed at the best levels, after them,
		// count as the swaps' work.
		a.live.waitRecompressed()
		close(stop)
		<-done
		swapTime := time.Since(swapStart)

		// The steady state, with the earlier versions' shards dropped as
		// they are once their grace has passed.
		writeFile(b, path, feeds[0])
		a.Reload(context.Background(), true)
		a.live.waitRecompressed()
		a.live.dropRetired()
		runtime.GC()
		stop = make(chan struct{})
		timer := time.AfterFunc(swapTime, func() { close(stop) })
		steadyHist, steadyErrs, steadyPeak := phase(stop)
		timer.Stop()

		b.ReportMetric(float64(steadyHist.quantile(0.99).Microseconds())/1000, "steady_p99_ms")
		b.ReportMetric(float64(swapHist.quantile(0.99).Microseconds())/1000, "swap_p99_ms")
		b.ReportMetric(float64(swapHist.quantile(0.99))/float64(steadyHist.quantile(0.99)), "p99_swap_vs_steady_x")
		b.ReportMetric(float64(swapErrs+steadyErrs), "errors")
		b.ReportMetric(float64(swapHist.n+steadyHist.n), "searches")
		b.ReportMetric(float64(steadyPeak)/(1<<20), "steady_heap_MB")
		b.ReportMetric(float64(swapPeak)/(1<<20), "swap_peak_heap_MB")
		b.ReportMetric(float64(swapPeak)/float64(steadyPeak), "heap_swap_vs_steady_x")
		b.ReportMetric(swapTime.Seconds()/swaps, "swap_s")
	}
}

// histogram counts latencies in microseconds, the last bucket holding
// everything from 100 ms on: no allocation per request.
type histogram struct {
	n       int
	buckets [100_000]uint32
}

func (h *histogram) record(d time.Duration) {
	h.buckets[min(int(d.Microseconds()), len(h.buckets)-1)]++
	h.n++
}

func (h *histogram) add(o *histogram) {
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.n += o.n
}

func (h *histogram) quantile(q float64) time.Duration {
	want, seen := int(q*float64(h.n)), 0
	for i, c := range h.buckets {
		if seen += int(c); seen > want {
			return time.Duration(i+1) * time.Microsecond
		}
	}
	return time.Duration(len(h.buckets)) * time.Microsecond
}

// dropRetired stops serving earlier versions' shards at once, as their
// grace running out does; for benchmarks of the steady state.
func (l *live) dropRetired() {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := *l.cur.Load()
	c := *v.api
	c.Retired = nil
	v.api = &c
	l.cur.Store(&v)
}
