package match

import "testing"

// TestSpacedIsNormalize: the build reads an ad's title and category for
// acronyms from their terms (spaced), which must spell them as Normalize
// does, the spelling acronymPhrases gives the phrases in.
func TestSpacedIsNormalize(t *testing.T) {
	b := &builder{termMap: map[string]uint32{}}
	for _, s := range []string{
		"Sony PlayStation 5 Digital Edition", "Solid-State-Drive (SSD), 1TB", "Apple iPhone 15 – 128 GB, Schwarz",
		"Ärger.Über   Straße", "WLAN-Router · Dual Band", "x\u00adample 4K/UHD", "İstanbul ΣΊΣΥΦΟΣ", "a.b.c 1.5", "  ", "",
	} {
		want := " " + Normalize(s) + " "
		if Normalize(s) == "" {
			want = " "
		}
		if got := b.spaced(b.termIDs(s)); got != want {
			t.Errorf("%q: spaced %q, Normalize %q", s, got, want)
		}
	}
}
