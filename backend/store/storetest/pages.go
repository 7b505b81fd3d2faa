package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/pages"
)

// QueueBounds are the queue bounds a page store is opened with: at most
// Max jobs, and at most PerSite jobs of one site (pages.SiteKey).
type QueueBounds struct {
	Max, PerSite int
}

// roomy are the bounds of every case but the one that tests them.
var roomy = QueueBounds{Max: 1000, PerSite: 1000}

// hour is a lease that does not end while a case runs.
const hour = time.Hour

// Pages runs the contract of pages.Store against the stores fresh opens.
// fresh returns an Opener over a new, empty backing whose stores have the
// queue bounds b.
func Pages(t *testing.T, fresh func(t *testing.T, b QueueBounds) Opener[pages.Store]) {
	t.Helper()
	start := func(t *testing.T) pages.Store {
		s, _ := open(t, fresh(t, roomy))
		return s
	}

	t.Run("GetMissing", func(t *testing.T) {
		s := start(t)
		if rec, err := s.Get(t.Context(), "https://s.example/none"); rec != nil || err != nil {
			t.Fatalf("Get of an unknown page = %+v, %v; want nil, nil", rec, err)
		}
	})

	t.Run("CompleteStoresRecords", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		page := &pages.Record{URL: "https://s.example/canonical", Title: "Apple iPhone 5", Text: "Apple\niPhone 5",
			Lang: "en", At: at}
		alias := &pages.Record{URL: "https://s.example/a?id=1", Alias: page.URL, At: at}
		failed := &pages.Record{URL: "https://s.example/gone", Failed: true, Reason: "HTTP status 404", At: at,
			Attempts: 2, RetryAt: at.Add(10 * time.Minute)}
		// Not queued: Complete stores the records all the same.
		if err := s.Complete(ctx, alias.URL, page, alias); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, failed.URL, failed); err != nil {
			t.Fatal(err)
		}
		for _, want := range []*pages.Record{page, alias, failed} {
			checkRecord(t, s, want)
		}
		again := *page
		again.Text, again.At = "Apple", at.Add(time.Hour)
		if err := s.Complete(ctx, again.URL, &again); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, &again)
		if err := s.Complete(ctx, "https://s.example/nothing"); err != nil {
			t.Errorf("Complete of no job and no records: %v", err)
		}
	})

	// An alias's analysis (Source set) is stored under its canonical URL
	// only while no record of the canonical page's own is there, so an
	// alias cannot replace what the page's own fetch stored, even when
	// the two jobs finish in either order.
	t.Run("CompleteKeepsOwnRecords", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		byAlias := &pages.Record{URL: "https://s.example/new", Source: "https://s.example/new?r=1", Title: "Alias", At: at}
		if err := s.Complete(ctx, byAlias.Source, byAlias); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, byAlias) // nothing there: stored
		byAlias2 := *byAlias
		byAlias2.Source, byAlias2.Title = "https://s.example/new?r=2", "Alias 2"
		if err := s.Complete(ctx, byAlias2.Source, &byAlias2); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, &byAlias2) // an alias's record: replaced
		own := &pages.Record{URL: byAlias.URL, Title: "Own", At: at.Add(time.Minute)}
		if err := s.Complete(ctx, own.URL, own); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, own) // the page's own fetch replaces an alias's
		hijack := &pages.Record{URL: own.URL, Source: "https://s.example/evil", Title: "Hijack", At: at.Add(time.Hour)}
		alias := &pages.Record{URL: hijack.Source, Alias: own.URL, At: hijack.At}
		if err := s.Complete(ctx, hijack.Source, hijack, alias); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, own)   // kept
		checkRecord(t, s, alias) // the rest of the step is stored
		failed := &pages.Record{URL: "https://s.example/gone", Failed: true, Reason: "HTTP status 404", At: at}
		if err := s.Complete(ctx, failed.URL, failed); err != nil {
			t.Fatal(err)
		}
		over := &pages.Record{URL: failed.URL, Source: "https://s.example/gone?x", Title: "Over", At: at}
		if err := s.Complete(ctx, over.Source, over); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, failed) // a failure of its own is its own too
	})

	t.Run("PushDeduplicates", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		u := "https://s.example/p"
		if added, err := s.Push(ctx, u, time.Time{}, nil); !added || err != nil {
			t.Fatalf("first Push = %v, %v; want added", added, err)
		}
		if added, err := s.Push(ctx, u, time.Time{}, nil); added || err != nil {
			t.Fatalf("second Push = %v, %v; want not added, no error", added, err)
		}
		checkQueue(t, s, 1, u)
		if q, err := s.Queued(ctx, "https://s.example/other"); q || err != nil {
			t.Errorf("Queued of a page never pushed = %v, %v", q, err)
		}
		// A held job is still queued: pushing it adds nothing.
		if got := claim(t, s, hour); got != u {
			t.Fatalf("Claim = %s, want %s", got, u)
		}
		if added, err := s.Push(ctx, u, time.Time{}, nil); added || err != nil {
			t.Fatalf("Push of a held job = %v, %v; want not added", added, err)
		}
		checkQueue(t, s, 1, u)
	})

	t.Run("PushAdmit", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		var calls atomic.Int32
		admit := func() error { calls.Add(1); return nil }
		u := "https://s.example/new"
		if added, err := s.Push(ctx, u, time.Time{}, admit); !added || err != nil || calls.Load() != 1 {
			t.Fatalf("Push = %v, %v with %d admit calls; want added after one", added, err, calls.Load())
		}
		if added, err := s.Push(ctx, u, time.Time{}, admit); added || err != nil || calls.Load() != 1 {
			t.Fatalf("Push of a queued page = %v, %v with %d admit calls; want no call", added, err, calls.Load())
		}
		refused := errors.New("refused")
		if added, err := s.Push(ctx, "https://s.example/refused", time.Time{}, func() error { return refused }); added || err != refused {
			t.Fatalf("refused Push = %v, %v; want admit's error as it is", added, err)
		}
		checkQueue(t, s, 1, u)
		if q, _ := s.Queued(ctx, "https://s.example/refused"); q {
			t.Error("a page admit refused was queued")
		}

		// Many first pushes of one page at once: one job, one admit call.
		calls.Store(0)
		var added atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				ok, err := s.Push(ctx, "https://s.example/hot", time.Time{}, admit)
				if err != nil {
					t.Error(err)
				}
				if ok {
					added.Add(1)
				}
			})
		}
		wg.Wait()
		if added.Load() != 1 || calls.Load() != 1 {
			t.Errorf("50 concurrent Pushes of one page: %d added, %d admit calls; want 1 and 1", added.Load(), calls.Load())
		}
	})

	t.Run("Bounds", func(t *testing.T) {
		s, _ := open(t, fresh(t, QueueBounds{Max: 4, PerSite: 2}))
		ctx := t.Context()
		admitted := 0
		admit := func() error { admitted++; return nil }
		for _, u := range []string{"https://a.example.co.uk/1", "https://www.a.example.co.uk/2", "http://127.0.0.1:1/x"} {
			if _, err := s.Push(ctx, u, time.Time{}, nil); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
		}
		// a.example.co.uk is one site, its subdomains included.
		if _, err := s.Push(ctx, "https://sub.a.example.co.uk/3", time.Time{}, admit); !errors.Is(err, pages.ErrSiteQueueFull) || !errors.Is(err, pages.ErrQueueFull) {
			t.Fatalf("over the site's share: %v, want ErrSiteQueueFull", err)
		}
		if _, err := s.Push(ctx, "https://b.example.org/1", time.Time{}, nil); err != nil {
			t.Fatal(err)
		}
		_, err := s.Push(ctx, "https://c.example.net/1", time.Time{}, admit)
		if !errors.Is(err, pages.ErrQueueFull) || errors.Is(err, pages.ErrSiteQueueFull) {
			t.Fatalf("over the queue's bound: %v, want ErrQueueFull only", err)
		}
		if admitted != 0 {
			t.Errorf("admit called %d times for pages over a bound", admitted)
		}
		if added, err := s.Push(ctx, "https://a.example.co.uk/1", time.Time{}, nil); added || err != nil {
			t.Fatalf("Push of a queued page into a full queue = %v, %v; want no error", added, err)
		}
		checkQueue(t, s, 4, "https://a.example.co.uk/1", "https://www.a.example.co.uk/2", "http://127.0.0.1:1/x", "https://b.example.org/1")
		if err := s.Complete(ctx, "https://a.example.co.uk/1"); err != nil {
			t.Fatal(err)
		}
		if added, err := s.Push(ctx, "https://sub.a.example.co.uk/3", time.Time{}, nil); !added || err != nil {
			t.Fatalf("after one of the site's jobs is done: %v, %v", added, err)
		}
	})

	t.Run("ClaimOrderAndRelease", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		a, b, c := "https://s.example/a", "https://s.example/b", "https://s.example/c"
		push(t, s, a, b, c)
		for _, want := range []string{a, b} {
			if got := claim(t, s, hour); got != want {
				t.Fatalf("Claim = %s, want %s (oldest first)", got, want)
			}
		}
		if err := s.Release(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got := claim(t, s, hour); got != a {
			t.Fatalf("Claim after releasing %s = %s", a, got)
		}
		if got := claim(t, s, hour); got != c {
			t.Fatalf("Claim = %s, want %s", got, c)
		}
		// Every job is held: Claim waits until ctx ends.
		if u, err := s.Claim(within(t, 50*time.Millisecond), hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Claim with every job held = %q, %v; want the deadline", u, err)
		}
		checkQueue(t, s, 3, a, b, c)
		if err := s.Release(ctx, "https://s.example/never"); err != nil {
			t.Errorf("Release of a job not queued: %v", err)
		}
	})

	t.Run("ClaimWaitsForPush", func(t *testing.T) {
		s := start(t)
		got := make(chan string, 1)
		ctx := within(t, 30*time.Second)
		go func() {
			u, err := s.Claim(ctx, hour)
			if err != nil {
				t.Error(err)
			}
			got <- u
		}()
		push(t, s, "https://s.example/late")
		if u := <-got; u != "https://s.example/late" {
			t.Fatalf("waiting Claim = %q", u)
		}
	})

	t.Run("ConcurrentClaimsHoldOnce", func(t *testing.T) {
		s := start(t)
		const n = 20
		urls := make([]string, n)
		for i := range urls {
			urls[i] = fmt.Sprintf("https://s.example/%d", i)
		}
		push(t, s, urls...)
		var mu sync.Mutex
		var got []string
		var wg sync.WaitGroup
		ctx := within(t, 30*time.Second)
		for range n / 2 {
			wg.Go(func() {
				for range 2 {
					u, err := s.Claim(ctx, hour)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					got = append(got, u)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(got)
		want := slices.Clone(urls)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%d concurrent Claims of %d jobs returned %q", n, n, got)
		}
	})

	t.Run("LeaseEnds", func(t *testing.T) {
		s := start(t)
		u := "https://s.example/slow"
		push(t, s, u)
		const lease = 100 * time.Millisecond
		held := time.Now()
		if got := claim(t, s, lease); got != u {
			t.Fatalf("Claim = %s", got)
		}
		// Once the lease has passed, another worker takes the job.
		if got := claim(t, s, hour); got != u {
			t.Fatalf("Claim after the lease = %s", got)
		}
		if d := time.Since(held); d < lease {
			t.Errorf("the job was claimed again after %v, within its %v lease", d, lease)
		}
	})

	// A worker keeps its job past the lease it claimed it with by
	// extending the hold; a hold that ended cannot be extended.
	t.Run("Extend", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		u, done, free := "https://s.example/long", "https://s.example/done", "https://s.example/free"
		push(t, s, u, done, free)
		const lease = 100 * time.Millisecond
		if got := claim(t, s, lease); got != u {
			t.Fatalf("Claim = %s", got)
		}
		if held, err := s.Extend(ctx, u, hour); !held || err != nil {
			t.Fatalf("Extend of a held job = %v, %v; want held", held, err)
		}
		if got := claim(t, s, hour); got != done {
			t.Fatalf("Claim = %s, want %s", got, done)
		}
		if got := claim(t, s, hour); got != free {
			t.Fatalf("Claim = %s, want %s", got, free)
		}
		// Well past the lease u was claimed with, it is still held.
		if got, err := s.Claim(within(t, 3*lease), hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Claim with every job held, one extended = %q, %v; want the deadline", got, err)
		}
		if err := s.Complete(ctx, done); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, free); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{done, free, "https://s.example/never"} {
			if held, err := s.Extend(ctx, v, hour); held || err != nil {
				t.Errorf("Extend of %s, not held = %v, %v; want false", v, held, err)
			}
		}
		if got := claim(t, s, hour); got != free {
			t.Fatalf("Claim after the release = %s, want %s", got, free)
		}
		checkQueue(t, s, 2, u, free)
	})

	t.Run("CompleteRemovesJob", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		u, other := "https://s.example/done", "https://s.example/waiting"
		push(t, s, u, other)
		if got := claim(t, s, hour); got != u {
			t.Fatalf("Claim = %s", got)
		}
		rec := &pages.Record{URL: u, Title: "t", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		if err := s.Complete(ctx, u, rec); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, s, rec)
		checkQueue(t, s, 1, other)
		if q, _ := s.Queued(ctx, u); q {
			t.Error("a completed job is still queued")
		}
		// A push by a lookup that read no record, or an older one, before
		// the job completed is not a new job: the page was just analysed.
		if added, err := s.Push(ctx, u, time.Time{}, nil); added || err != nil {
			t.Fatalf("Push after Complete of a lookup that found no record = %v, %v; want not added", added, err)
		}
		if added, err := s.Push(ctx, u, rec.At.Add(-time.Nanosecond), nil); added || err != nil {
			t.Fatalf("Push after Complete of a lookup that read an older record = %v, %v; want not added", added, err)
		}
		// Done, it may be queued again, as a new job, by one that read it.
		if added, err := s.Push(ctx, u, rec.At, nil); !added || err != nil {
			t.Fatalf("Push after Complete of a lookup that read its record = %v, %v; want added", added, err)
		}
	})

	t.Run("Oldest", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		if _, ok, err := s.Oldest(ctx); ok || err != nil {
			t.Fatalf("Oldest of an empty queue: ok %v, %v", ok, err)
		}
		before := time.Now()
		push(t, s, "https://s.example/1")
		after := time.Now()
		push(t, s, "https://s.example/2")
		checkOldest(t, s, before, after)
		if err := s.Complete(ctx, "https://s.example/1"); err != nil {
			t.Fatal(err)
		}
		checkOldest(t, s, after, time.Now())
		if err := s.Complete(ctx, "https://s.example/2"); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Oldest(ctx); ok || err != nil {
			t.Fatalf("Oldest after every job is done: ok %v, %v", ok, err)
		}
	})

	t.Run("Sweep", func(t *testing.T) {
		s := start(t)
		ctx := t.Context()
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		old := &pages.Record{URL: "https://s.example/old", At: now.Add(-49 * time.Hour)}
		alias := &pages.Record{URL: "https://s.example/old?a", Alias: old.URL, At: now.Add(-48 * time.Hour)}
		fresh := &pages.Record{URL: "https://s.example/fresh", At: now}
		if err := s.Complete(ctx, "https://s.example/none", old, alias, fresh); err != nil {
			t.Fatal(err)
		}
		// Queued again by a lookup that read the old record.
		if added, err := s.Push(ctx, old.URL, old.At, nil); !added || err != nil {
			t.Fatalf("Push %s = %v, %v; want added", old.URL, added, err)
		}
		cutoff := now.Add(-24 * time.Hour)
		if n, err := s.Sweep(ctx, cutoff, 1); n != 1 || err != nil {
			t.Fatalf("Sweep at most 1 = %d, %v", n, err)
		}
		if n, err := s.Sweep(ctx, cutoff, 10); n != 1 || err != nil {
			t.Fatalf("second Sweep = %d, %v; want the other old record", n, err)
		}
		if n, err := s.Sweep(ctx, cutoff, 10); n != 0 || err != nil {
			t.Fatalf("third Sweep = %d, %v; want nothing left", n, err)
		}
		for _, u := range []string{old.URL, alias.URL} {
			if rec, err := s.Get(ctx, u); rec != nil || err != nil {
				t.Errorf("%s after the sweep: %+v, %v", u, rec, err)
			}
		}
		checkRecord(t, s, fresh)
		checkQueue(t, s, 1, old.URL)
	})

	t.Run("Reopen", func(t *testing.T) {
		opener := fresh(t, roomy)
		s, closeStore := open(t, opener)
		ctx := t.Context()
		a, b, c := "https://s.example/a", "https://s.example/b", "https://s.example/c"
		push(t, s, a, b, c)
		const lease = 200 * time.Millisecond
		if got := claim(t, s, lease); got != a {
			t.Fatalf("Claim = %s", got)
		}
		rec := &pages.Record{URL: b, Title: "kept", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		if err := s.Complete(ctx, b, rec); err != nil {
			t.Fatal(err)
		}
		closeStore()

		s, _ = open(t, opener)
		checkRecord(t, s, rec)
		checkQueue(t, s, 2, a, c)
		if added, err := s.Push(ctx, a, time.Time{}, nil); added || err != nil {
			t.Fatalf("Push of a job queued before the reopen = %v, %v", added, err)
		}
		if _, ok, err := s.Oldest(ctx); !ok || err != nil {
			t.Fatalf("Oldest after reopen: ok %v, %v", ok, err)
		}
		// The hold did not survive: both jobs are claimed, a by its lease at
		// the latest.
		got := []string{claim(t, s, hour), claim(t, s, hour)}
		slices.Sort(got)
		if !slices.Equal(got, []string{a, c}) {
			t.Fatalf("Claims after reopen = %q, want %s and %s", got, a, c)
		}
	})
}

// push queues urls, each a new job.
func push(t *testing.T, s pages.Store, urls ...string) {
	t.Helper()
	for _, u := range urls {
		if added, err := s.Push(t.Context(), u, time.Time{}, nil); !added || err != nil {
			t.Fatalf("Push %s = %v, %v; want added", u, added, err)
		}
	}
}

// claim claims a job, failing t when none comes within 30 s.
func claim(t *testing.T, s pages.Store, lease time.Duration) string {
	t.Helper()
	u, err := s.Claim(within(t, 30*time.Second), lease)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return u
}

// checkQueue checks that the queue holds n jobs, urls among them.
func checkQueue(t *testing.T, s pages.Store, n int, urls ...string) {
	t.Helper()
	if got, err := s.Len(t.Context()); got != n || err != nil {
		t.Errorf("Len = %d, %v; want %d", got, err, n)
	}
	for _, u := range urls {
		if q, err := s.Queued(t.Context(), u); !q || err != nil {
			t.Errorf("Queued(%s) = %v, %v; want true", u, q, err)
		}
	}
}

// checkOldest checks that the oldest job was queued between from and to,
// give or take a millisecond for a store that keeps coarser times.
func checkOldest(t *testing.T, s pages.Store, from, to time.Time) {
	t.Helper()
	at, ok, err := s.Oldest(t.Context())
	if !ok || err != nil {
		t.Fatalf("Oldest: ok %v, %v", ok, err)
	}
	if at.Before(from.Add(-time.Millisecond)) || at.After(to.Add(time.Millisecond)) {
		t.Errorf("Oldest = %v, want between %v and %v", at, from, to)
	}
}

// checkRecord checks that want is stored under its URL.
func checkRecord(t *testing.T, s pages.Store, want *pages.Record) {
	t.Helper()
	got, err := s.Get(t.Context(), want.URL)
	if err != nil || got == nil {
		t.Fatalf("Get %s = %+v, %v", want.URL, got, err)
	}
	if !got.At.Equal(want.At) || !got.RetryAt.Equal(want.RetryAt) {
		t.Errorf("Get %s: at %v retry %v, want %v and %v", want.URL, got.At, got.RetryAt, want.At, want.RetryAt)
	}
	g, w := *got, *want
	g.At, g.RetryAt, w.At, w.RetryAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("Get %s = %+v, want %+v", want.URL, g, w)
	}
}
