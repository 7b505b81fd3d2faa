package redisstore_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/ratelimit"
	"github.com/adlink/adlink/backend/store"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testredis"
)

// ownDecisions are a replica's own decisions, in a bbolt file of t's.
func ownDecisions(t *testing.T) clicks.Decisions {
	t.Helper()
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d, err := clicks.NewDecisions(db)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestADeadClusterNodeLeavesTheOthersShared: a master of a cluster that is
// down sends to the replicas' own state the calls of the keys it serves
// only. The keys of the masters that answer stay shared, before and after
// a call met the dead one, and a replica counts and logs the dead node's
// calls alone. Once the master is back, its keys are shared again.
func TestADeadClusterNodeLeavesTheOthersShared(t *testing.T) {
	// The live masters keep serving however long the test takes: by
	// default they would refuse every command once they agreed, after
	// the node timeout, that the dead one is down.
	cl := testredis.StartCluster(t, testredis.Options{PartialCoverage: true})
	clk := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	a, b := newReplica(t, patient(cl.URL()), clk), newReplica(t, patient(cl.URL()), clk)
	la := a.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	lb := b.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	da, db := a.c.Decisions(ownDecisions(t)), b.c.Decisions(ownDecisions(t))
	ctx := t.Context()
	one := ratelimit.Limit{Rate: 0.001, Burst: 1}
	at := clk.Now()
	exp := at.Add(time.Hour)
	use := func(d clicks.Decisions, id string) bool {
		t.Helper()
		first, err := d.Use(ctx, id, at, exp)
		if err != nil {
			t.Fatalf("Use: %v", err)
		}
		return first
	}

	// A spends a key's one token and uses a decision id of each of many
	// names; the keys the nodes then hold say which node serves which.
	var names []string
	for i := range 60 {
		name := fmt.Sprintf("k%d", i)
		names = append(names, name)
		if !la.Allow(ctx, name, one).Allowed || !use(da, name) {
			t.Fatalf("with the cluster up, A's first use of %s was refused", name)
		}
	}
	node := map[string]int{}
	for i, s := range cl.Nodes {
		for _, k := range keys(t, s.Addr()) {
			node[k] = i
		}
	}
	const dead = 0
	on := func(want bool, key func(string) string) []string {
		var out []string
		for _, name := range names {
			i, ok := node[key(name)]
			if !ok {
				t.Fatalf("no node holds %q", key(name))
			}
			if (i == dead) == want {
				out = append(out, name)
			}
		}
		if len(out) < 4 {
			t.Fatalf("%d of the names are on the dead node (%v) or not, want 4", len(out), want)
		}
		return out
	}
	bucket := func(k string) string { return fmt.Sprintf("rate:adlink:keys:{%d:%s}", len(k), k) }
	decision := func(id string) string { return "adlink:dec:" + id }
	deadKeys, liveKeys := on(true, bucket), on(false, bucket)
	deadIDs, liveIDs := on(true, decision), on(false, decision)

	cl.Nodes[dead].Kill()
	// B meets the dead node first: its own bucket allows a key whose
	// token A spent.
	if !lb.Allow(ctx, deadKeys[0], one).Allowed {
		t.Error("with its node down, B's own bucket refused a key B never took from")
	}
	if lb.Allow(ctx, liveKeys[0], one).Allowed {
		t.Error("after B met the dead node, B allowed a key A spent on a live node")
	}
	if _, second := lb.AllowBoth(ctx, ratelimit.Bucket{Key: "net", Limit: one},
		ratelimit.Bucket{Key: liveKeys[1], Limit: one}); second.Allowed {
		t.Error("after B met the dead node, B's AllowBoth allowed a key A spent on a live node")
	}
	if use(db, liveIDs[0]) {
		t.Error("after B met the dead node, B used again a decision id A used on a live node")
	}
	if !use(db, deadIDs[0]) {
		t.Error("with its node down, B's own decisions refused an id B never used")
	}
	// Calls sent together, in one pipeline or a few, are each judged by
	// their node's health.
	var wg sync.WaitGroup
	shared := make([]bool, len(liveKeys))
	for i, k := range liveKeys {
		wg.Go(func() {
			_, second := lb.AllowBoth(ctx, ratelimit.Bucket{Key: "together", Limit: one},
				ratelimit.Bucket{Key: k, Limit: one})
			shared[i] = !second.Allowed
		})
	}
	for _, k := range deadKeys[3:] {
		wg.Go(func() {
			lb.AllowBoth(ctx, ratelimit.Bucket{Key: "together", Limit: one}, ratelimit.Bucket{Key: k, Limit: one})
		})
	}
	wg.Wait()
	if i := slices.Index(shared, false); i >= 0 {
		t.Errorf("among calls of the dead node, B's AllowBoth allowed %s, which A spent on a live node", liveKeys[i])
	}
	if got, want := b.fallbacks(t, "limits"), float64(1+len(deadKeys[3:])); got != want {
		t.Errorf("B counted %v fallbacks of limits, want %v: the dead node's calls", got, want)
	}
	if got := b.fallbacks(t, "decisions"); got != 1 {
		t.Errorf("B counted %v fallbacks of decisions, want 1: the dead node's call", got)
	}
	log := b.log.String()
	if n := strings.Count(log, "redis unreachable"); n != 1 ||
		!strings.Contains(log, "node="+cl.Nodes[dead].Addr()) {
		t.Errorf("B logged %d lines of Redis unreachable, want one naming the dead node %s:\n%s",
			n, cl.Nodes[dead].Addr(), log)
	}

	// The node back, without the keys it held: its keys are shared again
	// once RetryAfter has passed, and its scripts loaded again.
	before := b.fallbacks(t, "limits") + b.fallbacks(t, "decisions")
	cl.Nodes[dead].Start()
	cl.WaitOK(t)
	clk.Advance(time.Second)
	if !la.Allow(ctx, deadKeys[1], one).Allowed || lb.Allow(ctx, deadKeys[1], one).Allowed {
		t.Error("with the node back, a key's one token on it was not shared")
	}
	if first, _ := la.AllowBoth(ctx, ratelimit.Bucket{Key: "net", Limit: one},
		ratelimit.Bucket{Key: deadKeys[2], Limit: one}); !first.Allowed {
		t.Error("with the node back, A's AllowBoth refused a bucket never taken from")
	}
	if first, _ := lb.AllowBoth(ctx, ratelimit.Bucket{Key: "net", Limit: one},
		ratelimit.Bucket{Key: deadKeys[2], Limit: one}); first.Allowed {
		t.Error("with the node back, B's AllowBoth allowed a bucket A spent on it")
	}
	if !use(da, deadIDs[1]) || use(db, deadIDs[1]) {
		t.Error("with the node back, a decision id used on A was not used on B")
	}
	if got := b.fallbacks(t, "limits") + b.fallbacks(t, "decisions"); got != before {
		t.Errorf("B counted %v fallbacks, want still %v once the node answered", got, before)
	}
	back := func(line string) bool {
		return strings.Contains(line, "redis answers again") && strings.Contains(line, "node="+cl.Nodes[dead].Addr())
	}
	if log := b.log.String(); !slices.ContainsFunc(strings.Split(log, "\n"), back) {
		t.Errorf("B did not log that the node %s is back:\n%s", cl.Nodes[dead].Addr(), log)
	}
}

// TestAHungClusterNodeDelaysOnlyItsOwnCalls: while a master of a cluster
// is frozen, the AllowBoth calls of its keys wait for its timeouts, but
// the calls of the keys of the masters that answer do not wait behind
// them: they are answered, shared, while the frozen master's are still
// waiting.
func TestAHungClusterNodeDelaysOnlyItsOwnCalls(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{PartialCoverage: true})
	clk := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	a, b := newReplica(t, patient(cl.URL()), clk), newReplica(t, patient(cl.URL()), clk)
	la := a.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	lb := b.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	ctx := t.Context()
	one := ratelimit.Limit{Rate: 0.001, Burst: 1}
	both := func(l *redisstore.Limiter, key string) ratelimit.Decision {
		_, second := l.AllowBoth(ctx, ratelimit.Bucket{Key: "net", Limit: one}, ratelimit.Bucket{Key: key, Limit: one})
		return second
	}

	// A spends each key's one token; the keys the nodes then hold say
	// which node serves which. B's connections to each node are made.
	var names []string
	for i := range 60 {
		name := fmt.Sprintf("k%d", i)
		names = append(names, name)
		if !la.Allow(ctx, name, one).Allowed {
			t.Fatalf("with the cluster up, A's first use of %s was refused", name)
		}
		lb.Allow(ctx, "warm"+name, one)
	}
	if n := a.fallbacks(t, "limits") + b.fallbacks(t, "limits"); n != 0 {
		t.Fatalf("with the cluster up, %v limit checks fell back:\n%s\n%s", n, a.log, b.log)
	}
	node := map[string]int{}
	for i, s := range cl.Nodes {
		for _, k := range keys(t, s.Addr()) {
			node[k] = i
		}
	}
	const hung = 0
	var hungKeys, liveKeys []string
	for _, name := range names {
		i, ok := node[fmt.Sprintf("rate:adlink:keys:{%d:%s}", len(name), name)]
		if !ok {
			t.Fatalf("no node holds the bucket of %s", name)
		}
		if i == hung {
			hungKeys = append(hungKeys, name)
		} else {
			liveKeys = append(liveKeys, name)
		}
	}
	if len(hungKeys) < 4 || len(liveKeys) < 1 {
		t.Fatalf("%d keys on the node to freeze, %d on the others", len(hungKeys), len(liveKeys))
	}

	cl.Nodes[hung].Pause()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			cl.Nodes[hung].Resume()
		}
	}
	defer resume()
	// Calls of the frozen node's keys, until every pipeline B may have in
	// flight waits on it.
	var waiting sync.WaitGroup
	var hungDone atomic.Int32
	for _, k := range hungKeys {
		waiting.Go(func() {
			both(lb, k)
			hungDone.Add(1)
		})
	}
	for redisstore.PipelinesInFlight(lb) < 2 && hungDone.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// A live node's key: answered from the shared bucket A spent, before
	// any call of the frozen node is answered.
	if both(lb, liveKeys[0]).Allowed {
		t.Error("with another node frozen, B allowed a key A spent on a live node")
	}
	if n := hungDone.Load(); n != 0 {
		t.Errorf("a call of a live node's key waited until %d calls of the frozen node's keys gave up", n)
	}
	resume()
	waiting.Wait()
}

// TestAMasterDownLearnsWhereItsSlotsWent: when a master is down and
// another takes over its slots (a replica promoted, or the slots given
// to another master), a replica's calls of its keys go to the new master
// once RetryAfter has passed, shared again, without waiting for the
// client's periodic reload of the map of the slots.
func TestAMasterDownLearnsWhereItsSlotsWent(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{PartialCoverage: true})
	clk := &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	b := newReplica(t, patient(cl.URL()), clk)
	lb := b.c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
	ctx := t.Context()
	one := ratelimit.Limit{Rate: 0.001, Burst: 1}
	// B learns the map of the slots.
	if !lb.Allow(ctx, "warm", one).Allowed {
		t.Fatal("B's first use of a key was refused")
	}

	// A key of the first node's slots.
	first, second := nodeClient(cl.Nodes[0]), nodeClient(cl.Nodes[1])
	defer first.Close()
	defer second.Close()
	var name string
	var slot int64
	for i := 0; name == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		s, err := first.ClusterKeySlot(ctx, fmt.Sprintf("rate:adlink:keys:{%d:%s}", len(k), k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if s < 16384/3 {
			name, slot = k, s
		}
	}
	cl.Nodes[0].Kill()
	// The second node takes the slot over, as a replica promoted would.
	id, err := second.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes[1:] {
		c := nodeClient(n)
		err := c.Do(ctx, "cluster", "setslot", slot, "node", id).Err()
		c.Close()
		if err != nil {
			t.Fatalf("giving the slot %d to %s: %v", slot, id, err)
		}
	}
	if err := second.Do(ctx, "cluster", "bumpepoch").Err(); err != nil {
		t.Fatal(err)
	}

	// B meets the dead master.
	lb.Allow(ctx, name, one)
	if got := b.fallbacks(t, "limits"); got != 1 {
		t.Fatalf("B counted %v fallbacks of limits, want 1: the dead master's call", got)
	}
	// A, a replica started now, spends the key's token on the new master.
	a := newReplica(t, patient(cl.URL()), clk)
	if a.c.Limiter("keys", ratelimit.New(ratelimit.Options{})).Allow(ctx, name, one); a.fallbacks(t, "limits") != 0 {
		t.Fatalf("A's call of the key fell back:\n%s", a.log)
	}
	// Each second B tries again; the new master answers it once B learned
	// the map anew, which the failed call asked for.
	for try := 0; ; try++ {
		clk.Advance(time.Second)
		before := b.fallbacks(t, "limits")
		d := lb.Allow(ctx, name, one)
		if b.fallbacks(t, "limits") == before {
			if d.Allowed {
				t.Error("B's call on the new master allowed the key whose token A spent there")
			}
			break
		}
		if try == 100 {
			t.Fatalf("B's calls of the key still fall back after %d tries:\n%s", try, b.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nodeClient is a client of one node of a cluster alone.
func nodeClient(s *testredis.Server) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
}
