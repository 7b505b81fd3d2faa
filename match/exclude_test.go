package match

import (
	"slices"
	"testing"
)

// TestExclude leaves an advertiser's ads out before ranking: the answer
// is the one without them, still filling size, in every context, and an
// index opened from its page shard leaves out the same ads.
func TestExclude(t *testing.T) {
	ix := mustBuild(t, fixture())
	groups := ix.AdvertiserGroups()
	amazon, ok := groups["amazon.de"]
	if !ok || len(groups) != 8 {
		t.Fatalf("groups %v", groups)
	}
	shard, _ := ix.EncodePage(0)
	page, err := Open(shard)
	if err != nil {
		t.Fatal(err)
	}
	var without []Ad
	for _, a := range fixture() {
		if a.Advertiser != "amazon.de" {
			without = append(without, a)
		}
	}
	ref := mustBuild(t, without)
	for _, q := range []Query{
		{Text: "handy", Size: 1},
		{Text: "nokia handy", Dist: DistLow, Size: 2},
		{Text: "nokia lumia", Dist: DistNone},
		{Text: "Das Nokia Handy", Page: true},
	} {
		plain := q
		if got := ids(ix, ix.Match(&plain)); !slices.Contains(got, "AMAZON.1.B00JVL2X1I") {
			t.Fatalf("%+v: amazon.de not among %v without Exclude", q, got)
		}
		want := ids(ref, ref.Match(&plain))
		q.Exclude = []uint32{amazon, 1 << 30} // a group the index has not is no error
		for name, x := range map[string]*Index{"server": ix, "page shard": page} {
			if got := ids(x, x.Match(&q)); !slices.Equal(got, want) {
				t.Errorf("%s %+v: %v, want %v", name, q, got, want)
			}
		}
	}
}
