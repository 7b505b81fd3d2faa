package market

import (
	"slices"
	"testing"

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
