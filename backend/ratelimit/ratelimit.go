// Package ratelimit keeps one token bucket per key (an api_key, a client
// IP, a site). Limiter is the contract; Set keeps the buckets in this
// process and forgets those idle long enough to be full again, so memory
// stays bounded however many keys arrive.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket: Rate tokens per second refill it up to Burst.
// A request takes one token.
type Limit struct {
	Rate  float64
	Burst int
}

// Valid reports whether l limits anything sensibly: a positive rate and
// burst.
func (l Limit) Valid() bool { return l.Rate > 0 && l.Burst >= 1 && !math.IsInf(l.Rate, 0) }

// Share is the part f (0 < f <= 1) of l: f of its rate, and f of its
// burst rounded down but at least one. It sizes the bucket of one client
// network inside a key's: Share(1) is l itself. A burst that is a whole
// number of tokens, such as 0.29 of 100, stays whole though its product
// falls just below it in floating point.
func (l Limit) Share(f float64) Limit {
	if f >= 1 || !(f > 0) {
		return l
	}
	b := float64(l.Burst) * f
	return Limit{Rate: l.Rate * f, Burst: max(1, int(b+b*1e-9))}
}

// fillTime is how long an empty bucket takes to fill.
func (l Limit) fillTime() time.Duration {
	return time.Duration(float64(l.Burst) / l.Rate * float64(time.Second))
}

// Decision is the outcome of one Allow: whether the request may go on and
// what the X-RateLimit-* headers and Retry-After report.
type Decision struct {
	Allowed bool
	// Limit is the bucket's size.
	Limit int
	// Remaining is the whole tokens left after this request.
	Remaining int
	// Reset is how long until the bucket is full again.
	Reset time.Duration
	// RetryAfter is, for a refused request, how long until one token is
	// back.
	RetryAfter time.Duration
}

// Limiter keeps the token buckets of one kind of key. Set is the in-process
// Limiter; every implementation passes storetest.Limits. Implementations
// are safe for concurrent use.
type Limiter interface {
	// Allow takes a token from key's bucket under l and says whether the
	// request may go on. A key's first bucket starts full; keys do not
	// share buckets. Of concurrent Allows on one key no more are allowed
	// than the bucket holds and refills meanwhile. A key whose l changed is
	// judged under the new one (its bucket may start full again). An
	// invalid l (Limit.Valid) allows everything: Decision{Allowed: true}.
	//
	// Allow cannot fail: an implementation that cannot reach its state
	// decides from a fallback of its own and reports that itself. The
	// state is not durable; forgetting a bucket only gives its key a full
	// one.
	Allow(ctx context.Context, key string, l Limit) Decision

	// AllowBoth takes a token from first's bucket and then, only if that
	// was allowed, from second's, each judged as Allow judges: a request
	// under two buckets, such as a client network's share of a key's
	// limit and the key's, where a request refused by the first must not
	// take from the second. second is Allow's bucket of its key; first is
	// a bucket of AllowBoth's own, keyed apart from Allow's, so that a
	// flood of first keys cannot crowd out Allow's buckets. A Limiter that
	// keeps its buckets elsewhere makes the two one step (one round trip).
	// When first is refused, the second Decision is the zero Decision.
	AllowBoth(ctx context.Context, first, second Bucket) (Decision, Decision)

	// AllowThree is AllowBoth over three buckets in turn: first's, then
	// second's only if first's allowed, then third's only if both allowed,
	// such as a client network's share of a key's limit, its prefix's share
	// and the key's. first and second are AllowBoth's first buckets (one
	// space of keys, apart from Allow's); third is Allow's bucket of its
	// key. The Decisions after a refused one are zero Decisions; an
	// invalid limit allows, as Allow's does, and keeps nothing. A Limiter
	// that keeps its buckets elsewhere makes the three one step.
	AllowThree(ctx context.Context, first, second, third Bucket) (Decision, Decision, Decision)
}

// Bucket names one token bucket of a Limiter: its key and its limit.
type Bucket struct {
	Key   string
	Limit Limit
}

// DefaultMaxKeys bounds the buckets a Set holds when Options leave it 0.
const DefaultMaxKeys = 100_000

// Set is the buckets of one kind of key, in this process. It is safe for
// concurrent use.
type Set struct {
	now     func() time.Time
	maxKeys int

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time

	firsts *Set // AllowBoth's first buckets; nil in firsts itself
}

var _ Limiter = (*Set)(nil)

type bucket struct {
	lim  *rate.Limiter
	l    Limit
	last time.Time // last Allow
}

// Options tune a Set; the zero value is the default.
type Options struct {
	// MaxKeys bounds the buckets held (DefaultMaxKeys). At the bound, full
	// (idle) buckets are swept; if all are busy, a tenth of them are
	// dropped, which only ever gives their keys fresh buckets.
	MaxKeys int
	// Now is the clock; tests set it.
	Now func() time.Time
}

// New returns an empty Set.
func New(o Options) *Set {
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Set{now: o.Now, maxKeys: o.MaxKeys, buckets: make(map[string]*bucket),
		firsts: &Set{now: o.Now, maxKeys: o.MaxKeys, buckets: make(map[string]*bucket)}}
}

// sweepEvery is how often Allow looks for idle buckets when the Set is not
// at its bound.
const sweepEvery = time.Minute

// Allow implements Limiter. A bucket whose limit changed (a partner's new
// limits) starts again, full, under the new one.
func (s *Set) Allow(_ context.Context, key string, l Limit) Decision {
	if !l.Valid() {
		return Decision{Allowed: true}
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	if b == nil || b.l != l {
		if b == nil && len(s.buckets) >= s.maxKeys {
			s.sweep(now)
			s.dropSome()
		} else if now.Sub(s.lastSweep) >= sweepEvery {
			s.sweep(now)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.Rate), l.Burst), l: l}
		s.buckets[key] = b
	}
	b.last = now
	d := Decision{Limit: l.Burst, Allowed: b.lim.AllowN(now, 1)}
	tokens := b.lim.TokensAt(now)
	d.Remaining = max(0, int(math.Floor(tokens)))
	d.Reset = seconds((float64(l.Burst) - tokens) / l.Rate)
	if !d.Allowed {
		d.RetryAfter = seconds((1 - tokens) / l.Rate)
	}
	return d
}

// AllowBoth implements Limiter. The first buckets are a Set of their own,
// bounded apart from Allow's.
func (s *Set) AllowBoth(ctx context.Context, first, second Bucket) (Decision, Decision) {
	d := s.firsts.Allow(ctx, first.Key, first.Limit)
	if !d.Allowed {
		return d, Decision{}
	}
	return d, s.Allow(ctx, second.Key, second.Limit)
}

// AllowThree implements Limiter: first and second are taken from the
// Set of AllowBoth's first buckets.
func (s *Set) AllowThree(ctx context.Context, first, second, third Bucket) (a, b, c Decision) {
	if a = s.firsts.Allow(ctx, first.Key, first.Limit); !a.Allowed {
		return a, b, c
	}
	if b = s.firsts.Allow(ctx, second.Key, second.Limit); !b.Allowed {
		return a, b, c
	}
	return a, b, s.Allow(ctx, third.Key, third.Limit)
}

func seconds(f float64) time.Duration {
	if f <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(f * float64(time.Second)))
}

// sweep drops the buckets idle long enough to have filled up: forgetting
// them changes nothing, since a new bucket starts full. s.mu is held.
func (s *Set) sweep(now time.Time) {
	s.lastSweep = now
	for k, b := range s.buckets {
		if now.Sub(b.last) >= b.l.fillTime() {
			delete(s.buckets, k)
		}
	}
}

// dropSome drops buckets, in the map's random order, until a tenth of the
// bound is free: a flood of new keys then costs one pass per tenth of the
// bound, not one per key. A dropped key only gets a fresh bucket. s.mu is
// held.
func (s *Set) dropSome() {
	keep := s.maxKeys - max(1, s.maxKeys/10)
	for k := range s.buckets {
		if len(s.buckets) <= keep {
			break
		}
		delete(s.buckets, k)
	}
}

// Len returns the number of buckets held.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buckets)
}
