package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/pages"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// servers opens n page stores on one database, each over a pool of its
// own, as n servers would.
func servers(t *testing.T, n, maxQueue, perSite int) []*pgstore.Pages {
	t.Helper()
	url := testpg.New(t)
	out := make([]*pgstore.Pages, n)
	for i := range out {
		db, err := pgstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		out[i] = db.Pages(maxQueue, perSite)
	}
	return out
}

// One site pushing many pages at once through three servers gets its
// share of the queue and not one job more, and a full queue refuses the
// rest: the bounds hold across servers, not per server.
func TestPagesBoundsHoldAcrossServers(t *testing.T) {
	const perSite, maxQueue = 10, 25
	s := servers(t, 3, maxQueue, perSite)
	var added, siteFull, queueFull atomic.Int32
	var wg sync.WaitGroup
	push := func(i int, u string) {
		ok, err := s[i%len(s)].Push(t.Context(), u, time.Time{}, nil)
		switch {
		case errors.Is(err, pages.ErrSiteQueueFull):
			siteFull.Add(1)
		case errors.Is(err, pages.ErrQueueFull):
			queueFull.Add(1)
		case err != nil:
			t.Error(err)
		case ok:
			added.Add(1)
		}
	}
	for i := range 60 {
		wg.Go(func() { push(i, fmt.Sprintf("https://www.flood.example/%d", i)) })
	}
	wg.Wait()
	if added.Load() != perSite || siteFull.Load() != 60-perSite {
		t.Fatalf("one site's 60 pages at once over three servers: %d queued, %d refused for the site; want %d and %d",
			added.Load(), siteFull.Load(), perSite, 60-perSite)
	}
	// Other sites fill the rest of the queue, and not past it.
	added.Store(0)
	for i := range 60 {
		wg.Go(func() { push(i, fmt.Sprintf("https://site%d.example/", i)) })
	}
	wg.Wait()
	if added.Load() != maxQueue-perSite || queueFull.Load() != 60-(maxQueue-perSite) {
		t.Errorf("60 sites' pages at once into the rest of the queue: %d queued, %d refused; want %d and %d",
			added.Load(), queueFull.Load(), maxQueue-perSite, 60-(maxQueue-perSite))
	}
	if n, err := s[0].Len(t.Context()); n != maxQueue || err != nil {
		t.Errorf("Len = %d, %v; want %d", n, err, maxQueue)
	}
}

// A URL or a record with bytes Postgres refuses in text (NUL, invalid
// UTF-8), as a hostile page or request could bring, is no error: the job
// is queued, claimed and completed, and its record read back under the
// URL as given.
func TestPagesKeepAnyBytes(t *testing.T) {
	s := servers(t, 1, 0, 0)[0]
	ctx := t.Context()
	u := "https://s.example/\x00\xff?q=\xc3("
	if added, err := s.Push(ctx, u, time.Time{}, nil); !added || err != nil {
		t.Fatalf("Push = %v, %v", added, err)
	}
	got, err := s.Claim(ctx, time.Minute)
	if err != nil || got != u {
		t.Fatalf("Claim = %q, %v; want %q", got, err, u)
	}
	rec := &pages.Record{URL: u, Title: "t\x00\xff", Text: "Apple\x00", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.Complete(ctx, u, rec); err != nil {
		t.Fatal(err)
	}
	back, err := s.Get(ctx, u)
	// The record is its JSON, as bbolt keeps it: invalid UTF-8 in its
	// fields reads back as U+FFFD; the key is exact.
	if err != nil || back == nil || back.Title != "t\x00\uFFFD" || back.Text != "Apple\x00" {
		t.Fatalf("Get = %+v, %v", back, err)
	}
	if q, err := s.Queued(ctx, u); q || err != nil {
		t.Errorf("Queued after Complete = %v, %v", q, err)
	}
}

// A server that took a job and outlived its lease cannot renew or release
// the hold another server took after it: the job stays the second's.
func TestPagesHoldIsTheLatestClaims(t *testing.T) {
	s := servers(t, 2, 0, 0)
	ctx := t.Context()
	u := "https://s.example/slow"
	if _, err := s[0].Push(ctx, u, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s[0].Claim(ctx, 50*time.Millisecond); got != u || err != nil {
		t.Fatalf("first Claim = %q, %v", got, err)
	}
	if got, err := s[1].Claim(ctx, time.Hour); got != u || err != nil {
		t.Fatalf("Claim once the lease passed = %q, %v", got, err)
	}
	if held, err := s[0].Extend(ctx, u, time.Hour); held || err != nil {
		t.Errorf("Extend by the first server = %v, %v; want false, the hold is the second's", held, err)
	}
	if err := s[0].Release(ctx, u); err != nil {
		t.Fatal(err)
	}
	claimCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if got, err := s[0].Claim(claimCtx, time.Hour); err == nil {
		t.Fatalf("Claim after the first server's release = %q; want the job still held by the second", got)
	}
	if held, err := s[1].Extend(ctx, u, time.Hour); !held || err != nil {
		t.Errorf("Extend by the holder = %v, %v; want held", held, err)
	}
}

// A claim is not cut short once asked: a server that stops while its
// claim waits still gets the job the claim took, to hand it back, rather
// than leave it held for a whole lease with no one to fetch it.
func TestPagesClaimIsNotCutShort(t *testing.T) {
	url := testpg.New(t)
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := db.Pages(0, 0)
	u := "https://s.example/stopping"
	if _, err := s.Push(t.Context(), u, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	// The claim's statement waits behind a lock while its server stops.
	blocker, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(context.Background())
	tx, err := blocker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `LOCK TABLE page_jobs IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	type claimed struct {
		url string
		err error
	}
	got := make(chan claimed, 1)
	go func() {
		u, err := s.Claim(ctx, time.Hour)
		got <- claimed{u, err}
	}()
	// Until the claim waits behind the lock, as seen from outside the
	// blocker's transaction: within one, pg_stat_activity is a snapshot of
	// its first read, so a first look before the claim began never saw it
	// wait. A claim that came back without waiting fails the test with
	// what it got, not hangs it.
	watcher, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(context.Background())
	for waiting := false; !waiting; {
		select {
		case c := <-got:
			t.Fatalf("the claim came back before it waited behind the lock: %q, %v", c.url, c.err)
		default:
		}
		if err := watcher.QueryRow(t.Context(), `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE page_jobs%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	time.Sleep(50 * time.Millisecond) // the stop reaches the claim first
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := <-got
	if c.url != u || c.err != nil {
		t.Fatalf("a claim whose server stopped while it waited = %q, %v; want the job it took", c.url, c.err)
	}
	if err := s.Release(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Claim(t.Context(), time.Hour); again != u || err != nil {
		t.Errorf("Claim after the stopped server's release = %q, %v; want the job free", again, err)
	}
}
