package budget

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Without a shared store (each replica's spend its own, Redis's flags
// shared), a credit of one replica's clicks takes down no flag another
// replica's own clicks raised: that replica's budget is still spent, and
// the advertiser stays out of the answers on both, the crediting one
// too.
func TestUnsharedCreditLeavesAnotherReplicasFlag(t *testing.T) {
	c, b, spB := unsharedPair(t)
	a, spA, f, now := c.g, c.sp, c.f, c.at
	want := []uint32{c.groups["a.example"]}
	spend(t, a, spA, now, 4)
	spend(t, b, spB, now, 10) // B's own clicks spend the budget
	if err := a.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := a.Exclude(c.ix); !slices.Equal(got, want) {
		t.Fatalf("B's flag: A leaves out %v, want %v", got, want)
	}
	spA.add("a.example", now, -4) // the credit of A's click
	if err := a.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts(f.raised), []string{"a.example@10"}) {
		t.Errorf("after A's credit the flags are %v, want B's, a.example@10", f.raised)
	}
	for _, g := range []*Gate{b, a} {
		if err := g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Exclude(c.ix); !slices.Equal(got, want) {
		t.Errorf("after A's credit, B's budget spent: A leaves out %v, want %v", got, want)
	}
	if got := a.Spent("a.example"); got != 10 {
		t.Errorf("after A's credit, A holds a spend of %d, want the budget, 10, as B's flag says", got)
	}
}

// Without a shared store, when both replicas' own clicks spent the budget
// and a credit of one's takes the flag down (one flag text for both), the
// other raises it again at its next Sync: its own budget is still spent,
// and the crediting replica stops the advertiser again at its own.
func TestUnsharedFlagRaisedAgainByItsOtherRaiser(t *testing.T) {
	c, b, spB := unsharedPair(t)
	a, spA, f, now := c.g, c.sp, c.f, c.at
	want := []uint32{c.groups["a.example"]}
	spend(t, a, spA, now, 10)
	spend(t, b, spB, now, 10)
	spA.add("a.example", now, -10) // the credit of A's click
	if err := a.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.raised) != 0 || len(a.Exclude(c.ix)) != 0 {
		t.Fatalf("after A's credit of its own flag: flags %v, A leaves out %v; want none", f.raised, a.Exclude(c.ix))
	}
	for _, g := range []*Gate{b, a} {
		if err := g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(texts(f.raised), []string{"a.example@10"}) {
		t.Errorf("after B's Sync the flags are %v, want B's raised again, a.example@10", f.raised)
	}
	if got := a.Exclude(c.ix); !slices.Equal(got, want) {
		t.Errorf("B's budget still spent: A leaves out %v, want %v", got, want)
	}
}

// Without a shared store, a flag Redis did not take when the replica's
// own click spent the budget is raised at the first Sync that reads the
// flags; with a shared store it is not: the other replicas' clicks read
// the spend there.
func TestUnsharedFlagNotTakenIsRaisedAtSync(t *testing.T) {
	for _, shared := range []bool{false, true} {
		c := flaggedGate(t, shared, "a.example")
		c.f.raiseErr = errors.New("down")
		c.sp.add("a.example", c.at, 10)
		if err := c.g.Clicked(t.Context(), &clicks.Click{Time: c.at, Advertiser: "a.example", Billable: true, BidMicros: 10}); err == nil {
			t.Fatal("a flag not taken: no error")
		}
		c.f.raiseErr = nil
		if err := c.g.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		want := []string{"a.example@10"}
		if shared {
			want = nil
		}
		if !slices.Equal(texts(c.f.raised), want) {
			t.Errorf("shared %v: after a Sync the flags are %v, want %v", shared, c.f.raised, want)
		}
	}
}

// unsharedPair is replica A's flagged gate of a.example, without a shared
// store, and replica B's gate beside it, over the same flags and spB, a
// store of B's own.
func unsharedPair(t *testing.T) (flagged, *Gate, *spends) {
	t.Helper()
	c := flaggedGate(t, false, "a.example")
	spB := &spends{m: map[string]int64{}}
	return c, c.another(t, spB), spB
}

// spend has a click of g's replica spend n of a.example's budget at at,
// in its own store sp.
func spend(t *testing.T, g *Gate, sp interface {
	add(string, time.Time, int64)
}, at time.Time, n int64) {
	t.Helper()
	sp.add("a.example", at, n)
	if err := g.Clicked(t.Context(), &clicks.Click{Time: at, Advertiser: "a.example", Billable: true, BidMicros: n}); err != nil {
		t.Fatal(err)
	}
}

// Without a shared store, a replica that another's flag stopped shows the
// advertiser again once that flag comes down (a credit of the raiser's
// own clicks) and its own spend is under the budget: it hears of no
// credit of another's, and would otherwise keep the advertiser out for
// the rest of its day.
func TestUnsharedFlagDownShowsAgain(t *testing.T) {
	c, b, spB := unsharedPair(t)
	a, spA, now := c.g, c.sp, c.at
	want := []uint32{c.groups["a.example"]}
	spend(t, a, spA, now, 10) // A's own clicks spend the budget
	spB.add("a.example", now, 4)
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(c.ix); !slices.Equal(got, want) {
		t.Fatalf("A's flag: B leaves out %v, want %v", got, want)
	}
	spA.add("a.example", now, -10) // the credit of A's clicks
	if err := a.Reread(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(c.ix); len(got) != 0 {
		t.Errorf("A's flag down, B's own spend 4 of 10: B leaves out %v, want none", got)
	}
	if got := b.Spent("a.example"); got != 4 {
		t.Errorf("A's flag down: B holds a spend of %d, want its own, 4", got)
	}
	// A flag raised again stops B again.
	spend(t, a, spA, now, 10)
	if err := b.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.Exclude(c.ix); !slices.Equal(got, want) {
		t.Errorf("A's flag up again: B leaves out %v, want %v", got, want)
	}
}
