package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Clicks runs the contract of clicks.Store against the stores fresh opens.
// fresh returns an Opener over a new, empty backing.
func Clicks(t *testing.T, fresh func(t *testing.T) Opener[clicks.Store]) {
	t.Helper()
	start := func(t *testing.T) clicks.Store {
		s, _ := open(t, fresh(t))
		return s
	}
	// Whole microseconds: the contract keeps time to the microsecond at
	// least.
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	full := clicks.Click{Time: t0, AdID: "handy-bestkauf.de", AdType: "advertiser", Type: "search",
		APIKey: "demo", SiteID: "demo", Criterion: "lg handy", YkTag: "tag:1", IP: "192.0.2.1",
		UserAgent: "Mozilla/5.0 (test)", Billable: false, Reason: "repeat"}

	t.Run("AppendThenScan", func(t *testing.T) {
		s := start(t)
		appendClicks(t, s, full)
		got := scan(t, s, time.Time{}, time.Time{})
		if len(got) != 1 {
			t.Fatalf("%d clicks, want 1", len(got))
		}
		checkClick(t, got[0], full)
	})

	t.Run("AppendIsDurable", func(t *testing.T) {
		opener := fresh(t)
		s, closeStore := open(t, opener)
		billable := full
		billable.Time, billable.Billable, billable.Reason = t0.Add(time.Second), true, ""
		appendClicks(t, s, full, billable)
		closeStore()
		s, _ = open(t, opener)
		got := scan(t, s, time.Time{}, time.Time{})
		if len(got) != 2 {
			t.Fatalf("%d clicks after reopen, want 2", len(got))
		}
		checkClick(t, got[0], full)
		checkClick(t, got[1], billable)
	})

	t.Run("EachAppendIsOneClick", func(t *testing.T) {
		s := start(t)
		appendClicks(t, s, full, full)
		if got := scan(t, s, time.Time{}, time.Time{}); len(got) != 2 {
			t.Fatalf("the same click appended twice: %d clicks, want 2", len(got))
		}
	})

	t.Run("AppendRefuses", func(t *testing.T) {
		s := start(t)
		if err := s.Append(t.Context(), clicks.Click{AdID: "no time"}); err == nil {
			t.Error("Append took a click without time")
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Append(ctx, full); err == nil {
			t.Error("Append with a done context succeeded")
		}
		if got := scan(t, s, time.Time{}, time.Time{}); len(got) != 0 {
			t.Errorf("refused clicks were stored: %+v", got)
		}
	})

	t.Run("ScanOrderAndRange", func(t *testing.T) {
		s := start(t)
		at := func(d time.Duration, id string) clicks.Click {
			c := full
			c.Time, c.AdID = t0.Add(d), id
			return c
		}
		appendClicks(t, s, at(2*time.Second, "late"), at(0, "first"), at(time.Second, "mid1"), at(time.Second, "mid2"))
		ids := func(cs []clicks.Click) string {
			var s string
			for _, c := range cs {
				s += c.AdID + " "
			}
			return s
		}
		for _, c := range []struct {
			from, to time.Time
			want     string
		}{
			{time.Time{}, time.Time{}, "first mid1 mid2 late "},
			{t0.Add(time.Second), time.Time{}, "mid1 mid2 late "},
			{time.Time{}, t0.Add(time.Second), "first "},
			{t0.Add(time.Second), t0.Add(2 * time.Second), "mid1 mid2 "},
			{t0.Add(3 * time.Second), time.Time{}, ""},
		} {
			if got := ids(scan(t, s, c.from, c.to)); got != c.want {
				t.Errorf("Scan [%v, %v) = %q, want %q", c.from, c.to, got, c.want)
			}
		}
	})

	t.Run("ConcurrentAppends", func(t *testing.T) {
		s := start(t)
		const n = 50
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c := full
				c.AdID = fmt.Sprint(i) // all in the same microsecond
				if err := s.Append(t.Context(), c); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		seen := map[string]bool{}
		for _, c := range scan(t, s, time.Time{}, time.Time{}) {
			seen[c.AdID] = true
		}
		if len(seen) != n {
			t.Errorf("%d distinct clicks of %d appended at once", len(seen), n)
		}
	})

	t.Run("ScanStops", func(t *testing.T) {
		s := start(t)
		appendClicks(t, s, full, full)
		stop := errors.New("stop")
		calls := 0
		err := s.Scan(t.Context(), time.Time{}, time.Time{}, func(clicks.Click) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("Scan = %v after %d calls, want fn's error after 1", err, calls)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err = s.Scan(ctx, time.Time{}, time.Time{}, func(clicks.Click) error { return nil })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Scan with a done context = %v", err)
		}
	})
}

func appendClicks(t *testing.T, s clicks.Store, cs ...clicks.Click) {
	t.Helper()
	for _, c := range cs {
		if err := s.Append(t.Context(), c); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

func scan(t *testing.T, s clicks.Store, from, to time.Time) []clicks.Click {
	t.Helper()
	var got []clicks.Click
	if err := s.Scan(t.Context(), from, to, func(c clicks.Click) error {
		got = append(got, c)
		return nil
	}); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return got
}

// checkClick checks that got is want, its time the same instant.
func checkClick(t *testing.T, got, want clicks.Click) {
	t.Helper()
	if !got.Time.Equal(want.Time) {
		t.Errorf("click time %v, want %v", got.Time, want.Time)
	}
	got.Time = want.Time
	if got != want {
		t.Errorf("click = %+v, want %+v", got, want)
	}
}
