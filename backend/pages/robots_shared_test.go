package pages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFetchRobotsOutlivesItsFirstPage: two pages of one host wait for its
// robots.txt, which the first page's fetch started. That page gives up
// (its job ended); the robots.txt read is the host's, not that page's, so
// it goes on, and the second page gets its verdict and is fetched, with
// robots.txt read once.
func TestFetchRobotsOutlivesItsFirstPage(t *testing.T) {
	var robots atomic.Int32
	asked := make(chan struct{}, 2)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		robots.Add(1)
		asked <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})

	firstCtx, giveUp := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := f.Fetch(firstCtx, ts.URL+"/first", nil)
		first <- err
	}()
	<-asked
	type result struct {
		doc *Document
		err error
	}
	second := make(chan result, 1)
	go func() {
		doc, err := f.Fetch(context.Background(), ts.URL+"/second", nil)
		second <- result{doc, err}
	}()
	giveUp()
	if err := <-first; err == nil {
		t.Fatal("the page that gave up was fetched")
	}
	close(release)
	got := <-second
	if got.err != nil || !strings.Contains(got.doc.HTML, "Hello world.") {
		t.Fatalf("second page of the host = %v, %v; want it fetched", got.doc, got.err)
	}
	if n := robots.Load(); n != 1 {
		t.Fatalf("robots.txt read %d times, want once for the host", n)
	}
}

// TestFetchRobotsTimeoutDisallowsBriefly: a robots.txt that does not come
// within its own bound is unreachable (RFC 9309): the host's pages are
// disallowed for a bounded time, from the cache, and then it is read
// again.
func TestFetchRobotsTimeoutDisallowsBriefly(t *testing.T) {
	var robots, slow atomic.Int32
	slow.Store(1)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		robots.Add(1)
		if slow.Load() == 1 {
			<-r.Context().Done()
			return
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true, robotsTimeout: 50 * time.Millisecond})
	now := time.Now()
	f.now = func() time.Time { return now }
	for range 2 { // the second from the cache
		_, err := f.Fetch(context.Background(), ts.URL+"/page", nil)
		var fe *FetchError
		if !errors.Is(err, ErrRobots) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
			t.Fatalf("Fetch under a robots.txt that never comes = %v, want robots.txt unavailable", err)
		}
	}
	if n := robots.Load(); n != 1 {
		t.Fatalf("robots.txt read %d times within the disallow, want once", n)
	}
	slow.Store(0)
	now = now.Add(unreachableRobotsTTL + time.Second)
	if doc, err := f.Fetch(context.Background(), ts.URL+"/page", nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("Fetch once robots.txt answers = %v, %v", doc, err)
	}
}

// TestFetcherCloseEndsRobotsReads: Close ends a robots.txt read under way,
// whose waiting page then fails, and waits for it; a fetch after Close
// starts none.
func TestFetcherCloseEndsRobotsReads(t *testing.T) {
	var robots atomic.Int32
	asked := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		robots.Add(1)
		asked <- struct{}{}
		<-r.Context().Done()
	})
	ts := serve(t, mux)
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	waiting := make(chan error, 1)
	go func() {
		_, err := f.Fetch(context.Background(), ts.URL+"/page", nil)
		waiting <- err
	}()
	<-asked
	f.Close()
	if err := <-waiting; err == nil {
		t.Fatal("a page whose robots.txt read Close ended was fetched")
	}
	if _, err := f.Fetch(context.Background(), ts.URL+"/other", nil); err == nil {
		t.Fatal("a fetch after Close succeeded")
	}
	if n := robots.Load(); n != 1 {
		t.Fatalf("robots.txt asked for %d times, want once: none after Close", n)
	}
}

// TestFetchRobotsPanicFailsItsPageOnly: a robots.txt read runs in a
// goroutine of its own, where a panic (in the parser of what a host sent)
// would end the process. It fails the page waiting for it instead, is
// not cached, and the host's next page reads robots.txt again.
func TestFetchRobotsPanicFailsItsPageOnly(t *testing.T) {
	mux := http.NewServeMux()
	robots := allowAllRobots(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	// The clock is first asked for once the read is done: that read panics.
	var calls atomic.Int32
	f.now = func() time.Time {
		if calls.Add(1) == 1 {
			panic("reading robots.txt")
		}
		return time.Now()
	}
	_, err := f.Fetch(context.Background(), ts.URL+"/first", nil)
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != "robots.txt could not be read" {
		t.Fatalf("Fetch whose robots.txt read panicked = %v, want robots.txt could not be read", err)
	}
	if doc, err := f.Fetch(context.Background(), ts.URL+"/second", nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("the host's next page = %v, %v; want it fetched", doc, err)
	}
	if n := robots.Load(); n != 2 {
		t.Fatalf("robots.txt read %d times, want twice: the read that panicked is not cached", n)
	}
}
