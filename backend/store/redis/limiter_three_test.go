package redisstore_test

import (
	"testing"
	"time"

	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/internal/testredis"
)

// TestAllowThreeSharedThenFallsBack: two replicas on one Redis share the
// three buckets of AllowThree; with Redis down, each judges them from its
// own fallback, and no call fails.
func TestAllowThreeSharedThenFallsBack(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	a, b := newReplica(t, srv.URL(), clk), newReplica(t, srv.URL(), clk)
	la := a.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	lb := b.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	slow := func(burst int) ratelimit.Limit { return ratelimit.Limit{Rate: 0.001, Burst: burst} }
	three := func(l ratelimit.Limiter, network string) (ratelimit.Decision, ratelimit.Decision, ratelimit.Decision) {
		return l.AllowThree(t.Context(), ratelimit.Bucket{Key: "k\x00" + network, Limit: slow(5)},
			ratelimit.Bucket{Key: "k\x00prefix", Limit: slow(2)}, ratelimit.Bucket{Key: "k", Limit: slow(10)})
	}

	// The prefix's two tokens, taken from two networks on two replicas.
	if n, p, k := three(la, "n1"); !n.Allowed || !p.Allowed || p.Remaining != 1 || !k.Allowed || k.Remaining != 9 {
		t.Fatalf("replica A: %+v, %+v and %+v, want all allowed", n, p, k)
	}
	if n, p, k := three(lb, "n2"); !n.Allowed || !p.Allowed || p.Remaining != 0 || !k.Allowed || k.Remaining != 8 {
		t.Fatalf("replica B: %+v, %+v and %+v, want all allowed and the prefix's last token", n, p, k)
	}
	if n, p, k := three(la, "n3"); !n.Allowed || p.Allowed || p.Limit != 2 || k != (ratelimit.Decision{}) {
		t.Fatalf("a third network: %+v, %+v and %+v, want refused by the prefix the replicas share", n, p, k)
	}

	srv.Kill()
	// Each replica's fallback starts full: the prefix's share is each
	// replica's own while Redis is down.
	for _, l := range []ratelimit.Limiter{la, lb} {
		for i := range 3 {
			n, p, k := three(l, "n4")
			if want := i < 2; !n.Allowed || p.Allowed != want || (want && !k.Allowed) {
				t.Errorf("with Redis down, call %d: %+v, %+v and %+v, want the prefix allowed: %v", i, n, p, k, want)
			}
		}
	}
	if got := a.fallbacks(t, "limits"); got != 3 {
		t.Errorf("replica A counted %v fallbacks, want 3", got)
	}
	// Its calls count those Redis answered too, once each: two before the
	// outage, three answered by the fallback. Without them the share of
	// AdlinkRedisFallback is of Allow's calls alone, and over 1.
	if got := a.calls(t, "limits"); got != 5 {
		t.Errorf("replica A counted %v calls, want 5", got)
	}
}
