package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkSearchHTTP measures requests per second of GET /v2/search/link
// over a real loopback listener, beside a bare net/http handler that writes
// a fixed body of the same size, with the same load generator in the same
// run. It does a fixed number of requests per iteration, so -benchtime 1x
// (make bench) is a full measurement. Target: ratio >= 0.5.
func BenchmarkSearchHTTP(b *testing.B) {
	const (
		clients  = 8    // concurrent keep-alive connections
		requests = 6000 // per measurement
		rounds   = 3    // alternating measurements; the best of each counts
	)
	env := demoEnv(b)
	ours := httptest.NewServer(env.handler)
	defer ours.Close()
	target := "/v2/search/link?q=lg+handy&loc=de&lang=de&api_key=demo&site_id=demo"

	res, err := http.Get(ours.URL + target)
	if err != nil {
		b.Fatal(err)
	}
	body := readBody(b, res)
	if res.StatusCode != http.StatusOK || len(body) < 500 {
		b.Fatalf("search answered %d with %d bytes", res.StatusCode, len(body))
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer bare.Close()

	// Warm both up: connections, buffers, the pools.
	load(b, bare.URL+target, clients, 500, len(body))
	load(b, ours.URL+target, clients, 500, len(body))

	var bestOurs, bestBare float64
	b.ResetTimer()
	for range b.N {
		for range rounds {
			bestBare = max(bestBare, load(b, bare.URL+target, clients, requests, len(body)))
			bestOurs = max(bestOurs, load(b, ours.URL+target, clients, requests, len(body)))
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bestOurs, "ours-req/s")
	b.ReportMetric(bestBare, "bare-req/s")
	b.ReportMetric(bestOurs/bestBare, "ratio")
	b.ReportMetric(float64(len(body)), "body-bytes")
}

// load sends n GETs of url from the given number of keep-alive clients and
// returns the requests per second. Every answer must be 200 with size bytes.
func load(b *testing.B, url string, clients, n, size int) float64 {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		fail error
	)
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				res, err := client.Get(url)
				if err == nil {
					var got int64
					got, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && (res.StatusCode != http.StatusOK || got != int64(size)) {
						err = &badAnswer{res.StatusCode, got}
					}
				}
				if err != nil {
					mu.Lock()
					fail = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if fail != nil {
		b.Fatal(fail)
	}
	return float64(n) / elapsed.Seconds()
}

type badAnswer struct {
	status int
	size   int64
}

func (e *badAnswer) Error() string {
	return "answer " + strconv.Itoa(e.status) + " with " + strconv.FormatInt(e.size, 10) + " bytes"
}
