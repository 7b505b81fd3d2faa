package redisstore_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/ratelimit"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testredis"
)

// TestAllowBothBatchedHoldsTheLimit: AllowBoth calls made at once travel
// to Redis in shared pipelines, and a bucket still gives exactly its
// burst, each call its own answer, none from the fallback.
func TestAllowBothBatchedHoldsTheLimit(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	r := replica{m: metrics.New()}
	l := open(t, patient(srv.URL()), redisstore.Options{Metrics: r.m}).Limiter("keys", noLimiter{t})
	network := ratelimit.Limit{Rate: 0.001, Burst: 1000}
	key := ratelimit.Limit{Rate: 0.001, Burst: 50}
	const callers, each = 64, 8
	var allowed, refusedFirst atomic.Int32
	remaining := make([]atomic.Int32, key.Burst)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				n, k := l.AllowBoth(t.Context(), ratelimit.Bucket{Key: "net", Limit: network}, ratelimit.Bucket{Key: "key", Limit: key})
				if !n.Allowed {
					refusedFirst.Add(1)
				}
				if k.Allowed {
					allowed.Add(1)
					if k.Remaining < 0 || k.Remaining >= key.Burst {
						t.Errorf("remaining %d", k.Remaining)
						continue
					}
					remaining[k.Remaining].Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != int32(key.Burst) {
		t.Errorf("%d of %d calls at once allowed; want the burst, %d", got, callers*each, key.Burst)
	}
	if refusedFirst.Load() != 0 {
		t.Errorf("the network's bucket (burst 1000) refused %d of %d", refusedFirst.Load(), callers*each)
	}
	// Each allowed call saw its own bucket state: every remaining count
	// from burst-1 down to 0 once.
	for i := range remaining {
		if remaining[i].Load() != 1 {
			t.Errorf("remaining %d answered %d times, want once", i, remaining[i].Load())
		}
	}
	// Each call counts once in adlink_redis_calls_total, whichever
	// pipeline took it.
	if got := r.calls(t, "limits"); got != callers*each {
		t.Errorf("%v calls counted, want %d", got, callers*each)
	}
	if got := r.fallbacks(t, "limits"); got != 0 {
		t.Errorf("%v fallbacks counted, want none", got)
	}
}

// TestAllowBothAfterScriptFlush: a Redis that lost its scripts (restarted,
// or SCRIPT FLUSH) is given the script again, and the call is answered by
// Redis, from the bucket it kept.
func TestAllowBothAfterScriptFlush(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	l := open(t, patient(srv.URL()), redisstore.Options{}).Limiter("keys", noLimiter{t})
	two := ratelimit.Limit{Rate: 0.001, Burst: 2}
	both := func() (ratelimit.Decision, ratelimit.Decision) {
		return l.AllowBoth(t.Context(), ratelimit.Bucket{Key: "n", Limit: ratelimit.Limit{Rate: 1, Burst: 10}},
			ratelimit.Bucket{Key: "k", Limit: two})
	}
	if _, k := both(); !k.Allowed || k.Remaining != 1 {
		t.Fatalf("first call: %+v", k)
	}
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(opt)
	defer raw.Close()
	if err := raw.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if _, k := both(); !k.Allowed || k.Remaining != 0 {
		t.Fatalf("after SCRIPT FLUSH: %+v, want the bucket's last token", k)
	}
	if n, k := both(); !n.Allowed || k.Allowed {
		t.Fatalf("third call: network %+v, key %+v; want the key's bucket spent", n, k)
	}
}
