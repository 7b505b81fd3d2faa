package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/catalog"
)

// Versions are the catalog announcements of the replicas on this Redis:
// the last one in a key, and each one published on a channel, both under
// the client's prefix, so that deployments sharing a Redis do not hear
// each other.
//
// On a cluster the key and the channel share a hash tag: the node that
// sets the key and publishes is then the one the listeners subscribe on,
// which hands them the message at once. Published on another node, it
// would reach theirs later over the cluster's bus, maybe after a listener
// that subscribed meanwhile had read the key and heard it as the record.
func (c *Client) Versions() catalog.Versions {
	name := c.prefix + "catalog"
	if c.cluster {
		name = "{" + name + "}"
	}
	return &versions{c: c, key: name + ":version", channel: name}
}

type versions struct {
	c            *Client
	key, channel string
}

var _ catalog.Versions = (*versions)(nil)

// listenCheck is how long a listener waits for a message before it pings
// Redis to learn whether the connection still stands.
const listenCheck = 15 * time.Second

func (v *versions) Announce(ctx context.Context, a catalog.Announcement) error {
	if err := a.Check(); err != nil {
		return err
	}
	// One script: a replica that reads the key after the message was
	// published finds this announcement or a later one. The channel is no
	// key (on a cluster PUBLISH reaches every node), so the script's one
	// key is the version's, and it runs on a cluster too.
	return announceScript.Run(ctx, v.c.rdb, []string{v.key}, a.String(), v.channel).Err()
}

// announceScript sets the key KEYS[1] to ARGV[1] and publishes it on the
// channel ARGV[2], in one step.
var announceScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
return 1`)

// announceOver sets the key KEYS[1] and publishes the announcement on the
// channel ARGV[3], in one step, if the key still holds ARGV[2] ("" for
// none).
var announceOver = redis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1`)

func (v *versions) AnnounceOver(ctx context.Context, a, prev catalog.Announcement) (bool, error) {
	if err := a.Check(); err != nil {
		return false, err
	}
	was := ""
	if !prev.IsZero() {
		was = prev.String()
	}
	n, err := announceOver.Run(ctx, v.c.rdb, []string{v.key}, a.String(), was, v.channel).Int()
	return n == 1, err
}

func (v *versions) Recorded(ctx context.Context) (catalog.Announcement, error) {
	s, err := v.c.rdb.Get(ctx, v.key).Result()
	if errors.Is(err, redis.Nil) {
		return catalog.Announcement{}, nil
	}
	if err != nil {
		return catalog.Announcement{}, err
	}
	return catalog.ParseAnnouncement(s)
}

func (v *versions) Listen(ctx context.Context, heard func(catalog.Announcement, bool)) {
	catalog.ListenAgain(ctx, v.c.health.log.With("channel", v.channel), v.c.health.retryAfter, v.listen, heard)
}

// listen subscribes, hands heard the recorded announcement, then each
// message, until the connection fails or ctx ends.
func (v *versions) listen(ctx context.Context, heard func(catalog.Announcement, bool)) error {
	ps := v.c.rdb.Subscribe(ctx)
	defer ps.Close()
	// A read blocks on the connection, not on ctx: closing it ends the
	// read.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	if err := ps.Subscribe(ctx, v.channel); err != nil {
		return err
	}
	if _, err := ps.ReceiveTimeout(ctx, listenCheck); err != nil { // the subscription's confirmation
		return err
	}
	// Subscribed first, read second: what is announced in between comes
	// twice, never not at all.
	rec, err := v.Recorded(ctx)
	if err != nil {
		return err
	}
	heard(rec, true)
	unanswered := 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, listenCheck)
		var timeout interface{ Timeout() bool }
		if errors.As(err, &timeout) && timeout.Timeout() {
			// Quiet, or gone without a word: a ping's answer tells.
			if unanswered++; unanswered > 1 {
				return err
			}
			if err := ps.Ping(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		unanswered = 0
		m, ok := msg.(*redis.Message)
		if !ok {
			continue // a pong
		}
		a, err := catalog.ParseAnnouncement(m.Payload)
		if err != nil {
			v.c.health.log.Warn("catalog announcements: dropped a message", "err", err)
			continue
		}
		heard(a, false)
	}
}
