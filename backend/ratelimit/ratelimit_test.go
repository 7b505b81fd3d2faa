package ratelimit

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// clock is a settable time for the tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time         { return c.t }
func (c *clock) add(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *clock                  { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func newSet(c *clock, maxKeys int) *Set { return New(Options{Now: c.now, MaxKeys: maxKeys}) }

func TestAllowBurstThenRefuse(t *testing.T) {
	c := newClock()
	s := newSet(c, 0)
	l := Limit{Rate: 2, Burst: 3}
	for i := range 3 {
		d := s.Allow(t.Context(), "k", l)
		if !d.Allowed || d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("request %d: %+v, want allowed with %d remaining", i, d, 2-i)
		}
	}
	d := s.Allow(t.Context(), "k", l)
	if d.Allowed || d.Remaining != 0 {
		t.Fatalf("over the burst: %+v, want refused", d)
	}
	if d.RetryAfter != 500*time.Millisecond {
		t.Errorf("RetryAfter = %v, want 500ms at 2 tokens/s", d.RetryAfter)
	}
	if d.Reset != 1500*time.Millisecond {
		t.Errorf("Reset = %v, want 1.5s to refill 3 tokens", d.Reset)
	}
	if other := s.Allow(t.Context(), "other", l); !other.Allowed || other.Remaining != 2 {
		t.Errorf("another key: %+v, want its own full bucket", other)
	}
	c.add(d.RetryAfter)
	if d := s.Allow(t.Context(), "k", l); !d.Allowed {
		t.Errorf("after RetryAfter: %+v, want allowed", d)
	}
}

func TestInvalidLimitAllows(t *testing.T) {
	s := newSet(newClock(), 0)
	for _, l := range []Limit{{}, {Rate: 1}, {Burst: 1}, {Rate: -1, Burst: 2}} {
		if d := s.Allow(t.Context(), "k", l); !d.Allowed {
			t.Errorf("Allow under %+v refused", l)
		}
	}
	if s.Len() != 0 {
		t.Errorf("%d buckets kept for invalid limits", s.Len())
	}
}

func TestChangedLimitStartsAgain(t *testing.T) {
	s := newSet(newClock(), 0)
	s.Allow(t.Context(), "k", Limit{Rate: 1, Burst: 1})
	if d := s.Allow(t.Context(), "k", Limit{Rate: 1, Burst: 5}); !d.Allowed || d.Limit != 5 {
		t.Errorf("after raising the limit: %+v, want allowed under 5", d)
	}
}

func TestIdleBucketsEvicted(t *testing.T) {
	c := newClock()
	s := newSet(c, 0)
	l := Limit{Rate: 10, Burst: 10} // full again after 1 s
	for i := range 1000 {
		s.Allow(t.Context(), fmt.Sprint("ip", i), l)
	}
	if s.Len() != 1000 {
		t.Fatalf("Len = %d, want 1000", s.Len())
	}
	c.add(sweepEvery)
	s.Allow(t.Context(), "fresh", l)
	if s.Len() != 1 {
		t.Errorf("after every bucket idled past its fill time: Len = %d, want 1", s.Len())
	}
}

func TestBusyBucketsKeptBySweep(t *testing.T) {
	c := newClock()
	s := newSet(c, 0)
	slow := Limit{Rate: 1.0 / 3600, Burst: 1} // an hour to refill
	s.Allow(t.Context(), "slow", slow)
	c.add(sweepEvery)
	s.Allow(t.Context(), "other", Limit{Rate: 1, Burst: 1})
	if d := s.Allow(t.Context(), "slow", slow); d.Allowed {
		t.Error("a bucket still refilling was forgotten: the key got a fresh burst")
	}
}

func TestBoundedHoweverManyKeys(t *testing.T) {
	c := newClock()
	const bound = 1000
	s := newSet(c, bound)
	l := Limit{Rate: 1.0 / 60, Burst: 5} // nothing refills during the flood
	for i := range 100 * bound {
		s.Allow(t.Context(), fmt.Sprint("ip", i), l)
		if s.Len() > bound {
			t.Fatalf("after %d keys: %d buckets, bound %d", i+1, s.Len(), bound)
		}
	}
}

func TestFullSetFreesATenthAtOnce(t *testing.T) {
	c := newClock()
	const bound = 1000
	s := newSet(c, bound)
	l := Limit{Rate: 1.0 / 60, Burst: 5}
	for i := range bound {
		s.Allow(t.Context(), fmt.Sprint("ip", i), l)
	}
	s.Allow(t.Context(), "one more", l)
	if want := bound - bound/10 + 1; s.Len() != want {
		t.Errorf("after one key past a full bound: %d buckets, want %d, so the next %d keys need no pass", s.Len(), want, bound/10-1)
	}
}

func TestShare(t *testing.T) {
	l := Limit{Rate: 50, Burst: 100}
	for _, tc := range []struct {
		f    float64
		want Limit
	}{
		{1, l}, {2, l}, {0.2, Limit{Rate: 10, Burst: 20}}, {0.001, Limit{Rate: 0.05, Burst: 1}},
	} {
		if got := l.Share(tc.f); got != tc.want {
			t.Errorf("Share(%v) = %+v, want %+v", tc.f, got, tc.want)
		}
	}
	if got := (Limit{Rate: 1, Burst: 2}).Share(0.3); got.Burst != 1 || !got.Valid() {
		t.Errorf("a share of a small burst: %+v, want one token", got)
	}
	// A share that is a whole number of tokens is that number, though
	// its product in floating point falls just below it (0.29 * 100), as
	// does a prefix's, twice a network's share (2 * 0.145).
	for _, f := range []float64{0.29, 0.57, 2 * 0.145} {
		if got := l.Share(f); got.Burst != int(math.Round(f*100)) {
			t.Errorf("Share(%v) = %+v, want a burst of %v", f, got, math.Round(f*100))
		}
	}
}
