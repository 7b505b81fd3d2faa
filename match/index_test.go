package match

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"testing"
)

func TestBuildErrors(t *testing.T) {
	if _, err := Build([]Ad{{ID: "a"}, {ID: "a"}}); err == nil {
		t.Error("duplicate id accepted")
	}
	if _, err := Build([]Ad{{}}); err == nil {
		t.Error("empty id accepted")
	}
	if _, err := Build([]Ad{{ID: "a", Kind: 9}}); err == nil {
		t.Error("bad kind accepted")
	}
}

func TestAdRoundTrip(t *testing.T) {
	ads := fixture()
	ix := mustBuild(t, ads)
	for i, want := range ads {
		got := ix.Ad(i)
		// The index keeps a bid rounded (TestRoundBid).
		want.BidMicros = int64(roundBid(want.BidMicros))
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			t.Errorf("ad %d:\n%s\n%s", i, gj, wj)
		}
		if j, ok := ix.Lookup(want.ID); !ok || j != i {
			t.Errorf("Lookup(%q) = %d, %v", want.ID, j, ok)
		}
	}
	if _, ok := ix.Lookup("nope.example"); ok {
		t.Error("Lookup found an unknown id")
	}
}

// TestArenaSizedAtOnce: Build sizes the strings' arena exactly, so that it
// is never copied to grow: strsSize counts what appendStrs writes.
func TestArenaSizedAtOnce(t *testing.T) {
	ads := fixture()
	ads = append(ads, Ad{ID: "k", Keywords: []string{"a", "bc", ""}}, Ad{ID: "e"})
	want := 0
	for i := range ads {
		want += strsSize(&ads[i])
	}
	if ix := mustBuild(t, ads); len(ix.strs) != want {
		t.Errorf("the arena holds %d bytes, strsSize counts %d", len(ix.strs), want)
	}
}

// TestRoundBid: the index keeps a bid's three leading bits, rounded to the
// nearest, so a shard shows a bid's band and not the bid; a bid that
// fits three bits stays as it is, and no bid leaves [0, 2^32-1].
func TestRoundBid(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want uint32
	}{
		{-5, 0}, {0, 0}, {7, 7}, {8, 8}, {9, 10}, {10, 10}, {11, 12}, {15, 16},
		{450_000, 458_752}, {500_000, 524_288}, {400_000, 393_216},
		{350_000, 327_680}, {300_000, 327_680}, {1 << 40, 7 << 29}, {1<<32 - 1, 7 << 29},
	} {
		if got := roundBid(c.in); got != c.want {
			t.Errorf("roundBid(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	// Every rounded bid has at most three significant bits, and lies
	// within an eighth of the bid (half a step of the finest band).
	for b := int64(1); b < 1<<32; b = b*37/29 + 1 {
		r := roundBid(b)
		if r>>(bits.TrailingZeros32(r)) >= 8 {
			t.Fatalf("roundBid(%d) = %d has more than three significant bits", b, r)
		}
		if d := int64(r) - b; (d*8 > b || -d*8 > b) && b <= maxBid {
			t.Fatalf("roundBid(%d) = %d is further than an eighth away", b, r)
		}
	}
}
