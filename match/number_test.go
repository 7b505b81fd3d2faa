package match

import (
	"slices"
	"testing"
)

// numberAds holds products whose model is a bare number, one whose model
// starts with one, a product with no brand and a bare number for a model,
// and an advertiser bidding on a bare number.
func numberAds() []Ad {
	de := Market{Country: "de", Lang: "de"}
	return []Ad{
		{ID: "P.1", Kind: KindProduct, Title: "OnePlus 12 256 GB", Manufacturer: "OnePlus", Model: "12",
			Landing: "https://shop.example/1", Advertiser: "shop.example", Markets: []Market{de}},
		{ID: "P.2", Kind: KindProduct, Title: "Fairphone 5 5G", Manufacturer: "Fairphone", Model: "5",
			Landing: "https://shop.example/2", Advertiser: "shop.example", Markets: []Market{de}},
		{ID: "P.3", Kind: KindProduct, Title: "Xiaomi 14 Ultra", Manufacturer: "Xiaomi", Model: "14 Ultra",
			Landing: "https://shop.example/3", Advertiser: "shop.example", Markets: []Market{de}},
		{ID: "P.4", Kind: KindProduct, Title: "No-name 7", Model: "7",
			Landing: "https://shop.example/4", Advertiser: "shop.example", Markets: []Market{de}},
		{ID: "numbers.example", Kind: KindAdvertiser, Title: "Numbers", Keywords: []string{"2024", "galaxy s24"},
			Landing: "https://numbers.example/", Advertiser: "numbers.example", Markets: []Market{de}},
	}
}

// pageKeywords returns the keywords of every hit for a page's text.
func pageKeywords(ix *Index, text string) []string {
	var out []string
	for _, h := range ix.Match(&Query{Page: true, Text: text, Size: MaxSize}) {
		out = append(out, h.Keywords...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestBareNumbersAreNoMention: a number alone never matches; a model
// number is a mention only after its brand.
func TestBareNumbersAreNoMention(t *testing.T) {
	ix := mustBuild(t, numberAds())
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"Am 12. Mai kamen 5 Leute, 14 Tage und 7 Stunden lang, im Jahr 2024.", nil},
		{"Praze 5 hat 12 Stadtteile.", nil},
		{"Das OnePlus 12 ist schnell.", []string{"OnePlus 12"}},
		{"Das Fairphone 5 lässt sich reparieren.", []string{"Fairphone 5"}},
		{"Das Xiaomi 14 Ultra fotografiert gut.", []string{"Xiaomi 14 Ultra"}},
		// The brand alone still names the brand.
		{"OnePlus baut Telefone.", []string{"OnePlus"}},
		{"Die Galaxy S24 ist da.", []string{"Galaxy S24"}},
	} {
		if got := pageKeywords(ix, tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("%q: keywords %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestNumbersInsideNumbers: a phrase that ends or starts with a number is
// no mention inside a longer number, a date, a time, a price or a version.
func TestNumbersInsideNumbers(t *testing.T) {
	ix := mustBuild(t, []Ad{{ID: "P.1", Kind: KindProduct, Title: "Model 12", Manufacturer: "Acme", Model: "12 Pro",
		Keywords: []string{"12 pro", "pro 12"}, Landing: "https://shop.example/1", Advertiser: "shop.example",
		Markets: []Market{{Country: "de", Lang: "de"}}}})
	for _, text := range []string{
		"Umsatz £12 Pro Kopf", "Umsatz €12 Pro Kopf", "Umsatz $12 Pro Kopf", "UTC+12 Pro", "Seit 2017-12 Pro",
		"um 11:12 Pro Tag", "Version 5.12 Pro", "1,12 Pro", "Tarif pro 12.6 Euro", "Tarif pro 12:46", "Tarif pro 12,5 %",
		"Tarif pro 12% mehr", "pro 12/24", "pro 12-13",
	} {
		if got := pageKeywords(ix, text); len(got) != 0 {
			t.Errorf("%q: keywords %q inside a number", text, got)
		}
	}
	for _, text := range []string{"Das 12 Pro.", "Tarif pro 12.", "pro 12, dann", "(12 Pro)", "pro 12-fach"} {
		if got := pageKeywords(ix, text); len(got) != 1 {
			t.Errorf("%q: keywords %q, want one", text, got)
		}
	}
}

// TestLanguageAloneNamesItsMarket: a language that one market runs in
// names it; one that several share, or none, names no market.
func TestLanguageAloneNamesItsMarket(t *testing.T) {
	ix := mustBuild(t, fixture())
	for _, tt := range []struct {
		lang string
		want Market
		ok   bool
	}{
		{"de", de, true},
		{"en", Market{}, false},
		{"cs", Market{}, false},
		{"", Market{}, false},
	} {
		if m, ok := ix.ShardMarket("", tt.lang); m != tt.want || ok != tt.ok {
			t.Errorf("ShardMarket(%q, %q) = %v, %v; want %v, %v", "", tt.lang, m, ok, tt.want, tt.ok)
		}
	}
	// A language no market runs in has no ads, even for a phrase every
	// market's ads share.
	if hits := ix.Match(&Query{Page: true, Text: "Apple iPhone 5", Lang: "cs"}); len(hits) != 0 {
		t.Errorf("a Czech page got %d ads", len(hits))
	}
}
