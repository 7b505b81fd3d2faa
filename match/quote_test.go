package match

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for s, want := range map[string]string{
		"de":         `"de"`,
		"a\"b\\c":    `"a\"b\\c"`,
		"\n\t\r\x01": `"\n\t\r\x01"`,
		"ä\xff":      `"ä\xff"`,
	} {
		if got := Quote(s); got != want {
			t.Errorf("Quote(%q) = %s, want %s", s, got, want)
		}
	}
	if q := Quote(strings.Repeat("ä", 40)); !strings.HasSuffix(q, "...") || !utf8.ValidString(q) {
		t.Errorf("Quote cut a rune: %s", q)
	}
}

// FuzzQuote: a quoted value is valid UTF-8 whatever the client sent.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"de", "é\"X\\", "\xff\x00", strings.Repeat("ü", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q := Quote(s); !utf8.ValidString(q) {
			t.Fatalf("Quote(%q) = %q is not valid UTF-8", s, q)
		}
	})
}
