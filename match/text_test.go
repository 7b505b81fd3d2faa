package match

import "testing"

func TestNormalize(t *testing.T) {
	for _, group := range [][]string{
		{"Müller", "Mueller", "muller", "MÜLLER"},
		{"Handy", "handy", "Handys", "HANDYS"},
		{"battery", "batteries"},
		{"laptop", "laptops", "Laptops"},
		{"Kopfhörer", "kopfhoerer", "Kopfhorer"},
		{"Fußball", "Fussball"},
		{"headphones", "headphone"},
		{"Tasche", "Taschen"},
		// A soft hyphen inside a word is a hyphenation hint, not a break.
		{"Handyhülle", "Handy\u00adhülle", "Handy\u00adhül\u00adle"},
		{"Handy hülle", "Handy\u00ad hülle", "\u00adHandy hülle\u00ad"},
	} {
		for _, s := range group[1:] {
			if Normalize(s) != Normalize(group[0]) {
				t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q", s, Normalize(s), group[0], Normalize(group[0]))
			}
		}
	}
	if Normalize("iPhone 5") == Normalize("iPhone 6") {
		t.Error("numbers must stay distinct")
	}
}
