package storetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Tags runs the contract of clicks.Tags against the stores fresh opens.
// fresh returns an Opener over a new, empty backing.
func Tags(t *testing.T, fresh func(t *testing.T) Opener[clicks.Tags]) {
	t.Helper()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	admit := func(t *testing.T, s clicks.Tags, site, tag string, at time.Time, limit int) bool {
		t.Helper()
		ok, err := s.Admit(within(t, 10*time.Second), site, tag, at, limit)
		if err != nil {
			t.Fatalf("admitting %q of %q: %v", tag, site, err)
		}
		return ok
	}

	t.Run("FirstLimitTagsOfASiteADay", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		for i := range 3 {
			if !admit(t, s, "a", "t"+strconv.Itoa(i), t0, 3) {
				t.Fatalf("tag %d of 3 refused", i)
			}
		}
		if admit(t, s, "a", "t3", t0, 3) || admit(t, s, "a", "t4", t0.Add(time.Hour), 3) {
			t.Error("a fourth tag of 3 admitted")
		}
		if !admit(t, s, "a", "t1", t0.Add(2*time.Hour), 3) {
			t.Error("a tag admitted before refused")
		}
		if !admit(t, s, "b", "t3", t0, 3) {
			t.Error("another site's first tag refused")
		}
		if !admit(t, s, "a", "t3", t0.Add(24*time.Hour), 3) {
			t.Error("the next day's first tag refused")
		}
		if admit(t, s, "c", "t", t0, 0) {
			t.Error("a tag admitted with limit 0")
		}
		if admit(t, s, "a", "t9", t0, 3) {
			t.Error("the day before's count was forgotten while that day lasts for a late click")
		}
	})

	t.Run("Durable", func(t *testing.T) {
		o := fresh(t)
		s, closeS := open(t, o)
		admit(t, s, "a", "x", t0, 2)
		admit(t, s, "a", "y", t0, 2)
		closeS()
		s, _ = open(t, o)
		if admit(t, s, "a", "z", t0, 2) {
			t.Error("a third tag of 2 admitted after a restart")
		}
		if !admit(t, s, "a", "x", t0, 2) {
			t.Error("a tag admitted before a restart refused after it")
		}
	})

	t.Run("ConcurrentAdmissionsHoldTheLimit", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		const limit, n = 5, 40
		var admitted atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ok, err := s.Admit(context.Background(), "a", "t"+strconv.Itoa(i%(2*limit)), t0, limit)
				if err != nil {
					t.Error(err)
				}
				if ok {
					admitted.Add(1)
				}
			})
		}
		wg.Wait()
		held := 0
		for i := range 2 * limit {
			if admit(t, s, "a", "t"+strconv.Itoa(i), t0, limit) {
				held++
			}
		}
		if held != limit {
			t.Errorf("%d concurrent admissions of %d tags left %d held, want %d", n, 2*limit, held, limit)
		}
		if a := admitted.Load(); a < limit || a > n {
			t.Errorf("%d admissions said yes, want at least %d", a, limit)
		}
	})

	t.Run("DoneContext", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Admit(ctx, "a", "x", t0, 2); err == nil {
			t.Fatal("an admission with a done context succeeded")
		}
		if !admit(t, s, "a", "y", t0, 1) {
			t.Error("the refused admission held its tag")
		}
	})
}
