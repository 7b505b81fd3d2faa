package pages

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestLookupAdmitGatesOnlyNewJobs(t *testing.T) {
	base := reviewServer(t, nil)
	var mu sync.Mutex
	var outcomes []string
	e := open(t, t.TempDir(), 0, newFetcher(t, FetchOptions{AllowPrivate: true}), fixtureIndex(t),
		Options{OnAnalysis: func(o string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }})
	ctx := context.Background()
	refused := errors.New("over the site's limit")

	calls := 0
	admit := func() error { calls++; return nil }
	u := base + "/review"
	for range 3 {
		res, err := e.svc.LookupAdmit(ctx, u, admit)
		if err != nil || res.Status != StatusPending {
			t.Fatalf("LookupAdmit = %+v, %v; want pending", res, err)
		}
	}
	if calls != 1 {
		t.Errorf("admit called %d times for one new page polled three times, want 1", calls)
	}
	if _, err := e.svc.LookupAdmit(ctx, base+"/gone", func() error { return refused }); !errors.Is(err, refused) {
		t.Errorf("a refused page: %v, want admit's error", err)
	}
	if q, _ := e.q.Queued(ctx, base+"/gone"); q {
		t.Error("a refused page was queued")
	}

	depth, oldest, err := e.svc.QueueStats(ctx)
	if err != nil || depth != 1 {
		t.Fatalf("QueueStats = %d, %v, %v; want one job", depth, oldest, err)
	}
	if oldest < 0 || oldest > time.Hour {
		t.Errorf("oldest age %v is not a wait", oldest)
	}

	e.svc.Start()
	drain(t, e.svc)
	if depth, oldest, err := e.svc.QueueStats(ctx); err != nil || depth != 0 || oldest != 0 {
		t.Errorf("after drain QueueStats = %d, %v, %v; want empty", depth, oldest, err)
	}
	if _, err := e.svc.LookupAdmit(ctx, base+"/gone", admit); err != nil {
		t.Fatal(err)
	}
	drain(t, e.svc)
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 2 || outcomes[0] != "analysed" || outcomes[1] != "failed" {
		t.Errorf("outcomes %q, want analysed then failed", outcomes)
	}
	// An analysed page never asks admit again.
	if _, err := e.svc.LookupAdmit(ctx, u, func() error { return refused }); err != nil {
		t.Errorf("an analysed page: %v", err)
	}
}

func TestLookupAdmitOncePerPageUnderConcurrency(t *testing.T) {
	e := open(t, t.TempDir(), 0, &mockFetcher{}, fixtureIndex(t), Options{})
	var mu sync.Mutex
	calls := 0
	admit := func() error { mu.Lock(); calls++; mu.Unlock(); return nil }
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if res, err := e.svc.LookupAdmit(context.Background(), "http://blog.example/new", admit); err != nil || res.Status != StatusPending {
				t.Errorf("LookupAdmit = %+v, %v", res, err)
			}
		})
	}
	wg.Wait()
	if calls != 1 {
		t.Errorf("admit called %d times for 50 concurrent first lookups of one page, want 1", calls)
	}
}
