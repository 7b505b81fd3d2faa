package pages

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestServiceSurvivesKill queues 100 pages in a child process, kills it
// with SIGKILL once every first request was answered pending, and checks
// that a new service on the same bbolt file analyses all 100.
func TestServiceSurvivesKill(t *testing.T) {
	if os.Getenv("ADLINK_PAGES_CHILD") != "" {
		t.Skip("child mode runs in TestPagesChild")
	}
	page, err := os.ReadFile("testdata/iphone5-review.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) { w.Write(page) })
	base := serve(t, mux).URL
	dir := t.TempDir()

	cmd := exec.Command(os.Args[0], "-test.run=^TestPagesChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ADLINK_PAGES_CHILD="+dir, "ADLINK_PAGES_BASE="+base)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	queued := false
	for sc.Scan() {
		if sc.Text() == "queued 100" {
			queued = true
			break
		}
	}
	cmd.Process.Kill() // no shutdown, no deferred Close
	cmd.Wait()
	if !queued {
		t.Fatal("child did not queue the pages")
	}

	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	e := open(t, dir, 0, f, fixtureIndex(t), Options{})
	ctx := context.Background()
	if n, _ := e.q.Len(ctx); n != 100 {
		t.Fatalf("%d jobs survived the kill, want 100", n)
	}
	e.svc.Start()
	drain(t, e.svc)
	for i := range 100 {
		u := fmt.Sprintf("%s/p/%d", base, i)
		if res, err := e.svc.Lookup(ctx, u); err != nil || res.Status != StatusAnalysed {
			t.Fatalf("%s: %+v %v", u, res, err)
		}
	}
}

// TestPagesChild is the process TestServiceSurvivesKill kills: it answers
// 100 first requests (pending), says so, and waits to be killed with its
// workers unable to finish (the page server is not reachable from them).
func TestPagesChild(t *testing.T) {
	dir := os.Getenv("ADLINK_PAGES_CHILD")
	if dir == "" {
		t.Skip("run by TestServiceSurvivesKill")
	}
	db, err := bolt.Open(filepath.Join(dir, "adlink.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q, err := OpenBolt(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	block := &mockFetcher{FetchFn: func(ctx context.Context, _ string) (*Document, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	svc := NewService(q, block, nil, Options{JobTimeout: time.Hour})
	svc.Start()
	base := os.Getenv("ADLINK_PAGES_BASE")
	for i := range 100 {
		res, err := svc.Lookup(context.Background(), fmt.Sprintf("%s/p/%d", base, i))
		if err != nil || res.Status != StatusPending {
			t.Fatalf("%+v %v", res, err)
		}
	}
	fmt.Println("queued 100")
	select {} // killed here
}
