package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/internal/testpg"
)

// pageServer serves the demo article at every path but /robots.txt and
// counts the requests for each path. hold, when set, is called before it
// answers a request and may keep the answer back.
type pageServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
	hold func(r *http.Request)
}

func newPageServer(t testing.TB) *pageServer {
	t.Helper()
	article, err := os.ReadFile(filepath.Join("..", "..", "web", "demo", "article.html"))
	if err != nil {
		t.Fatal(err)
	}
	ps := &pageServer{hits: map[string]int{}}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		ps.mu.Lock()
		ps.hits[r.URL.Path]++
		hold := ps.hold
		ps.mu.Unlock()
		if hold != nil {
			hold(r)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(article)
	}))
	t.Cleanup(ps.Close)
	return ps
}

// fetched returns how often each path was requested.
func (ps *pageServer) fetched() map[string]int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[string]int, len(ps.hits))
	for k, v := range ps.hits {
		out[k] = v
	}
	return out
}

// pageReplica is a server on the Postgres database at url with a data
// directory of its own, serving on a loopback listener of its own, that
// may fetch pages on loopback.
type pageReplica struct {
	*App
	base string
}

func newPageReplica(t testing.TB, dbURL string) *pageReplica {
	t.Helper()
	return newPageReplicaWith(t, dbURL, nil)
}

// newPageReplicaWith is newPageReplica with the configuration changed by
// edit, when not nil.
func newPageReplicaWith(t testing.TB, dbURL string, edit func(*config.Config)) *pageReplica {
	t.Helper()
	cfg := testConfig(t)
	cfg.PostgresURL = dbURL // "" keeps the pages in the bbolt file
	cfg.FetchAllowPrivate = true
	cfg.KeyRate, cfg.KeyBurst = 1e9, 1_000_000_000
	cfg.PageRate, cfg.PageBurst = 1e9, 1_000_000_000
	if edit != nil {
		edit(&cfg)
	}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return &pageReplica{App: a, base: srv.URL}
}

// pageLink asks r for the ads of the page at u and returns the status and
// the answer's links.
func (r *pageReplica) pageLink(t testing.TB, u string) (int, []json.RawMessage) {
	t.Helper()
	res, err := http.Get(r.base + "/v2/page/link?api_key=demo&site_id=demo&url=" + url.QueryEscape(u))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct{ Link []json.RawMessage }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("page link of %s: %d, %v", u, res.StatusCode, err)
	}
	return res.StatusCode, body.Link
}

// metric returns the value of the named metric on r's admin handler.
func (r *pageReplica) metric(t testing.TB, name string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return ""
}

// waitAnalysed waits until the page u is no longer queued, as r sees the
// shared queue.
func waitAnalysed(t testing.TB, r *pageReplica, u string) { waitAnalysedOr(t, r, u, nil) }

// waitAnalysedOr is waitAnalysed, with why's account of what the test saw,
// when not nil, in the failure.
func waitAnalysedOr(t testing.TB, r *pageReplica, u string, why func() string) {
	t.Helper()
	c, err := pages.Canonical(u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.Pages.Wait(ctx, c); err != nil {
		seen := ""
		if why != nil {
			seen = "; " + why()
		}
		t.Fatalf("waiting for %s: %v%s", u, err, seen)
	}
}

// TestReplicasShareThePageQueue: a page asked for through replica A is
// queued once in Postgres, fetched once by one of the three replicas, and
// then served with its ads by replica C, which never saw it queued; while
// it is being fetched, every replica's /metrics counts it.
func TestReplicasShareThePageQueue(t *testing.T) {
	dbURL := testpg.New(t)
	ps := newPageServer(t)
	fetching, answer := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ps.hold = func(*http.Request) {
		once.Do(func() { close(fetching) })
		<-answer
	}
	a, b, c := newPageReplica(t, dbURL), newPageReplica(t, dbURL), newPageReplica(t, dbURL)
	page := ps.URL + "/handy-test"

	if status, links := a.pageLink(t, page); status != http.StatusAccepted || len(links) != 0 {
		t.Fatalf("first ask on A: %d with %d links, want 202 pending", status, len(links))
	}
	// Asked again on B and C while it is queued: still the one job.
	for _, r := range []*pageReplica{b, c} {
		if status, _ := r.pageLink(t, page); status != http.StatusAccepted {
			t.Fatalf("ask while queued: %d, want 202", status)
		}
	}
	<-fetching
	for name, r := range map[string]*pageReplica{"A": a, "B": b, "C": c} {
		if got := r.metric(t, "adlink_page_queue_depth"); got != "1" {
			t.Errorf("replica %s: adlink_page_queue_depth %s while the page is fetched, want 1", name, got)
		}
	}
	ps.mu.Lock()
	ps.hold = nil
	ps.mu.Unlock()
	close(answer)
	waitAnalysed(t, c, page)

	status, links := c.pageLink(t, page)
	if status != http.StatusOK || len(links) == 0 {
		t.Fatalf("replica C after the analysis: %d with %d links, want 200 with ads", status, len(links))
	}
	if status, again := b.pageLink(t, page); status != http.StatusOK || len(again) != len(links) {
		t.Errorf("replica B: %d with %d links, want C's %d", status, len(again), len(links))
	}
	if got := ps.fetched(); got["/handy-test"] != 1 || len(got) != 1 {
		t.Errorf("the page server saw %v, want /handy-test fetched once", got)
	}
	if got := b.metric(t, "adlink_page_queue_depth"); got != "0" {
		t.Errorf("adlink_page_queue_depth %s once the page is analysed, want 0", got)
	}
}

// pageJobs says how the page jobs of the database at dbURL are held, for
// a test's account of a page that was never analysed.
func pageJobs(dbURL string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "page jobs unread: " + err.Error()
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT url, coalesce(to_char(held_until - clock_timestamp(), 'HH24:MI:SS'), 'free'), coalesce(holder, 0) FROM page_jobs`)
	if err != nil {
		return "page jobs unread: " + err.Error()
	}
	var jobs []string
	for rows.Next() {
		var u []byte
		var left string
		var holder int64
		if err := rows.Scan(&u, &left, &holder); err != nil {
			return "page jobs unread: " + err.Error()
		}
		jobs = append(jobs, fmt.Sprintf("%s held %s more by %d", u, left, holder))
	}
	return fmt.Sprintf("page jobs %v (%v)", jobs, rows.Err())
}

// pageWorkers is where the page workers of this process are, from their
// stacks.
func pageWorkers() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "pages.(*Service).work") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// TestReplicaStoppedHandsItsPageBack: a replica stopped gracefully while
// it fetches a page releases the job, so another replica analyses it at
// once, though the lease (an hour here) has not passed.
func TestReplicaStoppedHandsItsPageBack(t *testing.T) {
	dbURL := testpg.New(t)
	ps := newPageServer(t)
	// The first request is A's fetch, held until A stops and cuts it
	// short; the others (B's) are answered at once, even while the server
	// has yet to see A's connection gone.
	fetching, aCut := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	ps.hold = func(r *http.Request) {
		if first.CompareAndSwap(false, true) {
			close(fetching)
			<-r.Context().Done()
			close(aCut)
		}
	}
	long := func(t testing.TB) *pageReplica {
		return newPageReplicaWith(t, dbURL, func(c *config.Config) { c.PageLease = time.Hour })
	}
	a := long(t)
	page := ps.URL + "/stopped"
	if status, _ := a.pageLink(t, page); status != http.StatusAccepted {
		t.Fatalf("first ask on A: %d, want 202", status)
	}
	<-fetching
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := long(t)
	waitAnalysedOr(t, b, page, func() string {
		cut := "A's fetch not yet seen cut short by the page's server"
		select {
		case <-aCut:
			cut = "A's fetch seen cut short"
		default:
		}
		status, _ := b.pageLink(t, page)
		return fmt.Sprintf("%s; fetches %v; replica B answers %d; %s\npage workers:\n%s", cut, ps.fetched(), status, pageJobs(dbURL), pageWorkers())
	})
	if status, links := b.pageLink(t, page); status != http.StatusOK || len(links) == 0 {
		t.Errorf("replica B: %d with %d links, want 200 with ads", status, len(links))
	}
	if got := ps.fetched()["/stopped"]; got != 2 {
		t.Errorf("the page was fetched %d times, want twice: A's fetch cut short, then B's", got)
	}
}

// manyPages is how many unseen pages TestReplicasAnalyseEachPageOnce
// spreads over three replicas; BenchmarkPagesOnReplicas takes 10,000.
const manyPages = 1000

// TestReplicasAnalyseEachPageOnce: unseen pages asked for on three
// replicas at once, each page on one of them, are each fetched exactly
// once, and every replica then serves each page's analysis.
func TestReplicasAnalyseEachPageOnce(t *testing.T) {
	n := manyPages
	if testing.Short() {
		n = 300
	}
	res := analyseOnReplicas(t, n, 3, testpg.New(t))
	if res.twice != 0 || res.never != 0 {
		t.Errorf("of %d pages over three replicas, %d were fetched more than once and %d never", n, res.twice, res.never)
	}
}

// replicaRun is what analyseOnReplicas found.
type replicaRun struct {
	twice, never int // pages fetched more than once, and not at all
	elapsed      time.Duration
}

// analyseOnReplicas asks k replicas on the database at dbURL (none: one
// replica on its bbolt file) for n unseen pages, page i on replica i%k, as
// publishers' readers would, four to a replica (a page the site's share of
// the queue refuses is asked for again once the queue has drained), waits
// until every page is analysed and counts the fetches of each.
func analyseOnReplicas(tb testing.TB, n, k int, dbURL string) replicaRun {
	tb.Helper()
	ps := newPageServer(tb)
	var replicas []*pageReplica
	for range k {
		replicas = append(replicas, newPageReplica(tb, dbURL))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	todo := make([][]string, len(replicas))
	for i := range n {
		todo[i%len(replicas)] = append(todo[i%len(replicas)], fmt.Sprintf("%s/p/%d", ps.URL, i))
	}
	for left := n; left > 0; {
		var mu sync.Mutex
		var wg sync.WaitGroup
		refused := make([][]string, len(replicas))
		// Readers on four connections to each replica.
		const readers = 4
		for i, r := range replicas {
			for g := range readers {
				wg.Go(func() {
					for k := g; k < len(todo[i]); k += readers {
						u := todo[i][k]
						_, err := r.Pages.Lookup(ctx, u)
						mu.Lock()
						switch {
						case errors.Is(err, pages.ErrQueueFull):
							refused[i] = append(refused[i], u)
						case err != nil:
							tb.Errorf("lookup %s on replica %d: %v", u, i, err)
						}
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		if tb.Failed() {
			return replicaRun{}
		}
		if err := replicas[0].Pages.Drain(ctx); err != nil {
			tb.Fatalf("draining the shared queue: %v", err)
		}
		todo, left = refused, 0
		for _, r := range refused {
			left += len(r)
		}
	}
	elapsed := time.Since(start)
	got := ps.fetched()
	var run replicaRun
	run.elapsed = elapsed
	for i := range n {
		switch got[fmt.Sprintf("/p/%d", i)] {
		case 0:
			run.never++
		case 1:
		default:
			run.twice++
		}
	}
	// Every replica serves every analysis, whoever made it.
	for i := 0; i < n; i += max(1, n/50) {
		u := fmt.Sprintf("%s/p/%d", ps.URL, i)
		for j, r := range replicas {
			res, err := r.Pages.Lookup(ctx, u)
			if err != nil || res.Status != pages.StatusAnalysed {
				tb.Errorf("replica %d on %s: %+v, %v; want it analysed", j, u, res, err)
			}
		}
	}
	return run
}

// BenchmarkPagesOnReplicas: 10,000 unseen pages spread over three
// replicas on one Postgres database are each fetched exactly once
// (analysed-twice, want 0), and how fast the three analyse them together
// (pages/s) beside one replica on its bbolt file, the same pages.
func BenchmarkPagesOnReplicas(b *testing.B) {
	const n = 10000
	for range b.N {
		shared := analyseOnReplicas(b, n, 3, testpg.New(b))
		alone := analyseOnReplicas(b, n, 1, "")
		b.ReportMetric(n, "pages")
		b.ReportMetric(float64(shared.twice), "analysed-twice")
		b.ReportMetric(float64(shared.never), "never-analysed")
		b.ReportMetric(n/shared.elapsed.Seconds(), "pages/s")
		b.ReportMetric(n/alone.elapsed.Seconds(), "bolt-one-replica-pages/s")
		b.ReportMetric(alone.elapsed.Seconds()/shared.elapsed.Seconds(), "ratio")
		if alone.twice != 0 || alone.never != 0 {
			b.Errorf("one replica on bbolt: %d pages fetched twice, %d never", alone.twice, alone.never)
		}
	}
}
