package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
)

// Windows are clicks.Windows in Redis, shared by every replica. A claim is
// one Lua script, so concurrent claims from any replica are judged one
// after another. Keys are by UTC day, as the bbolt windows' buckets: a
// network and ad's billable click time, and the network's count of
// billable clicks; each expires once no later claim can read it (the end of
// the next day, plus an hour for clocks that disagree), so Redis forgets
// old days by itself. A network's keys share one hash tag with its
// prefix's counts (the /48's or the IPv4 /24's tag), on all ads and on
// each, so the script runs on a Redis Cluster too.
//
// A claim is as durable as Redis makes it: with appendonly and appendfsync
// always, as clicks.Windows promises; with less, a Redis crash forgets the
// last claims, which lets a repeat bill.
//
// When Redis does not answer, the fallback (the replica's own bbolt
// windows) judges the claim. That keeps one click per network and ad per
// window within each replica, but not across them: during an outage a
// network can bill an ad once on each replica, and its daily cap and its
// prefix's once on each; and what the fallback recorded is not in Redis, so
// a click billed during the outage does not make a click after it a
// repeat on Redis.
type Windows struct {
	c        *Client
	prefix   string
	fallback clicks.Windows
	count    metrics.RedisStore
}

var _ clicks.Windows = (*Windows)(nil)

// Windows returns the Windows in Redis; fallback judges claims while
// Redis does not answer.
func (c *Client) Windows(fallback clicks.Windows) *Windows {
	return &Windows{c: c, prefix: c.prefix + "win:", fallback: fallback,
		count: c.metrics.RedisStore("windows")}
}

// claimScript judges and records one claim. KEYS: the network and ad's
// time on the day before, the day and the day after; the network's count
// on the day; the prefix's (/48's or /24's) count on the day. ARGV: the
// claim's Unix seconds and nanoseconds, the window in nanoseconds, the
// network's cap (<= 0: none), the keys' expiry in milliseconds, the
// prefix's cap (<= 0: none, and its count is left alone).
// Times are split in two because Lua's numbers are doubles: the gap of
// two nearby times in nanoseconds is exact, their Unix nanoseconds are not.
var claimScript = redis.NewScript(`
local s, ns = tonumber(ARGV[1]), tonumber(ARGV[2])
local window = tonumber(ARGV[3])
for i = 1, 3 do
  local v = redis.call('GET', KEYS[i])
  if v then
    local sp = string.find(v, ' ', 1, true)
    local gap = (s - tonumber(string.sub(v, 1, sp - 1))) * 1e9 + (ns - tonumber(string.sub(v, sp + 1)))
    if gap < window and -gap < window then return 1 end
  end
end
local limit = tonumber(ARGV[4])
local n = tonumber(redis.call('GET', KEYS[4]) or '0')
if limit > 0 and n >= limit then return 2 end
local alimit = tonumber(ARGV[7])
if alimit > 0 and tonumber(redis.call('GET', KEYS[6]) or '0') >= alimit then return 4 end
local plimit = tonumber(ARGV[6])
if plimit > 0 and tonumber(redis.call('GET', KEYS[5]) or '0') >= plimit then return 3 end
redis.call('SET', KEYS[2], ARGV[1] .. ' ' .. ARGV[2], 'PX', ARGV[5])
redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[5])
if plimit > 0 then
  redis.call('INCR', KEYS[5])
  redis.call('PEXPIRE', KEYS[5], ARGV[5])
end
if alimit > 0 then
  redis.call('INCR', KEYS[6])
  redis.call('PEXPIRE', KEYS[6], ARGV[5])
end
return 0
`)

// Claim implements clicks.Windows.
func (w *Windows) Claim(ctx context.Context, c clicks.Claim) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	at := c.At
	day := at.Unix() / 86400
	if at.Unix() < 0 && at.Unix()%86400 != 0 {
		day-- // floor, as the UTC day of a time before the epoch
	}
	// The length before a name keeps apart names that would otherwise
	// spell the same key. The keys of a network of a prefix share the
	// prefix's hash tag, so that its claims and the prefix's count are one
	// slot's. ("/48 " names an IPv4 /24's tag too: the IPv6 networks' keys
	// stay as they were before /24s were counted; the IPv4 networks' took
	// their /24's tag then.)
	tag := c.Network
	if c.Prefix != "" {
		tag = "/48 " + c.Prefix
	}
	tagged := w.prefix + "{" + strconv.Itoa(len(tag)) + ":" + tag + "}:"
	base := tagged
	if c.Prefix != "" {
		base += strconv.Itoa(len(c.Network)) + ":" + c.Network + ":"
	}
	pair := func(d int64) string { return base + strconv.FormatInt(d, 10) + ":a:" + c.AdID }
	keys := []string{pair(day - 1), pair(day), pair(day + 1), base + strconv.FormatInt(day, 10) + ":n",
		tagged + strconv.FormatInt(day, 10) + ":p", tagged + strconv.FormatInt(day, 10) + ":q:" + c.AdID}
	// Kept until the end of the day after, which claims there still read.
	ttl := time.Unix((day+2)*86400, 0).Sub(at) + time.Hour
	prefixLimit, prefixAdLimit := 0, 0
	if c.Prefix != "" {
		prefixLimit, prefixAdLimit = max(c.PrefixLimit, 0), max(c.PrefixAdLimit, 0)
	}
	var code int64
	ok := w.c.call(ctx, w.count, keys[0], func(ctx context.Context) error {
		var err error
		code, err = claimScript.Run(ctx, w.c.rdb, keys, at.Unix(), at.Nanosecond(), int64(clicks.AdWindow),
			c.Limit, ttl.Milliseconds(), prefixLimit, prefixAdLimit).Int64()
		return err
	})
	if !ok {
		return w.fallback.Claim(ctx, c)
	}
	switch code {
	case 0:
		return "", nil
	case 1:
		return clicks.ReasonRepeat, nil
	case 2:
		return clicks.ReasonNetworkCap, nil
	case 3:
		return clicks.ReasonPrefixCap, nil
	case 4:
		return clicks.ReasonPrefixAdCap, nil
	}
	return "", fmt.Errorf("redis: windows: the claim script answered %d", code)
}
