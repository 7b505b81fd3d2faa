package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/metrics"
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
	prefix   string // Allow's buckets
	firsts   string // AllowBoth's first buckets, and AllowThree's first two
	fallback ratelimit.Limiter
	count    metrics.RedisStore
	batch    batcher // AllowBoth's and AllowThree's calls on their way to Redis
	// nodeBatch holds, on a cluster, the batcher of each master's calls,
	// by the master's *health: the calls of a master that hangs wait in
	// its pipelines, not in those of the masters that answer.
	nodeBatch sync.Map
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// Limiter returns the limiter of one kind of key ("keys", "ips"): kinds
// keep apart buckets of equal keys. fallback answers while Redis does not.
func (c *Client) Limiter(kind string, fallback ratelimit.Limiter) *Limiter {
	return &Limiter{c: c, rl: redis_rate.NewLimiter(c.rdb), prefix: c.prefix + kind + ":",
		firsts: c.prefix + kind + "-firsts:", fallback: fallback, count: c.metrics.RedisStore("limits")}
}

// Allow implements ratelimit.Limiter.
func (l *Limiter) Allow(ctx context.Context, key string, lim ratelimit.Limit) ratelimit.Decision {
	if !lim.Valid() {
		return ratelimit.Decision{Allowed: true}
	}
	res, ok := l.take(ctx, key, lim)
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

// take takes a token from key's bucket under lim in Redis, and says
// whether Redis answered.
func (l *Limiter) take(ctx context.Context, key string, lim ratelimit.Limit) (*redis_rate.Result, bool) {
	// One token per emission interval: redis_rate counts whole requests
	// per period, and the interval carries a fractional rate exactly.
	rl := redis_rate.Limit{Rate: 1, Burst: lim.Burst, Period: time.Duration(float64(time.Second) / lim.Rate)}
	var res *redis_rate.Result
	bucket := l.bucket(l.prefix, key, key)
	ok := l.c.call(ctx, l.count, bucket, func(ctx context.Context) error {
		var err error
		res, err = l.rl.AllowN(ctx, bucket, rl, 1)
		return err
	})
	return res, ok
}

// bucket is the name of key's bucket in space (l.prefix, Allow's, or
// l.firsts), without redis_rate's "rate:", when last is the key of the
// chain's Allow bucket (key itself in Allow's space). On a single Redis it
// is space and key, the names the buckets always had. On a cluster a
// chain's keys are to be one slot's, so its buckets share a hash tag, its
// Allow bucket's key: an api key's buckets, or an IPv6 /48's or IPv4
// /24's, are one slot's, and the keys and prefixes spread over the
// cluster. The length before the tag keeps names apart and a tag never
// empty (Redis hashes a whole key whose tag is empty).
func (l *Limiter) bucket(space, key, last string) string {
	if !l.c.cluster {
		return space + key
	}
	tag := "{" + strconv.Itoa(len(last)) + ":" + last + "}"
	if space == l.prefix {
		return space + tag
	}
	return space + tag + key
}

// bothScript is GCRA over the buckets KEYS[1], KEYS[2] and any after them
// in turn, in one round trip: each is looked at only when those before it
// allowed. ARGV gives each bucket's burst and emission interval (seconds
// per token). A bucket's key and value are redis_rate's (its theoretical arrival time,
// in seconds since 2017 by Redis's clock, TIME), so Allow and AllowBoth
// take from the same buckets; the offset keeps microseconds in Lua's
// doubles. Each bucket answers {allowed, remaining, retry after µs,
// reset after µs}.
var bothScript = redis.NewScript(`
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1483228800) + tonumber(t[2]) / 1e6
local out = {}
for i = 1, #KEYS do
  local burst = tonumber(ARGV[2 * i - 1])
  local interval = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  local newTat = tat + interval
  local diff = now - (newTat - burst * interval)
  if diff < 0 then
    out[i] = {0, 0, math.ceil(-diff * 1e6), math.ceil((tat - now) * 1e6)}
    return out
  end
  local reset = newTat - now
  redis.call('SET', KEYS[i], string.format('%.6f', newTat), 'PX', math.max(1, math.ceil(reset * 1000)))
  out[i] = {1, math.floor(diff / interval + 1e-9), 0, math.ceil(reset * 1e6)}
end
return out
`)

// AllowBoth implements ratelimit.Limiter: both buckets in one script, so
// one round trip to Redis.
func (l *Limiter) AllowBoth(ctx context.Context, first, second ratelimit.Bucket) (ratelimit.Decision, ratelimit.Decision) {
	ds, ok := l.allowChain(ctx, []ratelimit.Bucket{first, second})
	if !ok {
		return l.fallback.AllowBoth(ctx, first, second)
	}
	return ds[0], ds[1]
}

// AllowThree implements ratelimit.Limiter: the three buckets in one
// script, as AllowBoth's two.
func (l *Limiter) AllowThree(ctx context.Context, first, second, third ratelimit.Bucket) (ratelimit.Decision, ratelimit.Decision, ratelimit.Decision) {
	ds, ok := l.allowChain(ctx, []ratelimit.Bucket{first, second, third})
	if !ok {
		return l.fallback.AllowThree(ctx, first, second, third)
	}
	return ds[0], ds[1], ds[2]
}

// maxChain is the most buckets allowChain takes.
const maxChain = 3

// allowChain takes a token from each of buckets (at most maxChain) in
// turn, in one script, until one refuses: the last is Allow's bucket of
// its key, those before it AllowBoth's first buckets. ok is false when
// Redis did not answer and the fallback is to.
func (l *Limiter) allowChain(ctx context.Context, buckets []ratelimit.Bucket) (out [maxChain]ratelimit.Decision, ok bool) {
	// An invalid limit allows everything and keeps nothing: only the
	// valid buckets go to Redis, in order.
	var (
		keys   []string
		args   []any
		limits []ratelimit.Limit
	)
	for i, b := range buckets {
		if b.Limit.Valid() {
			// redis_rate's keys: the last is Allow's bucket.
			space := l.firsts
			if i == len(buckets)-1 {
				space = l.prefix
			}
			keys = append(keys, "rate:"+l.bucket(space, b.Key, buckets[len(buckets)-1].Key))
			args = append(args, b.Limit.Burst, 1/b.Limit.Rate)
			limits = append(limits, b.Limit)
		}
	}
	if len(keys) == 0 {
		for i := range buckets {
			out[i] = ratelimit.Decision{Allowed: true}
		}
		return out, true
	}
	call := &bothCall{keys: keys, args: args, wake: make(chan struct{})}
	call.health, call.err = l.c.healthOf(context.WithoutCancel(ctx), keys[0])
	// Counted once, as call counts: runBoth counts its fallbacks.
	l.count.Call()
	l.batcherOf(call.health).do(call, func(calls []*bothCall) { l.runBoth(ctx, calls) })
	if !call.ok {
		return out, false
	}
	res := call.res
	ds := make([]ratelimit.Decision, 0, len(limits))
	for i, r := range res {
		if i >= len(limits) {
			break
		}
		v, _ := r.([]any)
		n := func(j int) int64 {
			if j < len(v) {
				x, _ := v[j].(int64)
				return x
			}
			return 0
		}
		d := ratelimit.Decision{Allowed: n(0) == 1, Limit: limits[i].Burst, Remaining: int(max(0, n(1))),
			Reset: time.Duration(max(0, n(3))) * time.Microsecond}
		if !d.Allowed {
			d.RetryAfter = time.Duration(max(0, n(2))) * time.Microsecond
		}
		ds = append(ds, d)
	}
	// Put the answers back where the invalid buckets were left out.
	for i, b := range buckets {
		if !b.Limit.Valid() {
			out[i] = ratelimit.Decision{Allowed: true}
			continue
		}
		if len(ds) == 0 {
			break // one before was refused: the rest stay zero
		}
		out[i], ds = ds[0], ds[1:]
		if !out[i].Allowed {
			break
		}
	}
	return out, true
}

// batcherOf is the batcher of the calls of the node whose health is h:
// one Redis's, or on a cluster its master's.
func (l *Limiter) batcherOf(h *health) *batcher {
	if h == l.c.health {
		return &l.batch
	}
	b, ok := l.nodeBatch.Load(h)
	if !ok {
		b, _ = l.nodeBatch.LoadOrStore(h, new(batcher))
	}
	return b.(*batcher)
}

// bothCall is one AllowBoth's or AllowThree's script call: its keys and
// arguments, the health of its node (healthOf, with its error), and once
// woken, its answer, or ok false when the fallback is to answer.
type bothCall struct {
	keys   []string
	args   []any
	health *health
	err    error
	res    []any
	ok     bool
	// wake is closed when the call is answered, or when it is to lead
	// the next pipeline (lead).
	wake chan struct{}
	lead bool
}

// A batcher sends concurrent AllowBoth and AllowThree calls to Redis
// together, in one pipeline a round trip, as a group commit does: a call
// that finds fewer than maxPipelines in flight sends its own and what is
// queued, then hands the pipeline's turn to the first call still queued;
// the others wait for their answer. A call alone is sent at once, so one
// request's latency is one round trip as before; under load the system
// calls and the server's reads are shared by the calls of a pipeline.
// On a cluster each master has one: a master that hangs holds its own
// pipelines until they time out, not those of the masters that answer.
type batcher struct {
	mu      sync.Mutex
	queue   []*bothCall
	running int // pipelines in flight, or handed to a call to send
}

// maxPipelines bounds the pipelines in flight at once; maxBatch the calls
// in one.
const maxPipelines, maxBatch = 2, 256

// do answers c through run, which sends a batch of calls and sets each
// one's answer.
func (b *batcher) do(c *bothCall, run func([]*bothCall)) {
	b.mu.Lock()
	if b.running >= maxPipelines {
		b.queue = append(b.queue, c)
		b.mu.Unlock()
		<-c.wake
		if !c.lead {
			return
		}
		b.mu.Lock() // c leads, off the queue, counted in running
	} else {
		b.running++
	}
	n := min(len(b.queue), maxBatch-1)
	batch := make([]*bothCall, 0, n+1)
	batch = append(append(batch, c), b.queue[:n]...)
	if b.queue = b.queue[n:]; len(b.queue) == 0 {
		b.queue = nil
	}
	b.mu.Unlock()
	// Deferred, so that even a panic in run hands the turn on and wakes
	// the batch's calls, which then answer from their fallback.
	defer func() {
		b.mu.Lock()
		if len(b.queue) > 0 {
			next := b.queue[0]
			b.queue = b.queue[1:]
			next.lead = true
			close(next.wake)
		} else {
			b.running--
		}
		b.mu.Unlock()
		for _, x := range batch[1:] {
			close(x.wake)
		}
	}()
	run(batch)
}

// runBoth runs the calls' scripts, one node's, in one pipeline, each call
// judged by the health of its node: a call whose node failed within RetryAfter falls
// back at once, and one whose command failed falls back alone, its node
// taken for down. A node that does not know the script (new or restarted)
// is sent it whole, with EVAL, which leaves it known.
func (l *Limiter) runBoth(ctx context.Context, calls []*bothCall) {
	ctx = context.WithoutCancel(ctx)
	sent := make([]int, 0, len(calls))
	for i, c := range calls {
		switch h := c.health; {
		case !h.usable():
			h.fellBack(l.count, nil)
		case c.err != nil:
			h.fellBack(l.count, c.err)
		default:
			sent = append(sent, i)
		}
	}
	cmds := make([]*redis.Cmd, len(calls))
	send := func(which []int, eval bool) {
		// Each command keeps its own error, which is all that is read.
		_, _ = l.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range which {
				if c := calls[i]; eval {
					cmds[i] = bothScript.Eval(ctx, p, c.keys, c.args...)
				} else {
					cmds[i] = bothScript.EvalSha(ctx, p, c.keys, c.args...)
				}
			}
			return nil
		})
	}
	if len(sent) > 0 {
		send(sent, false)
	}
	var unknown []int
	for _, i := range sent {
		if err := cmds[i].Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			unknown = append(unknown, i)
		}
	}
	if len(unknown) > 0 {
		send(unknown, true)
	}
	for _, i := range sent {
		c := calls[i]
		h := c.health
		if err := cmds[i].Err(); err != nil {
			h.fellBack(l.count, err)
			continue
		}
		h.answered()
		res, err := cmds[i].Slice()
		if c.res, c.ok = res, err == nil; !c.ok {
			h.fellBack(l.count, nil) // this call only: Redis answered
		}
	}
}
