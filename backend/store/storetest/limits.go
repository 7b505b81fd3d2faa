package storetest

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/ratelimit"
)

// Limits runs the contract of ratelimit.Limiter against the limiters fresh
// returns, each over new, empty state. A limiter keeps its own clock (a
// shared one keeps the server's), so the cases that need tokens back wait
// for them in real time, a fraction of a second.
func Limits(t *testing.T, fresh func(t *testing.T) ratelimit.Limiter) {
	t.Helper()
	// slow refills nothing while a case runs.
	slow := ratelimit.Limit{Rate: 0.001, Burst: 3}

	t.Run("BurstThenRefuse", func(t *testing.T) {
		l := fresh(t)
		for i := range slow.Burst {
			d := l.Allow(t.Context(), "k", slow)
			if !d.Allowed || d.Limit != slow.Burst || d.Remaining != slow.Burst-1-i {
				t.Fatalf("request %d: %+v, want allowed with %d remaining of %d", i, d, slow.Burst-1-i, slow.Burst)
			}
			// Reset: the tokens taken so far, back at the rate.
			reset := time.Duration(float64(i+1) / slow.Rate * float64(time.Second))
			if d.RetryAfter != 0 || d.Reset < reset-time.Second || d.Reset > reset+time.Second {
				t.Errorf("request %d: Reset %v RetryAfter %v, want about %v and 0", i, d.Reset, d.RetryAfter, reset)
			}
		}
		d := l.Allow(t.Context(), "k", slow)
		if d.Allowed || d.Limit != slow.Burst || d.Remaining != 0 {
			t.Fatalf("over the burst: %+v, want refused", d)
		}
		// One token takes 1000 s at this rate.
		if d.RetryAfter < 900*time.Second || d.RetryAfter > 1000*time.Second {
			t.Errorf("RetryAfter = %v, want about 1000 s", d.RetryAfter)
		}
		if d.Reset < d.RetryAfter {
			t.Errorf("Reset %v before RetryAfter %v", d.Reset, d.RetryAfter)
		}
	})

	t.Run("KeysApart", func(t *testing.T) {
		l := fresh(t)
		for range slow.Burst + 1 {
			l.Allow(t.Context(), "a", slow)
		}
		if d := l.Allow(t.Context(), "b", slow); !d.Allowed || d.Remaining != slow.Burst-1 {
			t.Errorf("another key: %+v, want its own full bucket", d)
		}
		if d := l.Allow(t.Context(), "a\x00b", slow); !d.Allowed {
			t.Errorf("a key with a separator in it: %+v, want its own bucket", d)
		}
	})

	t.Run("RetryAfterGivesAToken", func(t *testing.T) {
		l := fresh(t)
		lim := ratelimit.Limit{Rate: 5, Burst: 1}
		var d ratelimit.Decision
		for range 100 { // refused within a few calls, unless the machine stalls
			if d = l.Allow(t.Context(), "k", lim); !d.Allowed {
				break
			}
		}
		if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second/5 {
			t.Fatalf("%+v, want refused for at most 200 ms", d)
		}
		time.Sleep(d.RetryAfter + 5*time.Millisecond) // a margin for rounding
		if d := l.Allow(t.Context(), "k", lim); !d.Allowed {
			t.Errorf("after RetryAfter: %+v, want allowed", d)
		}
	})

	t.Run("ResetFillsTheBucket", func(t *testing.T) {
		l := fresh(t)
		lim := ratelimit.Limit{Rate: 20, Burst: 2}
		var d ratelimit.Decision
		for range lim.Burst {
			d = l.Allow(t.Context(), "k", lim)
		}
		if d.Reset <= 0 || d.Reset > time.Duration(lim.Burst)*time.Second/20 {
			t.Fatalf("%+v, want a Reset within the fill time", d)
		}
		time.Sleep(d.Reset + 10*time.Millisecond)
		if d := l.Allow(t.Context(), "k", lim); !d.Allowed || d.Remaining != lim.Burst-1 {
			t.Errorf("after Reset: %+v, want a full bucket", d)
		}
	})

	t.Run("InvalidLimitAllows", func(t *testing.T) {
		l := fresh(t)
		for _, lim := range []ratelimit.Limit{{}, {Rate: 1}, {Burst: 1}, {Rate: -1, Burst: 2}, {Rate: math.Inf(1), Burst: 1}} {
			for range 3 {
				if d := l.Allow(t.Context(), "k", lim); d != (ratelimit.Decision{Allowed: true}) {
					t.Errorf("Allow under %+v = %+v, want allowed and nothing to report", lim, d)
				}
			}
		}
	})

	t.Run("ChangedLimit", func(t *testing.T) {
		l := fresh(t)
		one := ratelimit.Limit{Rate: 0.001, Burst: 1}
		l.Allow(t.Context(), "k", one)
		if d := l.Allow(t.Context(), "k", one); d.Allowed {
			t.Fatalf("%+v, want refused", d)
		}
		more := ratelimit.Limit{Rate: 0.001, Burst: 5}
		if d := l.Allow(t.Context(), "k", more); !d.Allowed || d.Limit != 5 {
			t.Errorf("after raising the limit: %+v, want allowed under 5", d)
		}
	})

	t.Run("ConcurrentAllowsTakeEachTokenOnce", func(t *testing.T) {
		l := fresh(t)
		lim := ratelimit.Limit{Rate: 0.001, Burst: 10}
		var allowed atomic.Int32
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				if l.Allow(t.Context(), "k", lim).Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != int32(lim.Burst) {
			t.Errorf("%d of 100 concurrent requests allowed, want the burst of %d", allowed.Load(), lim.Burst)
		}
	})

	t.Run("BothTakeInTurn", func(t *testing.T) {
		l := fresh(t)
		share := ratelimit.Bucket{Key: "k\x00net", Limit: ratelimit.Limit{Rate: 0.001, Burst: 2}}
		whole := ratelimit.Bucket{Key: "k", Limit: slow}
		for i := range share.Limit.Burst {
			a, b := l.AllowBoth(t.Context(), share, whole)
			if !a.Allowed || a.Limit != 2 || a.Remaining != 1-i || !b.Allowed || b.Limit != slow.Burst || b.Remaining != slow.Burst-1-i {
				t.Fatalf("request %d: %+v and %+v, want both allowed", i, a, b)
			}
			if b.Reset <= 0 || a.RetryAfter != 0 || b.RetryAfter != 0 {
				t.Errorf("request %d: %+v and %+v, want a Reset and no RetryAfter", i, a, b)
			}
		}
		// The share is spent: refused there, and the key's bucket is not
		// touched.
		a, b := l.AllowBoth(t.Context(), share, whole)
		if a.Allowed || a.RetryAfter < 900*time.Second || b != (ratelimit.Decision{}) {
			t.Fatalf("over the share: %+v and %+v, want refused for about 1000 s and nothing of the second", a, b)
		}
		if d := l.Allow(t.Context(), "k", slow); !d.Allowed || d.Remaining != 0 {
			t.Errorf("the key's bucket after a refused share: %+v, want its last token", d)
		}
		// Another network's share is its own; the key's bucket, now
		// empty, refuses it.
		other := ratelimit.Bucket{Key: "k\x00other", Limit: share.Limit}
		a, b = l.AllowBoth(t.Context(), other, whole)
		if !a.Allowed || b.Allowed || b.RetryAfter < 900*time.Second || b.Limit != slow.Burst {
			t.Errorf("another network on a spent key: %+v and %+v, want its share allowed and the key refused", a, b)
		}
		// The first buckets are AllowBoth's own: Allow's of the same key
		// is untouched, and AllowBoth's is spent by the first request.
		if d := l.Allow(t.Context(), "k\x00other", share.Limit); !d.Allowed || d.Remaining != share.Limit.Burst-1 {
			t.Errorf("Allow of a key AllowBoth used first: %+v, want a full bucket of its own", d)
		}
		if a, _ := l.AllowBoth(t.Context(), other, whole); !a.Allowed || a.Remaining != 0 {
			t.Errorf("the other network's share, second request: %+v, want its last token", a)
		}
	})

	t.Run("BothWithInvalidLimits", func(t *testing.T) {
		l := fresh(t)
		none := ratelimit.Bucket{Key: "free"}
		one := ratelimit.Bucket{Key: "k", Limit: ratelimit.Limit{Rate: 0.001, Burst: 1}}
		if a, b := l.AllowBoth(t.Context(), none, one); a != (ratelimit.Decision{Allowed: true}) || !b.Allowed || b.Limit != 1 {
			t.Fatalf("no limit first: %+v and %+v", a, b)
		}
		if a, b := l.AllowBoth(t.Context(), none, one); !a.Allowed || b.Allowed {
			t.Fatalf("no limit first, second spent: %+v and %+v, want the second refused", a, b)
		}
		two := ratelimit.Bucket{Key: "j", Limit: ratelimit.Limit{Rate: 0.001, Burst: 1}}
		if a, b := l.AllowBoth(t.Context(), two, none); !a.Allowed || a.Limit != 1 || b != (ratelimit.Decision{Allowed: true}) {
			t.Fatalf("no limit second: %+v and %+v", a, b)
		}
		if a, b := l.AllowBoth(t.Context(), none, none); a != (ratelimit.Decision{Allowed: true}) || b != a {
			t.Errorf("no limits: %+v and %+v", a, b)
		}
	})

	t.Run("ConcurrentBothTakeEachTokenOnce", func(t *testing.T) {
		l := fresh(t)
		// 100 networks of two tokens each, on a key of 10: 10 requests
		// pass both, and no network spends more than its two.
		whole := ratelimit.Bucket{Key: "k", Limit: ratelimit.Limit{Rate: 0.001, Burst: 10}}
		var allowed, shares atomic.Int32
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				share := ratelimit.Bucket{Key: "k\x00" + string(rune('A'+i%100)), Limit: ratelimit.Limit{Rate: 0.001, Burst: 2}}
				a, b := l.AllowBoth(t.Context(), share, whole)
				if a.Allowed {
					shares.Add(1)
				}
				if a.Allowed && b.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if allowed.Load() != 10 || shares.Load() != 200 {
			t.Errorf("%d of 200 passed both and %d their share, want 10 and 200", allowed.Load(), shares.Load())
		}
	})
	t.Run("ThreeTakeInTurn", func(t *testing.T) {
		l := fresh(t)
		network := ratelimit.Bucket{Key: "k\x00net", Limit: slow}
		prefix := ratelimit.Bucket{Key: "k\x00pre", Limit: ratelimit.Limit{Rate: 0.001, Burst: 2}}
		whole := ratelimit.Bucket{Key: "k", Limit: ratelimit.Limit{Rate: 0.001, Burst: 5}}
		for i := range prefix.Limit.Burst {
			a, b, c := l.AllowThree(t.Context(), network, prefix, whole)
			if !a.Allowed || a.Remaining != slow.Burst-1-i || !b.Allowed || b.Limit != 2 || b.Remaining != 1-i ||
				!c.Allowed || c.Limit != 5 || c.Remaining != 4-i || c.Reset <= 0 || b.RetryAfter != 0 {
				t.Fatalf("request %d: %+v, %+v and %+v, want all three allowed", i, a, b, c)
			}
		}
		// The prefix is spent: refused there, the network's token taken,
		// and the key's bucket not touched.
		a, b, c := l.AllowThree(t.Context(), network, prefix, whole)
		if !a.Allowed || a.Remaining != 0 || b.Allowed || b.Limit != 2 || b.RetryAfter < 900*time.Second || c != (ratelimit.Decision{}) {
			t.Fatalf("over the prefix: %+v, %+v and %+v, want the second refused and nothing of the third", a, b, c)
		}
		// The network is spent: refused there, and neither of the others
		// is touched.
		a, b, c = l.AllowThree(t.Context(), network, prefix, whole)
		if a.Allowed || a.RetryAfter < 900*time.Second || b != (ratelimit.Decision{}) || c != (ratelimit.Decision{}) {
			t.Fatalf("over the network: %+v, %+v and %+v, want the first refused and nothing of the others", a, b, c)
		}
		if d := l.Allow(t.Context(), "k", whole.Limit); !d.Allowed || d.Remaining != 2 {
			t.Errorf("the key's bucket after refusals: %+v, want 2 of 5 left", d)
		}
		// Another network of the spent prefix is refused by the prefix;
		// another prefix is allowed, from the key's bucket.
		other := ratelimit.Bucket{Key: "k\x00other", Limit: slow}
		if a, b, c := l.AllowThree(t.Context(), other, prefix, whole); !a.Allowed || b.Allowed || c != (ratelimit.Decision{}) {
			t.Errorf("another network of the spent prefix: %+v, %+v and %+v", a, b, c)
		}
		elsewhere := ratelimit.Bucket{Key: "k\x00pre2", Limit: prefix.Limit}
		if a, b, c := l.AllowThree(t.Context(), other, elsewhere, whole); !a.Allowed || !b.Allowed || !c.Allowed || c.Remaining != 1 {
			t.Errorf("another prefix: %+v, %+v and %+v, want all allowed and the key's last but one", a, b, c)
		}
		// The first two are AllowBoth's first buckets, Allow's are apart.
		if a, _ := l.AllowBoth(t.Context(), prefix, whole); a.Allowed {
			t.Errorf("AllowBoth with the spent prefix first: %+v, want refused", a)
		}
		if d := l.Allow(t.Context(), prefix.Key, prefix.Limit); !d.Allowed || d.Remaining != 1 {
			t.Errorf("Allow of a key AllowThree used: %+v, want a full bucket of its own", d)
		}
	})

	t.Run("ThreeWithInvalidLimits", func(t *testing.T) {
		l := fresh(t)
		none := ratelimit.Bucket{Key: "free"}
		one := ratelimit.Bucket{Key: "k", Limit: ratelimit.Limit{Rate: 0.001, Burst: 1}}
		net := ratelimit.Bucket{Key: "n", Limit: slow}
		if a, b, c := l.AllowThree(t.Context(), net, none, one); !a.Allowed || a.Limit != slow.Burst ||
			b != (ratelimit.Decision{Allowed: true}) || !c.Allowed || c.Limit != 1 {
			t.Fatalf("no limit in the middle: %+v, %+v and %+v", a, b, c)
		}
		if a, b, c := l.AllowThree(t.Context(), net, none, one); !a.Allowed || !b.Allowed || c.Allowed {
			t.Fatalf("no limit in the middle, the last spent: %+v, %+v and %+v, want the last refused", a, b, c)
		}
		if a, b, c := l.AllowThree(t.Context(), none, none, none); a != (ratelimit.Decision{Allowed: true}) || b != a || c != a {
			t.Errorf("no limits: %+v, %+v and %+v", a, b, c)
		}
		two := ratelimit.Bucket{Key: "j", Limit: ratelimit.Limit{Rate: 0.001, Burst: 1}}
		if a, b, c := l.AllowThree(t.Context(), none, two, none); !a.Allowed || !b.Allowed || b.Limit != 1 || c != (ratelimit.Decision{Allowed: true}) {
			t.Fatalf("a limit in the middle only: %+v, %+v and %+v", a, b, c)
		}
		if a, b, c := l.AllowThree(t.Context(), none, two, none); !a.Allowed || b.Allowed || c != (ratelimit.Decision{}) {
			t.Errorf("a limit in the middle only, spent: %+v, %+v and %+v, want it refused and nothing of the last", a, b, c)
		}
	})

	t.Run("ConcurrentThreeTakeEachTokenOnce", func(t *testing.T) {
		l := fresh(t)
		// 200 calls over 50 networks of two tokens in 5 prefixes of three,
		// on a key of 10: 100 pass their network, 15 their prefix, and 10
		// the key.
		whole := ratelimit.Bucket{Key: "k", Limit: ratelimit.Limit{Rate: 0.001, Burst: 10}}
		var networks, prefixes, allowed atomic.Int32
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				n := i % 50
				network := ratelimit.Bucket{Key: "k\x00n" + string(rune('A'+n)), Limit: ratelimit.Limit{Rate: 0.001, Burst: 2}}
				prefix := ratelimit.Bucket{Key: "k\x00p" + string(rune('A'+n%5)), Limit: ratelimit.Limit{Rate: 0.001, Burst: 3}}
				a, b, c := l.AllowThree(t.Context(), network, prefix, whole)
				if a.Allowed {
					networks.Add(1)
				}
				if a.Allowed && b.Allowed {
					prefixes.Add(1)
				}
				if a.Allowed && b.Allowed && c.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if networks.Load() != 100 || prefixes.Load() != 15 || allowed.Load() != 10 {
			t.Errorf("%d passed their network, %d their prefix and %d all three, want 100, 15 and 10",
				networks.Load(), prefixes.Load(), allowed.Load())
		}
	})
}
