package match

import "unicode/utf8"

// maxTermBytes bounds one term; longer words are cut, so no input makes a
// term (or the work to compare one) unbounded.
const maxTermBytes = 48

// token is one word of an input: its normalised term and where it stands.
type token struct {
	term       string
	id         int32 // term id in the index, -1 when the index lacks it
	start, end int32 // byte span in the input
	// brk is set when sentence punctuation or a line break stands before
	// the token: a phrase never runs across it.
	brk bool
}

// tokenize splits s into words and normalises each: lower case, diacritics
// folded (ü -> u, ß -> ss), German transcriptions folded the same way
// (ue -> u, so Müller, Mueller and Muller are one term) and a light stem for
// plurals and inflection (Handys -> handy, batteries -> battery). Index and
// query go through the same steps, so they meet whatever the spelling.
func tokenize(dst []token, s string, scratch []byte) ([]token, []byte) {
	return dst, scan(s, scratch, func(term []byte, start, end int, brk bool) {
		dst = append(dst, token{term: string(term), id: -1, start: int32(start), end: int32(end), brk: brk})
	})
}

// softHyphen is U+00AD, which pages put into long words to tell where
// they may be hyphenated.
const softHyphen = 0xAD

// scan calls emit with each normalised word of s; term is only valid
// during the call. scratch is reused and returned.
func scan(s string, scratch []byte, emit func(term []byte, start, end int, brk bool)) []byte {
	brk := false
	i := 0
	for i < len(s) {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if !isWordRune(r) {
			if isBreak(r) && (r != '.' || i+1 >= len(s) || !isWordByte(s[i+1])) {
				brk = true
			}
			i += n
			continue
		}
		start := i
		b := scratch[:0]
		for i < len(s) {
			r, n = rune(s[i]), 1
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRuneInString(s[i:])
			}
			if !isWordRune(r) {
				// A soft hyphen between letters is a hyphenation hint
				// ("Handy\u00adhülle"), no break: it is skipped.
				if r == softHyphen && i+n < len(s) {
					if next, _ := utf8.DecodeRuneInString(s[i+n:]); isWordRune(next) {
						i += n
						continue
					}
				}
				break
			}
			if len(b) < maxTermBytes {
				b = foldRune(b, r)
			}
			i += n
		}
		scratch = b
		emit(stem(foldDigraphs(b)), start, i, brk)
		brk = false
	}
	return scratch
}

// Normalize returns the terms of s as the index sees them, joined by a
// space: "Die besten Handys" -> "die best handy".
func Normalize(s string) string {
	toks, _ := tokenize(nil, s, nil)
	n := 0
	for _, t := range toks {
		n += len(t.term) + 1
	}
	b := make([]byte, 0, n)
	for i, t := range toks {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, t.term...)
	}
	return string(b)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isBreak(r rune) bool {
	switch r {
	case '.', '!', '?', ';', ':', '|', '\n', '\r', '\t', '(', ')', '[', ']', '{', '}', '"', 0x2022, 0x00B7, 0x2013, 0x2014:
		return true
	}
	return false
}

// foldRune appends r lower-cased and without diacritics. The table covers
// Latin-1 and the Latin Extended-A letters of European languages; other
// scripts are only lower-cased.
func foldRune(b []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(b, byte(r))
	}
	if r >= 0xC0 && r <= 0x17F {
		if s := foldTable[r-0xC0]; s != "" {
			return append(b, s...)
		}
	}
	return utf8.AppendRune(b, lowerRune(r))
}

// foldTable maps U+00C0..U+017F to ASCII; "" keeps the rune (lower-cased).
var foldTable = [0x180 - 0xC0]string{
	// U+00C0
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
	"d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "ss",
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
	"d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "y",
	// U+0100
	"a", "a", "a", "a", "a", "a", "c", "c", "c", "c", "c", "c", "c", "c", "d", "d",
	"d", "d", "e", "e", "e", "e", "e", "e", "e", "e", "e", "e", "g", "g", "g", "g",
	"g", "g", "g", "g", "h", "h", "h", "h", "i", "i", "i", "i", "i", "i", "i", "i",
	"i", "i", "ij", "ij", "j", "j", "k", "k", "k", "l", "l", "l", "l", "l", "l", "l",
	"l", "l", "l", "n", "n", "n", "n", "n", "n", "n", "n", "n", "o", "o", "o", "o",
	"o", "o", "oe", "oe", "r", "r", "r", "r", "r", "r", "s", "s", "s", "s", "s", "s",
	"s", "s", "t", "t", "t", "t", "t", "t", "u", "u", "u", "u", "u", "u", "u", "u",
	"u", "u", "u", "u", "w", "w", "y", "y", "y", "z", "z", "z", "z", "z", "z", "s",
}

// foldDigraphs folds the German transcriptions ae, oe, ue to a, o, u, so
// that "Mueller" meets "Müller" (already folded to "muller").
func foldDigraphs(b []byte) []byte {
	j := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		b[j] = c
		j++
		if i+1 < len(b) && b[i+1] == 'e' && (c == 'a' || c == 'o' || c == 'u') && i > 0 {
			i++
		}
	}
	return b[:j]
}

// stem strips plural and common inflection endings from a word of letters.
// It is deliberately light: the same word in the index and the query lands
// on the same stem, which is all matching needs.
func stem(b []byte) []byte {
	n := len(b)
	if n <= 3 {
		return b
	}
	for _, c := range b {
		if c < 'a' || c > 'z' {
			return b // words with digits or other scripts stay whole
		}
	}
	switch {
	case hasSuffix(b, "ies") && n > 4:
		b = append(b[:n-3], 'y')
	case hasSuffix(b, "sses"):
		b = b[:n-2]
	case hasSuffix(b, "shes"), hasSuffix(b, "ches"), hasSuffix(b, "xes"), hasSuffix(b, "zes"):
		b = b[:n-2]
	case b[n-1] == 's' && b[n-2] != 's' && b[n-2] != 'u' && b[n-2] != 'i':
		b = b[:n-1]
	case hasSuffix(b, "en") && n > 5:
		b = b[:n-2]
	}
	if n = len(b); n > 4 && b[n-1] == 'e' {
		b = b[:n-1]
	}
	return b
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}
