package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/ratelimit"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testredis"
)

// redisLimiter returns what makes the server's limiters in a redis-server
// of the benchmark's own.
func redisLimiter(b *testing.B) func(kind string) ratelimit.Limiter {
	srv := testredis.Start(b, testredis.Options{})
	c, err := redisstore.Open(srv.URL(), redisstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.Ping(b.Context()); err != nil {
		b.Fatal(err)
	}
	return func(kind string) ratelimit.Limiter { return c.Limiter(kind, ratelimit.New(ratelimit.Options{})) }
}

// BenchmarkRedisLimitCheck times the limit check of a /v2 request (the
// client network's share of the api_key's limit, then the key's: two
// Allows, as shareLimit makes them) through Redis beside the in-process
// ratelimit.Set, from 8 goroutines at once over 64 client networks. It
// reports checks per second of each and their ratio, and the mean time of
// one check through Redis.
func BenchmarkRedisLimitCheck(b *testing.B) {
	const (
		workers = 8
		checks  = 20000 // per measurement
	)
	mk := redisLimiter(b)
	inproc := func(string) ratelimit.Limiter { return ratelimit.New(ratelimit.Options{}) }
	lim := ratelimit.Limit{Rate: 1e9, Burst: 1e9}
	run := func(mk func(string) ratelimit.Limiter) float64 {
		nets, keys := mk("key-networks"), mk("keys")
		ctx := context.Background()
		var wg sync.WaitGroup
		start := time.Now()
		for w := range workers {
			wg.Go(func() {
				for i := w; i < checks; i += workers {
					if !nets.Allow(ctx, "demo\x00198.51.100."+strconv.Itoa(i%64), lim.Share(0.2)).Allowed ||
						!keys.Allow(ctx, "demo", lim).Allowed {
						b.Error("a check was refused")
						return
					}
				}
			})
		}
		wg.Wait()
		return checks / time.Since(start).Seconds()
	}
	run(mk) // connections, the script loaded
	var redis, local float64
	b.ResetTimer()
	for range b.N {
		redis, local = run(mk), run(inproc)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(redis, "redis-checks/s")
	b.ReportMetric(local, "inproc-checks/s")
	b.ReportMetric(redis/local, "ratio")
	b.ReportMetric(float64(workers)*1e6/redis, "redis-µs/check")
}

// BenchmarkSearchHTTPRedisLimits measures requests per second of GET
// /v2/search/link over loopback with the limits in Redis beside the same
// server with them in this process, alternating in the same run, as
// BenchmarkSearchHTTP measures. Target: ratio >= 0.8.
func BenchmarkSearchHTTPRedisLimits(b *testing.B) {
	const (
		clients  = 8
		requests = 6000
		rounds   = 3
	)
	env := demoEnv(b)
	local := httptest.NewServer(env.handler)
	defer local.Close()
	withRedis := demoEnvWith(b, redisLimiter(b))
	shared := httptest.NewServer(withRedis.handler)
	defer shared.Close()
	target := "/v2/search/link?q=lg+handy&loc=de&lang=de&api_key=demo&site_id=demo"

	res, err := http.Get(local.URL + target)
	if err != nil {
		b.Fatal(err)
	}
	body := readBody(b, res)
	if res.StatusCode != http.StatusOK {
		b.Fatalf("search answered %d", res.StatusCode)
	}
	load(b, local.URL+target, clients, 500, len(body))
	load(b, shared.URL+target, clients, 500, len(body))

	var bestLocal, bestRedis float64
	b.ResetTimer()
	for range b.N {
		for range rounds {
			bestLocal = max(bestLocal, load(b, local.URL+target, clients, requests, len(body)))
			bestRedis = max(bestRedis, load(b, shared.URL+target, clients, requests, len(body)))
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bestRedis, "redis-req/s")
	b.ReportMetric(bestLocal, "inproc-req/s")
	b.ReportMetric(bestRedis/bestLocal, "ratio")
}
