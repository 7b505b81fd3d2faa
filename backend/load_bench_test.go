package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-json"
)

// Load-benchmark settings: how long, how many clients at once.
const (
	loadDuration = 30 * time.Second
	loadClients  = 256
	loadPages    = 200 // distinct pages, within one site's share of the queue
)

// loadQueries are the search traffic's queries over the demo catalog.
var loadQueries = []string{
	"q=handy&loc=de", "q=lg+handy&loc=de&lang=de", "q=smartphone", "q=iphone&fields=price,logo",
	"q=handy+ohne+vertrag&ctx.dist=low", "q=samsung+galaxy&ctx.dist=none&q_operator=and",
	"q=nokia&size=5&callback=cb", "q=kopfhörer&loc=de", "q=laptop&loc=us", "q=fairphone&ad_type=product",
}

// BenchmarkLoad runs the server binary and sends it mixed traffic from
// loadClients clients over loopback for loadDuration: 60% searches, 25%
// page lookups (pending, then analysed), 15% clicks through the redirect.
// The limits are raised so that none refuses this one client. It reports
// requests per second, errors (any answer but 2xx, 302 and 429, or a
// failed request), 429s, p50 and p99 latency and the server's peak RSS.
func BenchmarkLoad(b *testing.B) {
	bin := buildServer(b)
	pageServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>Handy Test %s</title></head><body><article><h1>Das beste Handy</h1>"+
			"<p>Ein Smartphone ohne Vertrag: wir vergleichen das Apple iPhone und das Samsung Galaxy, Seite %s.</p></article></body></html>",
			r.URL.Path, r.URL.Path)
	}))
	defer pageServer.Close()

	for range b.N {
		srv := startServer(b, bin, b.TempDir(), "-fetch-allow-private", "-rate-pages", "1e9", "-rate-pages-burst", "1000000000")
		base, pid, stop := srv.base, srv.cmd.Process.Pid, srv.stop
		clicks := loadClickPaths(b, base)
		r := runLoad(base, pageServer.URL, clicks)
		rss := peakRSS(pid)
		stop()

		total := float64(r.n)
		b.ReportMetric(total/r.elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(r.errors), "errors")
		b.ReportMetric(float64(r.limited), "429s")
		b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
		for k, name := range loadKinds {
			b.ReportMetric(float64(r.p99Of[k].Microseconds())/1000, "p99-"+name+"-ms")
		}
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(total, "requests")
		if r.errors > 0 {
			b.Errorf("%d errors; first: %s", r.errors, r.firstErr)
		}
	}
}

// loadClickPaths returns the click URLs of some searches, as paths on base.
func loadClickPaths(b *testing.B, base string) []string {
	b.Helper()
	var out []string
	for _, q := range loadQueries {
		if strings.Contains(q, "callback") {
			continue
		}
		res, err := http.Get(base + "/v2/search/link?api_key=demo&site_id=demo&" + q)
		if err != nil {
			b.Fatal(err)
		}
		var resp struct{ Link []struct{ Ad string } }
		err = json.NewDecoder(res.Body).Decode(&resp)
		res.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range resp.Link {
			u, err := url.Parse(l.Ad)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, u.Path+"?"+u.RawQuery)
		}
	}
	if len(out) == 0 {
		b.Fatal("no click URLs in the searches' answers")
	}
	return out
}

// loadKinds name the kinds of traffic, for their own p99.
var loadKinds = [...]string{"search", "page", "click"}

type loadResult struct {
	n, errors, limited int
	firstErr           string
	elapsed            time.Duration
	p50, p99           time.Duration
	p99Of              [len(loadKinds)]time.Duration
}

// runLoad sends the traffic and measures it.
func runLoad(base, pageBase string, clicks []string) loadResult {
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConns: loadClients, MaxIdleConnsPerHost: loadClients, MaxConnsPerHost: loadClients},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), loadDuration)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		byKind    [len(loadKinds)][]time.Duration
		res       loadResult
		n         atomic.Int64
	)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range loadClients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var lat []time.Duration
			var kinds [len(loadKinds)][]time.Duration
			var errs, limited int
			var firstErr string
			for ctx.Err() == nil {
				var target string
				kind := 0
				switch k := rng.IntN(100); {
				case k < 60:
					target = "/v2/search/link?api_key=demo&site_id=demo&" + loadQueries[rng.IntN(len(loadQueries))]
				case k < 85:
					kind = 1
					page := url.QueryEscape(fmt.Sprintf("%s/artikel/%d", pageBase, rng.IntN(loadPages)))
					target = "/v2/page/link?api_key=demo&site_id=demo&url=" + page
				default:
					kind = 2
					target = clicks[rng.IntN(len(clicks))]
				}
				t0 := time.Now()
				resp, err := client.Get(base + target)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				d := time.Since(t0)
				if ctx.Err() != nil && err != nil {
					break // cut off by the end of the run
				}
				lat = append(lat, d)
				kinds[kind] = append(kinds[kind], d)
				switch {
				case err != nil:
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
				case resp.StatusCode == http.StatusTooManyRequests:
					limited++
				case resp.StatusCode >= 400 || (resp.StatusCode >= 300 && resp.StatusCode != http.StatusFound):
					errs++
					if firstErr == "" {
						firstErr = resp.Status + " for " + target
					}
				}
			}
			n.Add(int64(len(lat)))
			mu.Lock()
			latencies = append(latencies, lat...)
			for k := range kinds {
				byKind[k] = append(byKind[k], kinds[k]...)
			}
			res.errors += errs
			res.limited += limited
			if res.firstErr == "" {
				res.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.n = int(n.Load())
	res.p50, res.p99 = quantile(latencies, 0.50), quantile(latencies, 0.99)
	for k := range byKind {
		res.p99Of[k] = quantile(byKind[k], 0.99)
	}
	return res
}

// quantile sorts ds and returns its q-quantile, 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(float64(len(ds)-1)*q)]
}

// peakRSS reads the process's high-water resident set (VmHWM) in bytes.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
