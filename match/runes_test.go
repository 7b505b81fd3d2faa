package match

import (
	"testing"
	"unicode"
)

// TestRunesAgreeWithUnicode: in the scripts of our markets the compact
// rules say what package unicode says.
func TestRunesAgreeWithUnicode(t *testing.T) {
	for _, span := range [][2]rune{{0, 0x24F}, {0x370, 0x52F}, {0x1E00, 0x1EFF}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}} {
		for r := span[0]; r <= span[1]; r++ {
			if !unicode.Is(unicode.Latin, r) && !unicode.Is(unicode.Greek, r) && !unicode.Is(unicode.Cyrillic, r) && r >= 0x80 {
				continue // not a letter of these scripts: see below
			}
			want := unicode.IsLetter(r) || unicode.IsDigit(r)
			if got := isWordRune(r); got != want {
				t.Errorf("isWordRune(%U %c) = %v, unicode says %v", r, r, got, want)
			}
			if r >= 0x180 && r <= 0x1FF || r >= 0x234 && r <= 0x24F || r == 0x220 || r >= 0x1E96 && r <= 0x1E9F && r != 0x1E9E {
				continue // these of Latin Extended-B and Additional keep their case
			}
			if got, want := lowerRune(r), unicode.ToLower(r); got != want {
				t.Errorf("lowerRune(%U %c) = %U, unicode says %U", r, r, got, want)
			}
		}
	}
	// Punctuation, symbols and spaces anywhere split words.
	for _, r := range []rune{'™', '®', '©', '€', '–', '—', '…', '«', '»', '“', '”', '„', 0xA0, 0x2009, 0x3000, '。', '、', '😀', '→', '×', 0x301, 0xFEFF, '㎡', '।', '・'} {
		if isWordRune(r) {
			t.Errorf("isWordRune(%U %c) = true", r, r)
		}
	}
	// Letters and digits of other scripts make words.
	for _, r := range []rune{'日', 'あ', 'ア', '한', 'ש', 'ب', 'ह', '٣', '३', 'ก', 'Ω', '々', 'ۥ'} {
		if !isWordRune(r) {
			t.Errorf("isWordRune(%U %c) = false", r, r)
		}
	}
}

func TestEqualLower(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"", "", true}, {"iPhone", "iphone", true}, {"IPHONE 5", "iphone 5", true}, {"ÄRGER", "ärger", true},
		{"ΣΟΦΙΑ", "σοφια", true}, {"80 Ω", "80 ω", true}, {"ȘOSETE", "șosete", true}, {"ẠN", "ạn", true}, {"STRAẞE", "straße", true}, {"iphone", "iphone5", false}, {"a", "", false},
		{"Ärger", "Arger", false},
	} {
		if got := equalLower(c.a, c.b); got != c.want {
			t.Errorf("equalLower(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// TestNotWordSorted: isWordRune's binary search needs the ranges sorted
// and apart.
func TestNotWordSorted(t *testing.T) {
	prev := rune(0x7F)
	for i, r := range notWord {
		if r[0] > r[1] || r[0] <= prev {
			t.Errorf("notWord[%d] = %U-%U is empty or not after %U", i, r[0], r[1], prev)
		}
		prev = r[1]
	}
}
