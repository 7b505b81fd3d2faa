package budget

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// The replica ids of two replicas, A and B.
const replicaA, replicaB = "0000000000r1a", "0000000000r1b"

// ownPair is two gates without a shared store, A and B, of replica ids
// replicaA and replicaB, each over a store of its own, sharing flags.
func ownPair(t *testing.T) (c flagged, a, b *Gate, spB *spends) {
	t.Helper()
	c = flaggedGate(t, false, "a.example")
	c.o.Replica = replicaA
	a = newGate(t, c.o)
	spB = &spends{m: map[string]int64{}}
	o := c.o
	o.Spent, o.Replica = spB, replicaB
	return c, a, newGate(t, o), spB
}

// Without a shared store, a replica restarted after a credit of its own
// clicks that could not take its flag down (Redis did not answer) finds
// the flag its own by its replica id, its own spend under the budget,
// and takes it down at its first Sync: both replicas show the advertiser
// again. Before, the restart forgot the flag was its own, and it stopped
// the advertiser on every replica for the rest of its day.
func TestRestartTakesDownItsOwnFlag(t *testing.T) {
	c, a, b, _ := ownPair(t)
	want := []uint32{c.groups["a.example"]}
	spend(t, a, c.sp, c.at, 10)
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(c.ix); !slices.Equal(got, want) {
		t.Fatalf("A's flag: B leaves out %v, want %v", got, want)
	}
	c.sp.add("a.example", c.at, -10) // the credit, its Clear not taken
	restarted := newGate(t, c.o)
	if err := restarted.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(c.f.raised) != 0 {
		t.Errorf("after A's restart the flags are %v, want none: A's own, its spend credited", c.f.raised)
	}
	if got := restarted.Exclude(c.ix); len(got) != 0 {
		t.Errorf("restarted A leaves out %v, want none", got)
	}
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(c.ix); len(got) != 0 {
		t.Errorf("B leaves out %v once A's flag is down, want none", got)
	}
}

// A restarted replica takes down only its own flags: another replica's,
// whose own clicks spent the budget, stays up and stops the advertiser
// on both, as does a flag of an older replica's, which names none.
func TestRestartLeavesAnotherReplicasFlag(t *testing.T) {
	c, a, b, spB := ownPair(t)
	want := []uint32{c.groups["a.example"]}
	spend(t, a, c.sp, c.at, 10)
	spend(t, b, spB, c.at, 10)
	c.f.raised = append(c.f.raised, "a.example@10#k3x9")
	c.sp.add("a.example", c.at, -10)
	restarted := newGate(t, c.o)
	if err := restarted.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, f := range c.f.raised {
		if ownFlag(f, replicaA) {
			t.Errorf("A's own flag %s still up after its restart, its spend credited", f)
		}
		left = append(left, f)
	}
	if len(left) != 2 || !slices.ContainsFunc(left, func(f string) bool { return ownFlag(f, replicaB) }) {
		t.Errorf("after A's restart the flags are %v, want B's and the older replica's", left)
	}
	if got := restarted.Exclude(c.ix); !slices.Equal(got, want) {
		t.Errorf("restarted A leaves out %v, want %v: B's budget is spent", got, want)
	}
}

// A restarted replica whose own store still holds the budget spent keeps
// its own flag up, and knows it its own: a credit after takes it down.
func TestRestartKeepsItsOwnSpentFlag(t *testing.T) {
	c, a, _, _ := ownPair(t)
	spend(t, a, c.sp, c.at, 10)
	restarted := newGate(t, c.o)
	if err := restarted.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(c.f.raised) != 1 {
		t.Fatalf("after A's restart the flags are %v, want A's", c.f.raised)
	}
	c.sp.add("a.example", c.at, -10)
	if err := restarted.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(c.f.raised) != 0 {
		t.Errorf("after a credit on restarted A the flags are %v, want none", c.f.raised)
	}
}

// A replica's id is made once in its data directory and read back after;
// two directories hold two ids; a file that holds no id is an error, not
// replaced; and two replicas starting at once on one directory agree.
func TestLoadOrCreateReplica(t *testing.T) {
	dir := t.TempDir()
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for k := range ids {
		wg.Go(func() {
			id, err := LoadOrCreateReplica(dir)
			if err != nil {
				t.Error(err)
			}
			ids[k] = id
		})
	}
	wg.Wait()
	if !ValidReplica(ids[0]) || len(slices.Compact(slices.Clone(ids))) != 1 {
		t.Fatalf("replica ids %v, want one", ids)
	}
	if again, err := LoadOrCreateReplica(dir); err != nil || again != ids[0] {
		t.Errorf("read back %q (%v), want %q", again, err, ids[0])
	}
	if other, err := LoadOrCreateReplica(t.TempDir()); err != nil || other == ids[0] {
		t.Errorf("another directory's id %q (%v), want one of its own", other, err)
	}
	for _, bad := range []string{"", "0000000000R1A", "0000000000r1", "0000000000r1a0", "0000000000r1#"} {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, ReplicaFile), []byte(bad+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if id, err := LoadOrCreateReplica(d); err == nil {
			t.Errorf("a file of %q read as replica id %q", bad, id)
		}
	}
	o := Options{Replica: "a#b"}
	if _, err := New(t.Context(), o); err == nil {
		t.Error("New takes replica id \"a#b\"")
	}
}

// FuzzOwnFlag: a raise of a replica reads back as its advertiser and
// budget, is that replica's own and no other's.
func FuzzOwnFlag(f *testing.F) {
	f.Add("a.example", int64(10))
	f.Add("x@1#"+replicaA+"0000000000000", int64(2))
	f.Fuzz(func(t *testing.T, id string, daily int64) {
		ownFlag(id, replicaA)
		if daily <= 0 {
			return
		}
		r := raiseOf(id, daily, replicaA)
		if got, n := parseFlag(r); got != id || n != daily {
			t.Errorf("parseFlag(%q) = %q, %d, want %q, %d", r, got, n, id, daily)
		}
		if !ownFlag(r, replicaA) || ownFlag(r, replicaB) || ownFlag(r, "") {
			t.Errorf("%q: own of A %v, of B %v, of none %v; want A's only", r, ownFlag(r, replicaA), ownFlag(r, replicaB), ownFlag(r, ""))
		}
		if old := raiseOf(id, daily, ""); ownFlag(old, replicaA) {
			t.Errorf("%q, a raise of no replica, is A's own", old)
		}
	})
}
