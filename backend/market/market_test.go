package market

import (
	"bytes"
	"hash/maphash"
	"reflect"
	"slices"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

func TestBuild(t *testing.T) {
	deDE, chDE, chFR := match.Market{Country: "de", Lang: "de"}, match.Market{Country: "ch", Lang: "de"}, match.Market{Country: "ch", Lang: "fr"}
	ad := func(id string, ms ...match.Market) match.Ad {
		return match.Ad{ID: id + ".example", Kind: match.KindAdvertiser, Title: id, Keywords: []string{id},
			Landing: "https://" + id + ".example/", Advertiser: id + ".example", Markets: ms, BidMicros: 1000}
	}
	s, err := Build([]match.Ad{ad("berlin", deDE), ad("zurich", chDE, deDE), ad("geneve", chFR)})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.All().Len(); n != 3 {
		t.Errorf("the whole index has %d ads, want 3", n)
	}
	ids := func(ix *match.Index) []string {
		if ix == nil {
			return nil
		}
		var out []string
		for i := range ix.Len() {
			out = append(out, ix.Ad(i).ID)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		country, lang string
		want          []string
	}{
		{"de", "de", []string{"berlin.example", "zurich.example"}},
		{"ch", "fr", []string{"geneve.example"}},
		{"ch", "", []string{"geneve.example", "zurich.example"}}, // a country in two languages
		{"fr", "fr", nil},
	} {
		if got := ids(s.For(tt.country, tt.lang)); !slices.Equal(got, tt.want) {
			t.Errorf("For(%q, %q) = %v, want %v", tt.country, tt.lang, got, tt.want)
		}
	}
}

// TestRebuildKeepsUnchangedMarkets: a refresh that changes one market's
// ads indexes that market and the whole catalog again and keeps the
// others' indexes, and every index is the one Build makes of the same ads.
func TestRebuildKeepsUnchangedMarkets(t *testing.T) {
	ads := testcatalog.Generate(3000, 5)
	prev, err := Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(ads[1:])
	changed[0].Keywords = append(slices.Clone(changed[0].Keywords), "neu")
	touched := map[match.Market]bool{}
	for _, a := range []match.Ad{ads[0], ads[1]} {
		for _, m := range a.Markets {
			touched[m] = true
		}
	}
	next, err := Rebuild(changed, prev)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Build(changed)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, m := range next.All().ShardMarkets() {
		ix := next.For(m.Country, m.Lang)
		if ix == nil {
			t.Fatalf("%s: no index", m)
		}
		if same := ix == prev.For(m.Country, m.Lang); same == touched[m] {
			t.Errorf("%s: kept the index before: %v; its ads changed: %v", m, same, touched[m])
		} else if same {
			kept++
		}
		if want := fresh.For(m.Country, m.Lang); !bytes.Equal(ix.Encode(), want.Encode()) {
			t.Errorf("%s: the index differs from Build's", m)
		}
	}
	if kept == 0 {
		t.Error("no market kept its index: the test's change touched every market")
	}
	if next.All() == prev.All() || !bytes.Equal(next.All().Encode(), fresh.All().Encode()) {
		t.Error("the whole catalog's index is not Build's")
	}
	if next.Bid(ads[0].ID) != 0 || next.Bid(changed[5].ID) != changed[5].BidMicros {
		t.Error("bids are not the new catalog's")
	}
}

// TestFingerprintCoversEveryField: a change to any field of an ad, one
// added to match.Ad later included, makes another fingerprint, so
// Rebuild never keeps an index of other ads.
func TestFingerprintCoversEveryField(t *testing.T) {
	base := testcatalog.Generate(50, 3)
	seed := maphash.MakeSeed()
	want := fingerprintOf(seed, base)
	typ := reflect.TypeFor[match.Ad]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		ads := slices.Clone(base)
		v := reflect.ValueOf(&ads[7]).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Uint8:
			v.SetUint(v.Uint() + 1)
		case reflect.Slice:
			if v.Len() == 0 {
				t.Fatalf("%s: empty in the test's ad", f.Name)
			}
			// One element changed, and the last one dropped.
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			e := c.Index(0)
			if e.Kind() == reflect.String {
				e.SetString(e.String() + "x")
			} else {
				e.Field(0).SetString("zz")
			}
			v.Set(c)
			if got := fingerprintOf(seed, ads); got == want {
				t.Errorf("%s: an element changed, the same fingerprint", f.Name)
			}
			v.Set(c.Slice(0, c.Len()-1))
		default:
			t.Fatalf("%s: a %s field: teach fingerprint and this test about it", f.Name, v.Kind())
		}
		if got := fingerprintOf(seed, ads); got == want {
			t.Errorf("%s changed, the same fingerprint", f.Name)
		}
	}
	// Order counts: the ordinals are the index's.
	swapped := slices.Clone(base)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	if fingerprintOf(seed, swapped) == want {
		t.Error("two ads swapped, the same fingerprint")
	}
	// Boundaries count: a title's tail moved to the next field is another ad.
	moved := slices.Clone(base)
	moved[2].Title, moved[2].Manufacturer = moved[2].Title+moved[2].Manufacturer[:1], moved[2].Manufacturer[1:]
	if fingerprintOf(seed, moved) == want {
		t.Error("bytes moved between fields, the same fingerprint")
	}
}

// TestRebuildWhenMarketsChange: a refresh that adds a market, a second
// language to a country, or drops a market gives the indexes Build gives.
func TestRebuildWhenMarketsChange(t *testing.T) {
	ads := testcatalog.Generate(2000, 6)
	prev, err := Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	chFR := match.Market{Country: "ch", Lang: "fr"}
	added := slices.Clone(ads)
	added[10].Markets = append(slices.Clone(added[10].Markets), chFR)
	var dropped []match.Ad
	for _, a := range ads {
		if !slices.Contains(a.Markets, match.Market{Country: "au", Lang: "en"}) {
			dropped = append(dropped, a)
		}
	}
	for name, changed := range map[string][]match.Ad{"a market added": added, "a market dropped": dropped, "the same": ads} {
		t.Run(name, func(t *testing.T) {
			next, err := Rebuild(changed, prev)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Build(changed)
			if err != nil {
				t.Fatal(err)
			}
			if got, w := next.All().ShardMarkets(), want.All().ShardMarkets(); !slices.Equal(got, w) {
				t.Fatalf("markets %v, want %v", got, w)
			}
			for _, m := range want.All().ShardMarkets() {
				g, w := next.For(m.Country, m.Lang), want.For(m.Country, m.Lang)
				if g == nil || !bytes.Equal(g.Encode(), w.Encode()) {
					t.Errorf("%s: not Build's index", m)
				}
			}
			if !bytes.Equal(next.All().Encode(), want.All().Encode()) {
				t.Error("the whole index is not Build's")
			}
		})
	}
	if len(dropped) == len(ads) {
		t.Fatal("no ad ran in en-AU")
	}
}

// fingerprintOf is the fingerprint of ads, all of them in order.
func fingerprintOf(seed maphash.Seed, ads []match.Ad) uint64 {
	pos := make([]int32, len(ads))
	for i := range pos {
		pos[i] = int32(i)
	}
	return fingerprint(seed, adSums(seed, ads), pos)
}

// TestAdSumsBeside: the sums a refresh takes from the catalog before, for
// the ads it has as they were (moved, or after one removed), and works
// out for the others, are those of every ad worked out again.
func TestAdSumsBeside(t *testing.T) {
	ads := testcatalog.Generate(1500, 8)
	prev, err := Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(ads[1:])
	changed[3].PriceCents++                                 // the same strings, another price
	changed[7].Title = changed[7].Title + " neu"            // another title
	changed = append(changed[:20], changed[40:]...)         // a run removed
	changed = append(changed, ads[100])                     // moved to the end (its first place kept too)
	changed[500], changed[900] = changed[900], changed[500] // two swapped
	got, want := adSumsBeside(prev, prev.seed, changed), adSums(prev.seed, changed)
	if !slices.Equal(got, want) {
		t.Fatal("the sums taken from the catalog before differ from those worked out")
	}
	if next, err := Rebuild(changed[:len(changed)-1], prev); err != nil || !slices.Equal(next.adSums, adSums(prev.seed, changed[:len(changed)-1])) {
		t.Fatalf("Rebuild's sums are not the ads' (%v)", err)
	}
}
