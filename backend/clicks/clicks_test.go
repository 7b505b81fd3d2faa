package clicks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/store"
)

func all(t *testing.T, l *Log, from, to time.Time) []Click {
	t.Helper()
	var got []Click
	if err := l.Scan(context.Background(), from, to, func(c Click) error {
		got = append(got, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAppendSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	want := Click{Time: t0, AdID: "handy-bestkauf.de", AdType: "advertiser", Type: "search",
		APIKey: "demo", SiteID: "demo", Criterion: "lg handy", YkTag: "tag:1", IP: "192.0.2.1", UserAgent: "test"}
	if err := l.Append(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err = New(db)
	if err != nil {
		t.Fatal(err)
	}
	got := all(t, l, time.Time{}, time.Time{})
	if len(got) != 1 || !got[0].Time.Equal(want.Time) {
		t.Fatalf("after reopen: %+v", got)
	}
	got[0].Time = want.Time
	if got[0] != want {
		t.Errorf("click = %+v, want %+v", got[0], want)
	}
}

// Concurrent clicks in the same nanosecond all land, in time order.
func TestAppendConcurrentSameTime(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			at := t0
			if i%2 == 1 {
				at = t0.Add(time.Second)
			}
			errs <- l.Append(context.Background(), Click{Time: at, AdID: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := all(t, l, time.Time{}, time.Time{})
	if len(got) != n {
		t.Fatalf("%d clicks, want %d", len(got), n)
	}
	seen := map[string]bool{}
	for i, c := range got {
		seen[c.AdID] = true
		if i > 0 && c.Time.Before(got[i-1].Time) {
			t.Errorf("click %d out of time order", i)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct clicks, want %d", len(seen), n)
	}
	if got := all(t, l, t0.Add(time.Second), time.Time{}); len(got) != n/2 {
		t.Errorf("Scan from t0+1s: %d clicks, want %d", len(got), n/2)
	}
	if got := all(t, l, time.Time{}, t0.Add(time.Second)); len(got) != n/2 {
		t.Errorf("Scan to t0+1s: %d clicks, want %d", len(got), n/2)
	}
}

func TestAppendRejects(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), Click{AdID: "x"}); err == nil {
		t.Error("Append accepted a click without time")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Append(ctx, Click{Time: time.Unix(1, 0), AdID: "x"}); err == nil {
		t.Error("Append with a cancelled context succeeded")
	}
	if got := all(t, l, time.Time{}, time.Time{}); len(got) != 0 {
		t.Errorf("rejected clicks were stored: %+v", got)
	}
}

// A click whose commit fails reports it, and the log keeps working for
// the clicks queued behind it.
func TestAppendReportsCommitFailure(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := l.Append(context.Background(), Click{Time: time.Unix(1, 0), AdID: "x"}); err == nil {
				t.Error("Append on a closed file succeeded")
			}
		})
	}
	wg.Wait()
	if l.gc.busy || len(l.gc.queue) != 0 {
		t.Errorf("after failed commits: busy %v, %d queued", l.gc.busy, len(l.gc.queue))
	}
}

// A commit that panics answers the clicks it held and leaves the log
// usable: nobody waits forever on a commit that will not come.
func TestCommitPanicReleasesTheLog(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		l.gc.commit(l.db, func(*bolt.Tx) error { panic("disk gremlin") })
	}()
	if err := l.Append(context.Background(), Click{Time: time.Unix(1, 0), AdID: "after"}); err != nil {
		t.Fatal(err)
	}
	if got := all(t, l, time.Time{}, time.Time{}); len(got) != 1 || got[0].AdID != "after" {
		t.Errorf("clicks after the panic: %+v", got)
	}
}

// Click ids are 22 characters of base64url, all distinct, and none
// begins with '-': a CSV would write that one with a ' before it, and an
// advertiser matching the ids its landing URLs got would miss it. About 1
// in 64 did.
func TestNewIDNeverLooksLikeAFormula(t *testing.T) {
	seen := map[string]bool{}
	for range 20_000 {
		id := NewID()
		if len(id) != 22 || strings.Trim(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("id %q: want 22 characters of base64url", id)
		}
		if id[0] == '-' {
			t.Fatalf("id %q begins with '-'", id)
		}
		if seen[id] {
			t.Fatalf("id %q twice", id)
		}
		seen[id] = true
	}
}
