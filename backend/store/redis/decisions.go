package redisstore

import (
	"context"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
)

// Decisions are clicks.Decisions in Redis, shared by every replica: a use
// is SET NX of the id's key, expiring with the click URL (plus a minute
// for clocks that disagree), so exactly one use of an id, on any replica,
// is its first. Durable as Redis makes it, as Windows are.
//
// When Redis does not answer, the fallback (the replica's own bbolt
// decisions) judges the use: an id then bills at most once per replica and
// once more through Redis, so a replayed click URL can bill once on each
// replica during an outage, and once again after it.
type Decisions struct {
	c        *Client
	prefix   string
	fallback clicks.Decisions
	count    metrics.RedisStore
}

var _ clicks.Decisions = (*Decisions)(nil)

// Decisions returns the Decisions in Redis; fallback judges uses while
// Redis does not answer.
func (c *Client) Decisions(fallback clicks.Decisions) *Decisions {
	return &Decisions{c: c, prefix: c.prefix + "dec:", fallback: fallback,
		count: c.metrics.RedisStore("decisions")}
}

// Use implements clicks.Decisions.
func (d *Decisions) Use(ctx context.Context, id string, at, expires time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !at.Before(expires) {
		return false, nil
	}
	var first bool
	key := d.prefix + id
	ok := d.c.call(ctx, d.count, key, func(ctx context.Context) error {
		var err error
		first, err = d.c.rdb.SetNX(ctx, key, 1, expires.Sub(at)+time.Minute).Result()
		return err
	})
	if !ok {
		return d.fallback.Use(ctx, id, at, expires)
	}
	return first, nil
}
