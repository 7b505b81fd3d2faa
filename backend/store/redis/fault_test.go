package redisstore_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/backend/store"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testredis"
)

// replica is one process's view of Redis: its Client, clock, metrics and
// log.
type replica struct {
	c   *redisstore.Client
	m   *metrics.Metrics
	log *syncBuffer
}

// clock is a clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newReplica(t *testing.T, url string, clk *clock) replica {
	t.Helper()
	r := replica{m: metrics.New(), log: &syncBuffer{}}
	r.c = open(t, url, redisstore.Options{Now: clk.Now, Metrics: r.m, RetryAfter: time.Second,
		LogEvery: time.Minute, Logger: slog.New(slog.NewTextHandler(r.log, nil))})
	return r
}

// fallbacks is the replica's adlink_redis_fallback_total for store.
func (r replica) fallbacks(t *testing.T, store string) float64 {
	t.Helper()
	return r.counter(t, "adlink_redis_fallback_total", store)
}

// calls is the replica's adlink_redis_calls_total for store.
func (r replica) calls(t *testing.T, store string) float64 {
	t.Helper()
	return r.counter(t, "adlink_redis_calls_total", store)
}

// counter is the replica's counter name for store.
func (r replica) counter(t *testing.T, name, store string) float64 {
	t.Helper()
	mfs, err := r.m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == store {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestLimitsFallBackWhileRedisIsDownAndShareAgainAfter(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	a, b := newReplica(t, srv.URL(), clk), newReplica(t, srv.URL(), clk)
	la := a.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	lb := b.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	one := ratelimit.Limit{Rate: 0.001, Burst: 1}
	allow := func(l ratelimit.Limiter, key string) bool { return l.Allow(t.Context(), key, one).Allowed }

	if !allow(la, "up") || allow(lb, "up") {
		t.Fatal("with Redis up, a key's one token was not shared by the two replicas")
	}

	srv.Kill()
	if !allow(la, "down") || allow(la, "down") {
		t.Error("with Redis down, replica A's own bucket did not hold the limit")
	}
	// The risk of the fallback: each replica has its own bucket.
	if !allow(lb, "down") {
		t.Error("with Redis down, replica B refused a key it never saw")
	}
	if got := a.fallbacks(t, "limits"); got != 2 {
		t.Errorf("replica A counted %v fallbacks, want 2", got)
	}
	if n := strings.Count(a.log.String(), "redis unreachable"); n != 1 {
		t.Errorf("replica A logged %d lines for 2 fallbacks within a minute, want 1:\n%s", n, a.log.String())
	}

	srv.Start()
	// Within RetryAfter, Redis is not tried.
	if allow(la, "down") {
		t.Error("within RetryAfter, replica A's own bucket allowed the spent key")
	}
	clk.Advance(time.Second)
	if !allow(la, "back") || allow(lb, "back") {
		t.Error("with Redis back, a key's one token was not shared again")
	}
	if got := a.fallbacks(t, "limits"); got != 3 {
		t.Errorf("replica A counted %v fallbacks, want 3 (none once Redis answered)", got)
	}
	// Its calls count those Redis answered too: one before the outage,
	// three answered by the fallback, one after.
	if got := a.calls(t, "limits"); got != 5 {
		t.Errorf("replica A counted %v calls, want 5", got)
	}
	if !strings.Contains(a.log.String(), "redis answers again") {
		t.Errorf("replica A did not log that Redis is back:\n%s", a.log.String())
	}
}

func TestWindowsAndDecisionsFallBackToTheReplicasOwn(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	own := func(t *testing.T) (clicks.Windows, clicks.Decisions) {
		db, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		w, err := clicks.NewWindows(db)
		if err != nil {
			t.Fatal(err)
		}
		d, err := clicks.NewDecisions(db)
		if err != nil {
			t.Fatal(err)
		}
		return w, d
	}
	a, b := newReplica(t, srv.URL(), clk), newReplica(t, srv.URL(), clk)
	wa, da := own(t)
	wb, db := own(t)
	winA, winB := a.c.Windows(wa), b.c.Windows(wb)
	decA, decB := a.c.Decisions(da), b.c.Decisions(db)
	at := clk.Now()
	exp := at.Add(time.Hour)
	claim := func(w clicks.Windows, ad string) string {
		t.Helper()
		r, err := w.Claim(t.Context(), clicks.Claim{Network: "192.0.2.1", AdID: ad, At: at})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return r
	}
	use := func(d clicks.Decisions, id string) bool {
		t.Helper()
		first, err := d.Use(t.Context(), id, at, exp)
		if err != nil {
			t.Fatalf("Use: %v", err)
		}
		return first
	}

	if claim(winA, "up") != "" || claim(winB, "up") != clicks.ReasonRepeat {
		t.Error("with Redis up, a window claimed on A was not a repeat on B")
	}
	if !use(decA, "up") || use(decB, "up") {
		t.Error("with Redis up, a decision used on A was not used on B")
	}

	srv.Kill()
	if claim(winA, "down") != "" || claim(winA, "down") != clicks.ReasonRepeat {
		t.Error("with Redis down, replica A's own windows did not hold")
	}
	if !use(decA, "down") || use(decA, "down") {
		t.Error("with Redis down, replica A's own decisions did not hold")
	}
	if got := a.fallbacks(t, "windows") + a.fallbacks(t, "decisions"); got != 4 {
		t.Errorf("replica A counted %v fallbacks of windows and decisions, want 4", got)
	}

	srv.Start()
	clk.Advance(time.Second)
	if claim(winA, "back") != "" || claim(winB, "back") != clicks.ReasonRepeat {
		t.Error("with Redis back, a window claimed on A was not a repeat on B")
	}
	if !use(decA, "back") || use(decB, "back") {
		t.Error("with Redis back, a decision used on A was not used on B")
	}
	if got := a.fallbacks(t, "windows") + a.fallbacks(t, "decisions"); got != 4 {
		t.Errorf("replica A counted %v fallbacks, want still 4 once Redis answered", got)
	}
	// Each store counts every call of its own, answered or not: one
	// before the outage, two in it, one after.
	for _, store := range []string{"windows", "decisions"} {
		if got := a.calls(t, store); got != 4 {
			t.Errorf("replica A counted %v calls of %s, want 4", got, store)
		}
	}
}

// A Redis that accepts connections and never answers (a hung server, a
// full network path) is a Redis that is down: the read timeout ends the
// call and the fallback decides.
func TestAHungRedisFallsBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	r := newReplica(t, "redis://"+ln.Addr().String()+"/0?read_timeout=50ms&write_timeout=50ms", clk)
	l := r.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	one := ratelimit.Limit{Rate: 0.001, Burst: 1}
	if !l.Allow(t.Context(), "k", one).Allowed || l.Allow(t.Context(), "k", one).Allowed {
		t.Error("the fallback's bucket did not decide")
	}
	if got := r.fallbacks(t, "limits"); got != 2 {
		t.Errorf("%v fallbacks, want 2", got)
	}
}

// With Redis down, budget flags are neither raised nor read: a click's
// raise gets no error (each replica stops only what its own clicks
// spent), a read says so, that a credit's read of the flags is run again.
func TestBudgetFlagsWhileRedisIsDown(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	clk := &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	r := newReplica(t, srv.URL(), clk)
	f := r.c.BudgetFlags()
	srv.Kill()
	if err := f.Raise(t.Context(), "a.example", clicks.BudgetDayIn(clk.Now(), time.UTC)); err != nil {
		t.Errorf("Raise: %v", err)
	}
	if ids, err := f.Raised(t.Context(), clicks.BudgetDayIn(clk.Now(), time.UTC)); err == nil || ids != nil {
		t.Errorf("Raised = %v, %v; want nothing and an error", ids, err)
	}
	if got := r.fallbacks(t, "budget"); got != 2 {
		t.Errorf("%v fallbacks, want 2", got)
	}
	srv.Start()
	clk.Advance(time.Second)
	if err := f.Raise(t.Context(), "b.example", clicks.BudgetDayIn(clk.Now(), time.UTC)); err != nil {
		t.Fatal(err)
	}
	if ids, err := f.Raised(t.Context(), clicks.BudgetDayIn(clk.Now(), time.UTC)); err != nil || !slices.Equal(ids, []string{"b.example"}) {
		t.Errorf("with Redis back, Raised = %v, %v; want [b.example]", ids, err)
	}
	if got := r.calls(t, "budget"); got != 4 {
		t.Errorf("%v calls, want 4: two in the outage, two after", got)
	}
}

// TestClientLibraryLinesGoToTheLogger: go-redis's own lines (a dial
// refused, once a pool's dial fails) go to the Logger, at debug level, as
// JSON with the server's, not as plain text to stderr between them; the
// stores log the outage themselves, once every LogEvery.
func TestClientLibraryLinesGoToTheLogger(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	url := srv.URL()
	srv.Kill()
	var log syncBuffer
	c := open(t, url, redisstore.Options{Logger: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if ids, err := c.BudgetFlags().Raised(t.Context(), clicks.BudgetDayIn(time.Now(), time.UTC)); err == nil || ids != nil {
		t.Errorf("Raised = %v, %v; want nothing and an error", ids, err)
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var l struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("a line is no JSON: %q", line)
		}
		if l.Level == "DEBUG" && strings.Contains(l.Msg, "failed to dial") {
			found = true
		}
	}
	if !found {
		t.Errorf("no go-redis line at debug level in the log:\n%s", log.String())
	}
}
