package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Decisions runs the contract of clicks.Decisions against the stores fresh
// opens. fresh returns an Opener over a new, empty backing.
func Decisions(t *testing.T, fresh func(t *testing.T) Opener[clicks.Decisions]) {
	t.Helper()
	start := func(t *testing.T) clicks.Decisions {
		s, _ := open(t, fresh(t))
		return s
	}
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	exp := t0.Add(24 * time.Hour)

	t.Run("FirstUseOnly", func(t *testing.T) {
		s := start(t)
		if !useDecision(t, s, "d1", t0, exp) {
			t.Fatal("first use of d1 refused")
		}
		if useDecision(t, s, "d1", t0.Add(time.Second), exp) {
			t.Error("second use of d1 accepted")
		}
		if useDecision(t, s, "d1", t0.Add(-time.Hour), exp) {
			t.Error("a use of d1 with the clock stepped back accepted")
		}
		if !useDecision(t, s, "d2", t0.Add(time.Second), exp) {
			t.Error("first use of d2 refused")
		}
	})

	t.Run("ExpiredIDsDoNotBill", func(t *testing.T) {
		s := start(t)
		if useDecision(t, s, "late", exp, exp) {
			t.Error("a use at its expiry accepted")
		}
		if useDecision(t, s, "late", exp.Add(time.Hour), exp) {
			t.Error("a use after its expiry accepted")
		}
	})

	t.Run("ForgettingKeepsLiveIDs", func(t *testing.T) {
		s := start(t)
		useDecision(t, s, "short", t0, t0.Add(time.Minute))
		useDecision(t, s, "long", t0, exp)
		// A use long after the first expiry lets the store forget it; the
		// live id stays used.
		if !useDecision(t, s, "new", t0.Add(3*time.Hour), exp) {
			t.Fatal("a fresh id refused")
		}
		if useDecision(t, s, "long", t0.Add(3*time.Hour), exp) {
			t.Error("a live id was forgotten")
		}
	})

	t.Run("ForgettingKeepsLateUses", func(t *testing.T) {
		s := start(t)
		// A link that expires in the last second of an hour, clicked
		// once; a click timed a second before that expiry reaches the
		// store only after a click timed in the next hour (a request
		// held up between reading the clock and its commit), which
		// lets the store forget the ids that expired in that hour.
		end := time.Date(2026, 11, 23, 12, 59, 59, 0, time.UTC)
		if !useDecision(t, s, "edge", t0, end) {
			t.Fatal("first use of edge refused")
		}
		if !useDecision(t, s, "next", end.Add(2*time.Second), end.Add(24*time.Hour)) {
			t.Fatal("a fresh id refused")
		}
		if useDecision(t, s, "edge", end.Add(-time.Second), end) {
			t.Error("a used id billed again once a later click let its hour be forgotten")
		}
	})

	t.Run("UsesAreDurable", func(t *testing.T) {
		opener := fresh(t)
		s, closeStore := open(t, opener)
		useDecision(t, s, "d1", t0, exp)
		closeStore()
		s, _ = open(t, opener)
		if useDecision(t, s, "d1", t0.Add(time.Hour), exp) {
			t.Error("after reopen, a used id was accepted again")
		}
		if !useDecision(t, s, "d2", t0.Add(time.Hour), exp) {
			t.Error("after reopen, a fresh id refused")
		}
	})

	t.Run("ConcurrentUses", func(t *testing.T) {
		s := start(t)
		const n = 40
		var first atomic.Int32
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if useDecision(t, s, "one", t0, exp) {
					first.Add(1)
				}
			})
		}
		wg.Wait()
		if first.Load() != 1 {
			t.Errorf("%d of %d concurrent uses of one id were first, want 1", first.Load(), n)
		}
	})

	t.Run("DoneContextRefuses", func(t *testing.T) {
		s := start(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.Use(ctx, "d1", t0, exp); err == nil {
			t.Fatal("Use with a done context succeeded")
		}
		if !useDecision(t, s, "d1", t0, exp) {
			t.Error("a refused use was recorded")
		}
	})
}

// useDecision uses id at at and reports whether that was its first use.
func useDecision(t *testing.T, s clicks.Decisions, id string, at, expires time.Time) bool {
	t.Helper()
	first, err := s.Use(t.Context(), id, at, expires)
	if err != nil {
		t.Errorf("Use: %v", err) // not Fatal: concurrent uses call it too
	}
	return first
}
