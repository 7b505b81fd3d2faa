package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
)

// BudgetFlags are budget.Flags in Redis: one set per budget day
// (clicks.BudgetDay, the date in the advertiser's time zone) of the flags
// raised, each "id@budget micros#nonce" (an advertiser, the daily budget
// its spend reached, and a nonce of its own, the raising replica's id and
// a random part, so that a raise adds a member even while an earlier flag
// of the budget is up, and its replica knows it its own; older replicas
// raise "id@budget micros" or a bare "id"), expiring two days after its
// last flag. One SADD to one key: a raise is atomic on a Cluster too. A flag raised on an advertiser's day stops it on
// that date wherever UTC's date is, and not on the next one; the sets
// of a UTC advertiser are those of its UTC days, as older replicas keyed
// every flag.
// While Redis does not answer, Raise counts a fallback and does nothing:
// each replica then stops only the ads its own clicks spent, and a flag
// raised meanwhile is not raised again, so the other replicas learn of
// that budget only from their own clicks (which the ledger does not
// bill); without a shared store (budget.Options.Shared unset), the
// replica raises it again at its first Sync once Redis answers. Raised and Clear count a fallback and say so: a credit's read of
// the flags (budget.Gate.Reread) must not take none for an answer, or a
// flag it could not take down would stop the advertiser again once Redis
// answers.
type BudgetFlags struct {
	c      *Client
	prefix string
	count  metrics.RedisStore
}

var _ budget.Flags = (*BudgetFlags)(nil)

// BudgetFlags returns the budget flags in Redis.
func (c *Client) BudgetFlags() *BudgetFlags {
	return &BudgetFlags{c: c, prefix: c.prefix + "budget:", count: c.metrics.RedisStore("budget")}
}

func (f *BudgetFlags) key(day clicks.BudgetDay) string {
	return f.prefix + strconv.FormatInt(int64(day), 10)
}

// Raise implements budget.Flags: it adds flag to the set of day.
func (f *BudgetFlags) Raise(ctx context.Context, flag string, day clicks.BudgetDay) error {
	key := f.key(day)
	f.c.call(ctx, f.count, key, func(ctx context.Context) error {
		_, err := f.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, key, flag)
			p.Expire(ctx, key, 48*time.Hour)
			return nil
		})
		return err
	})
	return nil
}

// Raised implements budget.Flags: the flags of day, or errFlagsDown
// while Redis does not answer.
func (f *BudgetFlags) Raised(ctx context.Context, day clicks.BudgetDay) ([]string, error) {
	var flags []string
	key := f.key(day)
	if !f.c.call(ctx, f.count, key, func(ctx context.Context) error {
		var err error
		flags, err = f.c.rdb.SMembers(ctx, key).Result()
		return err
	}) {
		return nil, errFlagsDown
	}
	return flags, nil
}

// clearScript removes from the set KEYS[1] every flag of the advertiser
// ARGV[1]: its bare id, each "id@budget", and each raise's
// "id@budget#nonce" (an id may hold "@" itself, so the rest must be a
// number, and a nonce of digits and lower-case letters). One key, so
// that it runs on the cluster's master of that key's slot.
var clearScript = redis.NewScript(`
local id = ARGV[1]
local n = 0
for _, m in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local rest = string.sub(m, #id + 2)
  if m == id or (string.sub(m, 1, #id + 1) == id .. '@' and
      (string.match(rest, '^[0-9]+$') or string.match(rest, '^[0-9]+#[0-9a-z]+$'))) then
    n = n + redis.call('SREM', KEYS[1], m)
  end
end
return n`)

// errFlagsDown is Raised's and Clear's error while Redis does not answer.
var errFlagsDown = errors.New("redis does not answer")

// Clear implements budget.Flags: it takes advertiser's flags out of the
// set of day. While Redis does not answer it counts a fallback and says
// so: the flag left stops the advertiser again at each replica's Sync.
func (f *BudgetFlags) Clear(ctx context.Context, advertiser string, day clicks.BudgetDay) error {
	key := f.key(day)
	if !f.c.call(ctx, f.count, key, func(ctx context.Context) error {
		return clearScript.Run(ctx, f.c.rdb, []string{key}, advertiser).Err()
	}) {
		return errFlagsDown
	}
	return nil
}

// Remove implements budget.Flags: it takes flags out of the set of day,
// in one SREM, and no other. While Redis does not answer it counts a
// fallback and says so: the gate tries again at its next Sync.
func (f *BudgetFlags) Remove(ctx context.Context, flags []string, day clicks.BudgetDay) error {
	if len(flags) == 0 {
		return nil
	}
	key := f.key(day)
	members := make([]any, len(flags))
	for i, fl := range flags {
		members[i] = fl
	}
	if !f.c.call(ctx, f.count, key, func(ctx context.Context) error {
		return f.c.rdb.SRem(ctx, key, members...).Err()
	}) {
		return errFlagsDown
	}
	return nil
}
