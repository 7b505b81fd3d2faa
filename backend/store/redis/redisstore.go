// Package redisstore keeps the state every replica must share on the hot
// path in Redis: the rate limits (Limiter, GCRA through
// github.com/go-redis/redis_rate), the fraud windows of billable clicks
// (Windows), the used decision ids (Decisions) and the flags of the budgets
// spent today (BudgetFlags). The first three pass the conformance suites of their
// interfaces in backend/store/storetest.
//
// Redis being unreachable never fails a request: each store answers from
// a fallback of the process's own that its caller gives (the in-process
// ratelimit.Set, the bbolt Windows and Decisions), counts the call in
// adlink_redis_fallback_total and logs, at most once per LogEvery. After a
// failure the stores leave Redis alone for RetryAfter, so an outage costs
// one timeout per interval and not one per request; the first call after
// that tries Redis again, and uses it from then on if it answers.
//
// The stores run on one Redis or on a Redis Cluster (Open). On a cluster
// each script's keys are one slot's: they share a hash tag, the identity
// they serve (an api key's, a client prefix's), so that requests spread
// over the nodes. On one Redis the keys keep the names they always had,
// which replicas of older versions share. On a cluster the health is each
// master's: a call goes to its fallback at once only when the master that
// serves its key (as the client's map of the slots has it) failed within
// RetryAfter, and the keys of the masters that answer stay shared. Each
// master's fallbacks are logged at most once per LogEvery, with its
// address. After a failover or a slot move the key's master is another,
// and its health applies: a master's failure has the client learn the
// map of the slots anew.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/metrics"
)

// Options tune a Client; the zero value is the default.
type Options struct {
	// Prefix starts every key the stores write ("adlink:"), so that one
	// Redis can serve several deployments. It holds no braces, which
	// would make a hash tag of its own on a cluster.
	Prefix string
	// RetryAfter is how long the stores answer from their fallbacks after
	// Redis failed, before they try it again (one second).
	RetryAfter time.Duration
	// LogEvery bounds how often a fallback is logged (ten seconds).
	LogEvery time.Duration
	// Logger gets the fallback and recovery lines; nil logs nothing.
	Logger *slog.Logger
	// Metrics count the calls and the fallbacks; nil counts nothing.
	Metrics *metrics.Metrics
	// Now is the clock that times RetryAfter and LogEvery; tests set it.
	Now func() time.Time
}

// libraryLog is where go-redis's own lines go (a dial refused, a pool's
// error): the Logger of the Client opened last, at debug level, since the
// stores log an outage themselves, once every LogEvery. The library's
// default would write them as plain text to stderr, between the server's
// JSON lines, once per failed dial. The library has one logger for the
// process, hence one variable.
var libraryLog atomic.Pointer[slog.Logger]

func init() { redis.SetLogger(libraryLogger{}) }

// libraryLogger is go-redis's logger, writing to libraryLog.
type libraryLogger struct{}

func (libraryLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := libraryLog.Load(); l != nil {
		l.DebugContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), "component", "redis")
	}
}

// Timeouts a URL does not set: a limit check on the hot path must not
// wait the client library's seconds for a Redis that is gone.
const (
	defaultDialTimeout = 250 * time.Millisecond
	defaultIOTimeout   = 250 * time.Millisecond
)

// Client is one connection pool to Redis, or to each node of a Redis
// Cluster, and the health the stores made from it share: when one store
// finds Redis gone, the others fall back too; on a cluster, for the keys
// of the master that failed. It is safe for concurrent use.
type Client struct {
	rdb    redis.UniversalClient
	prefix string
	// health is one Redis's. On a cluster it is the map of the slots':
	// whether the client could learn which node serves a key.
	health *health
	// nodes is rdb on a cluster, nil on one Redis; nodeHealth holds the
	// health of each of its masters by address, made by newHealth.
	nodes      *redis.ClusterClient
	nodeHealth sync.Map
	newHealth  func(node string) *health
	// cluster is whether rdb is a Redis Cluster's: the keys one script
	// takes then share a hash tag that a single Redis's keys do not have.
	cluster bool
	// metrics give each store its counters when it is made.
	metrics *metrics.Metrics
}

// Open returns a Client for rawURL: a redis:// or rediss:// URL for one
// Redis (the go-redis URL format:
// redis://user:password@host:port/db?dial_timeout=1s), or a
// redis-cluster:// or rediss-cluster:// URL for a Redis Cluster, which
// names some of its nodes (ParseURL).
// It does not connect: a Redis that is down at start-up is one that is
// down later, and the stores fall back until it is up.
func Open(rawURL string, o Options) (*Client, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = "adlink:"
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.LogEvery <= 0 {
		o.LogEvery = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	libraryLog.Store(o.Logger)
	var (
		rdb  redis.UniversalClient
		addr string
	)
	if c := u.cluster; c != nil {
		tune(u.query, &c.DialTimeout, &c.ReadTimeout, &c.WriteTimeout, &c.MaxRetries, &c.Protocol,
			&c.DialerRetries, &c.DialerRetryTimeout, &c.MinRetryBackoff, &c.MaxRetryBackoff)
		// The cluster client tries a node that failed again itself, once
		// for each redirect it may follow, each try a node's retries: one
		// try again, as one Redis's, follows one MOVED or ASK, and a node
		// that does not answer delays the fallback no longer than one
		// Redis would.
		if !u.query.Has("max_retries") {
			c.MaxRetries = -1 // none of the node's own
		}
		if !u.query.Has("max_redirects") {
			c.MaxRedirects = 1
		}
		rdb, addr = redis.NewClusterClient(c), strings.Join(c.Addrs, ",")
	} else {
		c := u.single
		tune(u.query, &c.DialTimeout, &c.ReadTimeout, &c.WriteTimeout, &c.MaxRetries, &c.Protocol,
			&c.DialerRetries, &c.DialerRetryTimeout, &c.MinRetryBackoff, &c.MaxRetryBackoff)
		rdb, addr = redis.NewClient(c), c.Addr
	}
	log := o.Logger.With("component", "redis", "addr", addr)
	c := &Client{rdb: rdb, prefix: o.Prefix, cluster: u.cluster != nil, metrics: o.Metrics}
	c.newHealth = func(node string) *health {
		return &health{now: o.Now, retryAfter: o.RetryAfter, logEvery: o.LogEvery,
			log: log.With("node", node), failed: c.relearn}
	}
	c.health = &health{now: o.Now, retryAfter: o.RetryAfter, logEvery: o.LogEvery, log: log}
	c.nodes, _ = rdb.(*redis.ClusterClient)
	return c, nil
}

// tune sets the options a URL's query q does not: one Redis's and a
// cluster's are of two types, with fields of the same names.
func tune(q url.Values, dial, read, write *time.Duration, retries, protocol, dialerRetries *int,
	dialerRetryTimeout, minBackoff, maxBackoff *time.Duration) {
	if !q.Has("dial_timeout") {
		*dial = defaultDialTimeout
	}
	if !q.Has("read_timeout") {
		*read = defaultIOTimeout
	}
	if !q.Has("write_timeout") {
		*write = defaultIOTimeout
	}
	if !q.Has("max_retries") {
		// One retry gets past a pooled connection the server closed when
		// it restarted; more only delay the fallback.
		*retries = 1
	}
	if !q.Has("protocol") {
		// RESP2: the stores need no server pushes, and with RESP3 the
		// client looks for them around every command.
		*protocol = 2
	}
	// A dial refused is refused again a moment later: the stores' own
	// RetryAfter paces the next attempt.
	*dialerRetries, *dialerRetryTimeout = 1, time.Millisecond
	if !q.Has("max_retry_backoff") {
		*minBackoff, *maxBackoff = time.Millisecond, 10*time.Millisecond
	}
}

// Ping checks that Redis answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.rdb.Ping(ctx).Err()
}

// Close closes the connections.
func (c *Client) Close() error { return c.rdb.Close() }

// call runs f against Redis unless the node that serves key (Redis
// itself, or a cluster's master of key's slot) failed within RetryAfter,
// and reports whether f succeeded; when it did not, the caller answers
// from its fallback. The caller's cancellation does not reach Redis: a
// command cut off half way leaves the caller not knowing whether it was
// applied, and the client's own timeouts bound it. Every call counts in
// adlink_redis_calls_total, each fallback in adlink_redis_fallback_total
// too: their share tells an outage from a timeout now and then.
func (c *Client) call(ctx context.Context, store metrics.RedisStore, key string, f func(ctx context.Context) error) bool {
	ctx = context.WithoutCancel(ctx)
	h, err := c.healthOf(ctx, key)
	store.Call()
	if !h.usable() {
		h.fellBack(store, nil)
		return false
	}
	if err == nil {
		err = f(ctx)
	}
	if err != nil {
		h.fellBack(store, err)
		return false
	}
	h.answered()
	return true
}

// healthOf is the health of the node that serves key: one Redis's, or on
// a cluster the health of the master the client's map of the slots names
// for key's slot. While the client cannot learn the map (no node it knows
// answers), it is the map's, with the error when it was tried.
func (c *Client) healthOf(ctx context.Context, key string) (*health, error) {
	if c.nodes == nil || !c.health.usable() {
		return c.health, nil
	}
	// The map is learned once and then read, and refreshed in the
	// background as slots move: this asks no node unless it is unknown.
	node, err := c.nodes.MasterForKey(ctx, key)
	if err != nil {
		return c.health, err
	}
	c.health.answered()
	addr := node.Options().Addr
	h, ok := c.nodeHealth.Load(addr)
	if !ok {
		// A node's health is kept for as long as the Client: a cluster
		// has a few nodes, and one that leaves is rarely replaced by
		// many under new addresses.
		h, _ = c.nodeHealth.LoadOrStore(addr, c.newHealth(addr))
	}
	return h.(*health), nil
}

// relearn has the cluster client learn the map of the slots anew, in the
// background, after a master failed: another may serve its slots now (a
// replica promoted, a slot moved), and the client asks for the map again
// only every minute, or when a master that answers redirects it. A
// master that does not answer redirects nothing.
func (c *Client) relearn() { c.nodes.ReloadState(context.Background()) }

// health is whether Redis, or one node of a cluster, answers, as the
// stores last found it.
type health struct {
	now        func() time.Time
	retryAfter time.Duration
	logEvery   time.Duration
	log        *slog.Logger
	failed     func() // called when a call failed; nil for none

	downUntil atomic.Int64 // Unix nanoseconds; Redis is not tried before
	down      atomic.Bool  // a failure has not been followed by an answer

	mu      sync.Mutex
	lastLog time.Time
	missed  int // fallbacks since the last line, this one included
}

func (h *health) usable() bool { return h.now().UnixNano() >= h.downUntil.Load() }

// fellBack counts one call answered by a fallback; err is Redis's error,
// nil when Redis was not tried.
func (h *health) fellBack(store metrics.RedisStore, err error) {
	store.Fallback()
	now := h.now()
	if err != nil {
		h.downUntil.Store(now.Add(h.retryAfter).UnixNano())
		h.down.Store(true)
		if h.failed != nil {
			h.failed()
		}
	}
	h.mu.Lock()
	h.missed++
	if !h.lastLog.IsZero() && now.Sub(h.lastLog) < h.logEvery {
		h.mu.Unlock()
		return
	}
	missed := h.missed
	h.lastLog, h.missed = now, 0
	h.mu.Unlock()
	if err == nil {
		err = errors.New("redis failed less than retry_after ago")
	}
	h.log.Warn("redis unreachable: answering from this process's own state", "store", store.Name(),
		"err", err, "retry_after", h.retryAfter, "fallbacks", missed)
}

// answered notes a call Redis answered, and logs Redis's return once.
func (h *health) answered() {
	if h.down.Load() && h.down.CompareAndSwap(true, false) {
		h.log.Info("redis answers again: using the shared state")
	}
}
