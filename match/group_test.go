package match

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// TestShardGroups: each group holds, in order, the positions of the ads
// that run in its market, and of those that run in its country once each
// when the country has a group of its own (several languages); ads that
// share their market list and ads with equal lists of their own are
// grouped alike.
func TestShardGroups(t *testing.T) {
	de, deEN, fr, at := Market{"de", "de"}, Market{"de", "en"}, Market{"fr", "fr"}, Market{"at", "de"}
	shared := []Market{de, fr}
	lists := [][]Market{shared, shared, {de, fr}, {deEN}, {de, deEN}, {fr}, nil, {at, de}, shared, {deEN, de}}
	var ads []Ad
	for i := range 40 {
		ads = append(ads, Ad{ID: fmt.Sprintf("ad%02d", i), Kind: KindProduct, Title: "shoe", Landing: "https://x.test/", Markets: lists[i%len(lists)]})
	}
	all := mustBuild(t, ads)
	got := ShardGroups(all, ads)

	// What they should be, ad by ad.
	want := map[Market][]int32{}
	for i, a := range ads {
		var countries []Market
		for _, m := range a.Markets {
			want[m] = append(want[m], int32(i))
			if k, ok := all.ShardMarket(m.Country, ""); ok && k.Lang == "" && !slices.Contains(countries, k) {
				countries = append(countries, k)
				want[k] = append(want[k], int32(i))
			}
		}
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("ShardGroups = %v\nwant %v", got, want)
	}
	if keys := slices.Collect(maps.Keys(got)); len(keys) != len(all.ShardMarkets()) {
		t.Errorf("groups %v, want one per shard market %v", keys, all.ShardMarkets())
	}
	if g := got[Market{Country: "de"}]; len(g) == 0 {
		t.Error("no group for a country in two languages")
	}
	// The groups share one array: appending to one must not write into
	// the next.
	first := slices.Clone(got[de])
	for m, g := range got {
		_ = append(g, -1)
		if m != de && !slices.Equal(got[de], first) {
			t.Fatalf("appending to %s's group changed %s's", m, de)
		}
	}
}
