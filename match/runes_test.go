package match

import (
	"testing"
	"unicode"
)

// TestRunesAgreeWithUnicode: in the scripts of our markets the compact
// rules say what package unicode says.
func TestRunesAgreeWithUnicode(t *testing.T) {
	for _, span := range [][2]rune{{0, 0x24F}, {0x370, 0x52F}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}} {
		for r := span[0]; r <= span[1]; r++ {
			if !unicode.Is(unicode.Latin, r) && !unicode.Is(unicode.Greek, r) && !unicode.Is(unicode.Cyrillic, r) && r >= 0x80 {
				continue // not a letter of these scripts: see below
			}
			want := unicode.IsLetter(r) || unicode.IsDigit(r)
			if got := isWordRune(r); got != want {
				t.Errorf("isWordRune(%U %c) = %v, unicode says %v", r, r, got, want)
			}
			if r >= 0x180 && r <= 0x24F {
				continue // Latin Extended-B keeps its case
			}
			if got, want := lowerRune(r), unicode.ToLower(r); got != want {
				t.Errorf("lowerRune(%U %c) = %U, unicode says %U", r, r, got, want)
			}
		}
	}
	// Punctuation, symbols and spaces anywhere split words.
	for _, r := range []rune{'™', '®', '©', '€', '–', '—', '…', '«', '»', '“', '”', '„', 0xA0, 0x2009, 0x3000, '。', '、', '😀', '→', '×', 0x301, 0xFEFF, '㎡'} {
		if isWordRune(r) {
			t.Errorf("isWordRune(%U %c) = true", r, r)
		}
	}
	// Letters and digits of other scripts make words.
	for _, r := range []rune{'日', 'あ', 'ア', '한', 'ש', 'ب', 'ह', '٣', '३', 'ก', 'Ω'} {
		if !isWordRune(r) {
			t.Errorf("isWordRune(%U %c) = false", r, r)
		}
	}
}

func TestLowerString(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", "iPhone 5": "iphone 5", "ÄRGER Über": "ärger über", "ΣΟΦΙΑ": "σοφια", "МОСКВА": "москва", "Ｇｏ": "ｇｏ", "80 Ω": "80 ω"} {
		if got := lowerString(in); got != want {
			t.Errorf("lowerString(%q) = %q, want %q", in, got, want)
		}
	}
}
