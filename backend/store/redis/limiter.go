package redisstore

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/adlink/adlink/backend/ratelimit"
)

// Limiter is a ratelimit.Limiter whose buckets are in Redis, shared by
// every process that uses the same Redis and kind: GCRA (one timestamp per
// key, expiring once the bucket is full again) in one script, timed by
// Redis's own clock, so replicas with skewed clocks judge alike. When
// Redis does not answer, the fallback decides, in this process alone: a
// key may then take its limit from each replica.
type Limiter struct {
	c        *Client
	rl       *redis_rate.Limiter
	prefix   string
	fallback ratelimit.Limiter
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// Limiter returns the limiter of one kind of key ("keys", "ips"): kinds
// keep apart buckets of equal keys. fallback answers while Redis does not.
func (c *Client) Limiter(kind string, fallback ratelimit.Limiter) *Limiter {
	return &Limiter{c: c, rl: redis_rate.NewLimiter(c.rdb), prefix: c.prefix + kind + ":", fallback: fallback}
}

// Allow implements ratelimit.Limiter.
func (l *Limiter) Allow(ctx context.Context, key string, lim ratelimit.Limit) ratelimit.Decision {
	if !lim.Valid() {
		return ratelimit.Decision{Allowed: true}
	}
	// One token per emission interval: redis_rate counts whole requests
	// per period, and the interval carries a fractional rate exactly.
	rl := redis_rate.Limit{Rate: 1, Burst: lim.Burst, Period: time.Duration(float64(time.Second) / lim.Rate)}
	var res *redis_rate.Result
	ok := l.c.call(ctx, "limits", func(ctx context.Context) error {
		var err error
		res, err = l.rl.Allow(ctx, l.prefix+key, rl)
		return err
	})
	if !ok {
		return l.fallback.Allow(ctx, key, lim)
	}
	d := ratelimit.Decision{Allowed: res.Allowed > 0, Limit: lim.Burst, Remaining: max(0, res.Remaining),
		Reset: max(0, res.ResetAfter)}
	if !d.Allowed {
		d.RetryAfter = max(0, res.RetryAfter)
	}
	return d
}
