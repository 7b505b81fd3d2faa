package pages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/match"
	bolt "go.etcd.io/bbolt"
)

// mockFetcher is a PageFetcher whose behaviour a test sets.
type mockFetcher struct {
	FetchFn func(ctx context.Context, pageURL string) (*Document, error)
}

func (m *mockFetcher) Fetch(ctx context.Context, pageURL string, _ HostFilter) (*Document, error) {
	return m.FetchFn(ctx, pageURL)
}

var _ PageFetcher = (*mockFetcher)(nil)

type env struct {
	db  *bolt.DB
	q   *Bolt
	svc *Service
}

// open opens the pages service on the bbolt file in dir; stop closes it.
func open(t testing.TB, dir string, maxQueue int, f PageFetcher, r Reducer, o Options) *env {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "adlink.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// No per-site share here: these tests put every page on one host.
	q, err := OpenBolt(db, maxQueue, WithPerSite(max(maxQueue, DefaultMaxQueue)))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, q: q, svc: NewService(q, f, func() Reducer { return r }, o)}
	t.Cleanup(e.stop)
	return e
}

func (e *env) stop() {
	e.svc.Stop()
	e.db.Close()
}

func drain(t testing.TB, s *Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

func reviewServer(t *testing.T, hits *atomic.Int32) string {
	page, err := os.ReadFile("testdata/iphone5-review.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/review", func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	return serve(t, mux).URL
}

func TestServiceEndToEnd(t *testing.T) {
	var hits atomic.Int32
	base := reviewServer(t, &hits)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	ix := fixtureIndex(t)
	e := open(t, t.TempDir(), 0, f, ix, Options{})
	ctx := context.Background()
	pageURL, err := Canonical(base + "/review?utm_source=news&id=5#comments")
	if err != nil {
		t.Fatal(err)
	}

	res, err := e.svc.Lookup(ctx, pageURL)
	if err != nil || res.Status != StatusPending || res.RetryAfter <= 0 {
		t.Fatalf("first lookup %+v %v, want pending", res, err)
	}
	e.svc.Start()
	drain(t, e.svc)

	res, err = e.svc.Lookup(ctx, pageURL)
	if err != nil || res.Status != StatusAnalysed {
		t.Fatalf("after drain %+v %v, want analysed", res, err)
	}
	// The page declares a canonical URL on the same site: the analysis is
	// stored there and the requested URL is an alias of it.
	if res.URL != base+"/reviews/apple-iphone-5" {
		t.Errorf("stored under %s", res.URL)
	}
	if res.Lang != "en" {
		t.Errorf("lang %q", res.Lang)
	}
	hitsOf := ix.Match(&match.Query{Page: true, Title: res.Title, Text: res.Text, Country: "de"})
	if len(hitsOf) != 1 || ix.Ad(hitsOf[0].Ad).ID != "EBAY.4.291181826279" || !slices.Equal(hitsOf[0].Keywords, []string{"Apple", "iPhone 5"}) {
		t.Fatalf("hits %+v of %q / %q", hitsOf, res.Title, res.Text)
	}
	direct, err := e.svc.Lookup(ctx, base+"/reviews/apple-iphone-5")
	if err != nil || direct.Status != StatusAnalysed || direct.Text != res.Text {
		t.Fatalf("canonical lookup %+v %v", direct, err)
	}
	if hits.Load() != 1 {
		t.Fatalf("page fetched %d times", hits.Load())
	}
}

func TestServiceOneJobForConcurrentFirstRequests(t *testing.T) {
	var hits atomic.Int32
	base := reviewServer(t, &hits)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{})
	var wg sync.WaitGroup
	var pending atomic.Int32
	start := make(chan struct{})
	for range 200 {
		wg.Go(func() {
			<-start
			res, err := e.svc.Lookup(context.Background(), base+"/review")
			if err != nil {
				t.Error(err)
				return
			}
			if res.Status == StatusPending {
				pending.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if n, _ := e.q.Len(context.Background()); n != 1 || pending.Load() != 200 {
		t.Fatalf("queue holds %d jobs after 200 first requests (%d pending)", n, pending.Load())
	}
	e.svc.Start()
	drain(t, e.svc)
	if hits.Load() != 1 {
		t.Fatalf("page fetched %d times", hits.Load())
	}
}

func TestServiceFailedPageIsRetriedAfterBackoff(t *testing.T) {
	base := reviewServer(t, nil)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	var now atomic.Pointer[time.Time]
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	now.Store(&t0)
	clock := func() time.Time { return *now.Load() }
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{Now: clock, RetryBackoff: time.Minute})
	e.svc.Start()
	ctx := context.Background()
	u := base + "/gone"
	if res, err := e.svc.Lookup(ctx, u); err != nil || res.Status != StatusPending {
		t.Fatalf("%+v %v", res, err)
	}
	drain(t, e.svc)
	res, err := e.svc.Lookup(ctx, u)
	if err != nil || res.Status != StatusFailed || res.Reason != "HTTP status 404" {
		t.Fatalf("after drain %+v %v, want failed 404", res, err)
	}
	if q, _ := e.q.Queued(ctx, u); q {
		t.Fatal("failed page queued again before its back-off")
	}
	t1 := t0.Add(61 * time.Second)
	now.Store(&t1)
	res, err = e.svc.Lookup(ctx, u)
	if err != nil || res.Status != StatusFailed {
		t.Fatalf("after back-off %+v %v, want failed while retried", res, err)
	}
	drain(t, e.svc)
	rec, _ := e.q.Get(ctx, u)
	if rec == nil || rec.Attempts != 2 || !rec.RetryAt.Equal(t1.Add(2*time.Minute)) {
		t.Fatalf("record after second failure %+v", rec)
	}
}

func TestServiceStaleAnalysisServedWhileRedone(t *testing.T) {
	var hits atomic.Int32
	base := reviewServer(t, &hits)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	var now atomic.Pointer[time.Time]
	t0 := time.Now()
	now.Store(&t0)
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{Now: func() time.Time { return *now.Load() }})
	ctx := context.Background()
	u := base + "/review"
	e.svc.Lookup(ctx, u)
	e.svc.Start()
	drain(t, e.svc)
	t1 := t0.Add(DefaultTTL + time.Minute)
	now.Store(&t1)
	res, err := e.svc.Lookup(ctx, u)
	if err != nil || res.Status != StatusAnalysed {
		t.Fatalf("stale lookup %+v %v, want the old analysis", res, err)
	}
	drain(t, e.svc)
	rec, _ := e.q.Get(ctx, base+"/reviews/apple-iphone-5")
	if hits.Load() != 2 || rec == nil || !rec.At.Equal(t1) {
		t.Fatalf("re-analysis: %d fetches, analysed at %v", hits.Load(), rec.At)
	}
}

func TestServiceJobTimeoutAndPanic(t *testing.T) {
	f := &mockFetcher{FetchFn: func(ctx context.Context, u string) (*Document, error) {
		if u == "http://example.com/panic" {
			panic("boom")
		}
		<-ctx.Done()
		return nil, &FetchError{Reason: "fetch timed out", Err: ctx.Err()}
	}}
	e := open(t, t.TempDir(), 0, f, nil, Options{JobTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	for _, u := range []string{"http://example.com/slow", "http://example.com/panic"} {
		e.svc.Lookup(ctx, u)
	}
	e.svc.Start()
	drain(t, e.svc)
	for u, want := range map[string]string{"http://example.com/slow": "analysis timed out", "http://example.com/panic": "analysis failed"} {
		res, err := e.svc.Lookup(ctx, u)
		if err != nil || res.Status != StatusFailed || res.Reason != want {
			t.Errorf("%s: %+v %v, want failed %q", u, res, err, want)
		}
	}
}

// TestServiceRestart queues 100 pages, stops the service while they are
// being fetched, and starts a new one on the same bbolt file: all 100 are
// analysed.
func TestServiceRestart(t *testing.T) {
	page, err := os.ReadFile("testdata/iphone5-review.html")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		blocked = make(chan struct{}) // closed to let the second run through
		served  = map[string]int{}
		entered = make(chan struct{}, 100)
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-blocked:
		case <-r.Context().Done():
			return
		}
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		w.Write(page)
	})
	base := serve(t, mux).URL
	dir := t.TempDir()
	ctx := context.Background()
	urls := make([]string, 100)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/p/%d", base, i)
	}

	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	first := open(t, dir, 0, f, fixtureIndex(t), Options{Workers: 4})
	for _, u := range urls {
		if res, err := first.svc.Lookup(ctx, u); err != nil || res.Status != StatusPending {
			t.Fatalf("%s: %+v %v", u, res, err)
		}
	}
	first.svc.Start()
	for range 4 {
		<-entered // every worker is inside a fetch
	}
	first.stop() // the process goes away with all 100 pages unfinished
	if n := len(served); n != 0 {
		t.Fatalf("%d pages served before the stop", n)
	}

	close(blocked)
	second := open(t, dir, 0, f, fixtureIndex(t), Options{})
	if n, _ := second.q.Len(ctx); n != 100 {
		t.Fatalf("queue holds %d jobs after restart, want 100", n)
	}
	second.svc.Start()
	drain(t, second.svc)
	for _, u := range urls {
		res, err := second.svc.Lookup(ctx, u)
		if err != nil || res.Status != StatusAnalysed {
			t.Fatalf("%s after restart: %+v %v", u, res, err)
		}
	}
}

// TestServiceBurst sends 10,000 distinct unseen pages at once: the queue
// takes what it can hold, the rest get ErrQueueFull (503), every accepted
// page is analysed and memory stays bounded.
func TestServiceBurst(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><head><title>Page %s</title></head><body><article><p>Battery pack review number %s.</p></article></body></html>", r.URL.Path, r.URL.Path)
	})
	base := serve(t, mux).URL
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	const maxQueue = 200
	e := open(t, t.TempDir(), maxQueue, f, fixtureIndex(t), Options{})
	e.svc.Start()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	const n = 10000
	var accepted, full atomic.Int32
	acceptedURLs := make([]bool, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 512) // as many at once as a server's connections would be
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := e.svc.Lookup(context.Background(), fmt.Sprintf("%s/page/%d", base, i))
			switch {
			case errors.Is(err, ErrQueueFull):
				full.Add(1)
			case err != nil:
				t.Error(err)
			case res.Status == StatusPending:
				accepted.Add(1)
				acceptedURLs[i] = true
			}
		})
	}
	wg.Wait()
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	drain(t, e.svc)

	if accepted.Load()+full.Load() != n || full.Load() == 0 || accepted.Load() < maxQueue {
		t.Fatalf("accepted %d, refused %d of %d", accepted.Load(), full.Load(), n)
	}
	for i, ok := range acceptedURLs {
		if !ok {
			continue
		}
		res, err := e.svc.Lookup(context.Background(), fmt.Sprintf("%s/page/%d", base, i))
		if err != nil || res.Status != StatusAnalysed {
			t.Fatalf("accepted page %d: %+v %v", i, res, err)
		}
	}
	grow := int64(peak.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("accepted %d, refused %d, heap grew %d KiB during the burst", accepted.Load(), full.Load(), grow>>10)
	if grow > 256<<20 {
		t.Fatalf("heap grew %d MiB", grow>>20)
	}
}

// TestServiceHostilePagesEndFailed runs every hostile page through the
// service: each ends as a failed page with its reason, served with 200.
func TestServiceHostilePagesEndFailed(t *testing.T) {
	ts := hostile(t)
	// Long enough for /big to be read to its cap on a busy machine; /trickle
	// still times out.
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Timeout: 5 * time.Second})
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{})
	ctx := context.Background()
	want := map[string]string{
		"/loop":         "too many redirects",
		"/to-ftp":       "redirect to a disallowed URL",
		"/bomb":         "page too large",
		"/big":          "page too large",
		"/trickle":      "fetch timed out",
		"/404":          "HTTP status 404",
		"/500":          "HTTP status 500",
		"/doc.pdf":      "not HTML (application/pdf)",
		"/private/page": "robots.txt disallows fetching",
	}
	for p := range want {
		if res, err := e.svc.Lookup(ctx, ts.URL+p); err != nil || res.Status != StatusPending {
			t.Fatalf("%s: %+v %v", p, res, err)
		}
	}
	e.svc.Start()
	drain(t, e.svc)
	for p, reason := range want {
		res, err := e.svc.Lookup(ctx, ts.URL+p)
		if err != nil || res.Status != StatusFailed || res.Reason != reason || res.Text != "" {
			t.Errorf("%s: %+v %v, want failed %q", p, res, err, reason)
		}
	}
	// The Latin-1 page is analysed, its text decoded.
	u := ts.URL + "/latin1"
	e.svc.Lookup(ctx, u)
	drain(t, e.svc)
	if res, err := e.svc.Lookup(ctx, u); err != nil || res.Status != StatusAnalysed || res.Lang != "fr" {
		t.Errorf("latin1: %+v %v", res, err)
	}
}

// TestQueueSiteShare checks that one site cannot take more than its share
// of the queue, counted by registered domain, while other sites still get
// in.
func TestQueueSiteShare(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "adlink.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := OpenBolt(db, 8) // a quarter: 2 per site
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	push := func(u string) error {
		_, err := q.Push(ctx, u, time.Time{}, nil)
		return err
	}
	for _, u := range []string{"https://a.example.co.uk/1", "https://www.a.example.co.uk/2", "http://127.0.0.1:1/x", "http://127.0.0.1:2/y", "https://b.example.org/1"} {
		if err := push(u); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"https://sub.a.example.co.uk/3", "http://127.0.0.1:3/z"} {
		if err := push(u); !errors.Is(err, ErrSiteQueueFull) || !errors.Is(err, ErrQueueFull) {
			t.Fatalf("%s over the site's share: %v", u, err)
		}
	}
	// Pushing a queued page again is no error, share or not.
	if added, err := q.Push(ctx, "https://a.example.co.uk/1", time.Time{}, nil); added || err != nil {
		t.Fatalf("again: %v %v", added, err)
	}
	if err := q.Complete(ctx, "https://a.example.co.uk/1"); err != nil {
		t.Fatal(err)
	}
	if err := push("https://sub.a.example.co.uk/3"); err != nil {
		t.Fatalf("after one is done: %v", err)
	}
}

func TestServiceSweepsOldRecords(t *testing.T) {
	base := reviewServer(t, nil)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	var now atomic.Pointer[time.Time]
	t0 := time.Now()
	now.Store(&t0)
	e := open(t, t.TempDir(), 0, f, fixtureIndex(t), Options{Now: func() time.Time { return *now.Load() }, Retention: 48 * time.Hour})
	ctx := context.Background()
	e.svc.Lookup(ctx, base+"/review")
	e.svc.Start()
	drain(t, e.svc)
	if n := e.svc.Sweep(ctx); n != 0 {
		t.Fatalf("swept %d fresh records", n)
	}
	t1 := t0.Add(49 * time.Hour)
	now.Store(&t1)
	if n := e.svc.Sweep(ctx); n != 2 { // the analysis and its alias
		t.Fatalf("swept %d old records, want 2", n)
	}
	if res, err := e.svc.Lookup(ctx, base+"/review"); err != nil || res.Status != StatusPending {
		t.Fatalf("after the sweep: %+v %v, want pending again", res, err)
	}
	drain(t, e.svc)
}

// TestCanonicalStaysOnTheHost: a page may name a canonical URL on the host
// it was finally fetched from only, and only on the site's domains; one
// on another subdomain would let that page overwrite the other host's
// analysis.
func TestCanonicalStaysOnTheHost(t *testing.T) {
	for _, c := range []struct{ page, final, declared, want string }{
		{"https://blog.example.com/a?x=1", "https://blog.example.com/a?x=1", "https://blog.example.com/a", "https://blog.example.com/a"},
		{"https://evil.example.com/x", "https://evil.example.com/x", "https://www.example.com/", ""},
		{"https://example.com/x", "https://example.com/x", "https://other.org/x", ""},
		{"https://example.com/x", "https://example.com/x", "javascript:alert(1)", ""},
		{"https://example.com/x", "https://example.com/x", "", ""},
		// Redirected: the canonical is checked against where the page was
		// found, not the URL asked for.
		{"https://example.com/go", "https://www.example.com/p", "https://example.com/p", ""},
		{"https://example.com/go", "https://www.example.com/p", "https://www.example.com/p", "https://www.example.com/p"},
		// On the host it came from, but not on the site's domains.
		{"https://example.com/go", "https://other.org/p", "https://other.org/p", ""},
	} {
		within := &siteHosts{sites: [][]string{{"example.com"}}}
		if got := canonicalOf(c.page, c.final, c.declared, within); got != c.want {
			t.Errorf("canonicalOf(%s, %s, %s) = %q, want %q", c.page, c.final, c.declared, got, c.want)
		}
	}
}

// TestServiceRenewsTheHoldOfALongJob: a page that takes several leases to
// fetch stays its worker's, which renews the hold while it waits, so the
// idle workers beside it do not fetch it again.
func TestServiceRenewsTheHoldOfALongJob(t *testing.T) {
	page, err := os.ReadFile("testdata/iphone5-review.html")
	if err != nil {
		t.Fatal(err)
	}
	const lease = time.Second
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(3 * lease) // a slow page, not a wait for work
		w.Write(page)
	})
	base := serve(t, mux).URL
	e := open(t, t.TempDir(), 0, newFetcher(t, FetchOptions{AllowPrivate: true}), fixtureIndex(t), Options{Workers: 4, Lease: lease})
	ctx := context.Background()
	if res, err := e.svc.Lookup(ctx, base+"/slow"); err != nil || res.Status != StatusPending {
		t.Fatalf("%+v %v", res, err)
	}
	e.svc.Start()
	drain(t, e.svc)
	if res, err := e.svc.Lookup(ctx, base+"/slow"); err != nil || res.Status != StatusAnalysed {
		t.Errorf("after the drain: %+v %v", res, err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the page was fetched %d times by 4 workers, want once", n)
	}
}

// failOnce is the bbolt store whose first Complete fails, as a Postgres
// that restarted fails a statement on each connection it had before.
type failOnce struct {
	*Bolt
	failed atomic.Bool
}

func (f *failOnce) Complete(ctx context.Context, url string, recs ...*Record) error {
	if f.failed.CompareAndSwap(false, true) {
		return errors.New("conn closed")
	}
	return f.Bolt.Complete(ctx, url, recs...)
}

// failAlways is a store that refuses every analysis, and says when it was
// first asked to store one.
type failAlways struct {
	*Bolt
	asked chan struct{}
	once  sync.Once
}

func (f *failAlways) Complete(context.Context, string, ...*Record) error {
	f.once.Do(func() { close(f.asked) })
	return errors.New("conn closed")
}

// TestStoppedWhileStoreRefusesReleases: a service stopped while its store
// refuses an analysis hands the job back, so that another worker (another
// replica) may take it at once rather than after the lease, an hour here.
func TestStoppedWhileStoreRefusesReleases(t *testing.T) {
	var hits atomic.Int32
	base := reviewServer(t, &hits)
	e := open(t, t.TempDir(), 0, newFetcher(t, FetchOptions{AllowPrivate: true}), fixtureIndex(t), Options{})
	store := &failAlways{Bolt: e.q, asked: make(chan struct{})}
	svc := NewService(store, newFetcher(t, FetchOptions{AllowPrivate: true}), func() Reducer { return fixtureIndex(t) }, Options{Lease: time.Hour})
	t.Cleanup(svc.Stop)
	pageURL := base + "/review"
	if res, err := svc.Lookup(t.Context(), pageURL); err != nil || res.Status != StatusPending {
		t.Fatalf("first lookup %+v %v, want pending", res, err)
	}
	svc.Start()
	<-store.asked
	svc.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if got, err := e.q.Claim(ctx, time.Minute); err != nil || got != pageURL {
		t.Fatalf("claim after the stop: %q %v, want the job handed back", got, err)
	}
}

// TestStoreFailingOnceFetchesOnce: an analysis the store refuses once is
// stored on the next try, not fetched again when its lease passes.
func TestStoreFailingOnceFetchesOnce(t *testing.T) {
	var hits atomic.Int32
	base := reviewServer(t, &hits)
	e := open(t, t.TempDir(), 0, newFetcher(t, FetchOptions{AllowPrivate: true}), fixtureIndex(t), Options{})
	store := &failOnce{Bolt: e.q}
	svc := NewService(store, newFetcher(t, FetchOptions{AllowPrivate: true}), func() Reducer { return fixtureIndex(t) }, Options{})
	t.Cleanup(svc.Stop)
	ctx := context.Background()
	pageURL := base + "/review"
	if res, err := svc.Lookup(ctx, pageURL); err != nil || res.Status != StatusPending {
		t.Fatalf("first lookup %+v %v, want pending", res, err)
	}
	svc.Start()
	drain(t, svc)
	if !store.failed.Load() {
		t.Fatal("the store never failed")
	}
	if res, err := svc.Lookup(ctx, pageURL); err != nil || res.Status != StatusAnalysed {
		t.Fatalf("after drain %+v %v, want analysed", res, err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("page fetched %d times, want once", n)
	}
}
