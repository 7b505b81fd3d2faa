package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/pages"
)

// TestFloodOfUnseenPages sends 10,000 distinct unseen pages in a burst
// through the real HTTP server: each is accepted (202) or refused with 503
// and Retry-After, none fails otherwise, every accepted page is analysed,
// and the heap does not grow with the number of pages.
func TestFloodOfUnseenPages(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst of 10,000 requests")
	}
	pageServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>Handy %s</title></head><body><article><p>Ein Handy ohne Vertrag, Test %s.</p></article></body></html>", r.URL.Path, r.URL.Path)
	}))
	defer pageServer.Close()

	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "adlink.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const maxQueue = 200
	q, err := pages.OpenBolt(db, maxQueue, pages.WithPerSite(maxQueue))
	if err != nil {
		t.Fatal(err)
	}
	f := pages.NewFetcher(pages.FetchOptions{AllowPrivate: true})
	defer f.Close()
	svc := pages.NewService(q, f, func() pages.Reducer { return ix.All() }, pages.Options{})
	svc.Start()
	defer svc.Stop()
	cfg := config.Default()
	// The queue's bound is under test here, not the per-site rate limit.
	cfg.PageRate, cfg.PageBurst, cfg.KeyRate, cfg.KeyBurst = 1e6, 1e6, 1e6, 1e6
	api := httptest.NewServer(NewServer(Deps{Config: cfg, Indexes: ix, Partners: testPartners(t), Clicks: &clickRecorder{}, Pages: svc}))
	defer api.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}
	defer client.CloseIdleConnections()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	const n = 10000
	var accepted, refused atomic.Int32
	acceptedURL := make([]bool, n)
	var peakHeap atomic.Uint64
	var wg sync.WaitGroup
	work := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range work {
				res, err := client.Get(api.URL + pageQuery(fmt.Sprintf("%s/p/%d", pageServer.URL, i)))
				if err != nil {
					t.Error(err)
					continue
				}
				readBody(t, res)
				switch res.StatusCode {
				case http.StatusAccepted:
					accepted.Add(1)
					acceptedURL[i] = true
				case http.StatusServiceUnavailable:
					refused.Add(1)
					if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 {
						t.Errorf("503 with Retry-After %q", res.Header.Get("Retry-After"))
					}
				default:
					t.Errorf("page %d: %s", i, res.Status)
				}
				if i%500 == 0 {
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					for old := peakHeap.Load(); m.HeapAlloc > old && !peakHeap.CompareAndSwap(old, m.HeapAlloc); old = peakHeap.Load() {
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()

	if int(accepted.Load()+refused.Load()) != n || refused.Load() == 0 || accepted.Load() < maxQueue {
		t.Fatalf("accepted %d, refused %d of %d", accepted.Load(), refused.Load(), n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := svc.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for i, ok := range acceptedURL {
		if !ok {
			continue
		}
		res, err := svc.Lookup(ctx, fmt.Sprintf("%s/p/%d", pageServer.URL, i))
		if err != nil || res.Status != pages.StatusAnalysed {
			t.Fatalf("accepted page %d: %+v %v", i, res, err)
		}
	}
	grow := int64(peakHeap.Load()) - int64(before.HeapAlloc)
	t.Logf("accepted %d, refused %d; heap grew by at most %d KiB", accepted.Load(), refused.Load(), grow>>10)
	if grow > 128<<20 {
		t.Errorf("heap grew %d MiB during the flood", grow>>20)
	}
}
