package match

import "unicode/utf8"

// Which runes make words, and their lower case, by a compact rule rather
// than the unicode package, whose tables would grow the page's module (see
// docs/PERFORMANCE.md). The rules are exact for Latin (Basic, Latin-1,
// Extended-A), Greek and Cyrillic, the scripts of our markets, which a test
// checks against package unicode; elsewhere a rune is a letter unless it
// lies in a block of punctuation, symbols, marks or spaces, and keeps its
// case unless lowerRune names its script.

// notWord lists, sorted, the ranges above U+00BF that hold no letters or
// digits that a word would contain.
var notWord = [...][2]rune{
	{0xD7, 0xD7}, {0xF7, 0xF7}, // × ÷
	{0x2C2, 0x2C5}, {0x2D2, 0x2DF}, {0x2E5, 0x2EB}, {0x2ED, 0x2ED}, {0x2EF, 0x36F}, // modifier symbols, combining marks
	{0x375, 0x375}, {0x37E, 0x37E}, {0x384, 0x385}, {0x387, 0x387}, {0x3F6, 0x3F6}, // Greek signs
	{0x482, 0x489},                 // Cyrillic signs and combining marks
	{0x55A, 0x55F}, {0x589, 0x58F}, // Armenian punctuation
	{0x591, 0x5CF}, {0x5EB, 0x5EE}, {0x5F3, 0x5FF}, // Hebrew marks and punctuation
	{0x600, 0x61F}, {0x64B, 0x65F}, {0x66A, 0x66D}, {0x6D4, 0x6D4}, {0x6D6, 0x6E4}, {0x6E7, 0x6ED}, // Arabic
	{0x964, 0x965}, {0xF0B, 0xF0B}, {0x104A, 0x104B}, {0x17D4, 0x17D6}, // dandas and other sentence marks
	{0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, // combining marks
	{0x2000, 0x206F},                                     // general punctuation, spaces
	{0x20A0, 0x20FF},                                     // currency, combining marks for symbols
	{0x2100, 0x2125}, {0x2127, 0x2129}, {0x212C, 0x214F}, // letterlike symbols (™ ℠ № ℃) but Ω K Å
	{0x2190, 0x2BFF},                                                       // arrows, mathematical and technical symbols, box drawing, shapes, dingbats
	{0x2E00, 0x2E7F},                                                       // supplemental punctuation
	{0x3000, 0x3004}, {0x3007, 0x3030}, {0x3036, 0x303A}, {0x303D, 0x303F}, // CJK punctuation, not 々 〆 〱-〵 〻 〼
	{0x30FB, 0x30FB},                                                       // katakana middle dot
	{0x3300, 0x33FF},                                                       // CJK compatibility squares: ㎡ ㎏
	{0xD800, 0xF8FF},                                                       // surrogates, private use
	{0xFE00, 0xFE2F},                                                       // variation selectors, combining half marks
	{0xFE30, 0xFE6F},                                                       // CJK compatibility and small form punctuation
	{0xFEFF, 0xFEFF},                                                       // byte order mark
	{0xFF00, 0xFF0F}, {0xFF1A, 0xFF20}, {0xFF3B, 0xFF40}, {0xFF5B, 0xFF65}, // fullwidth punctuation
	{0xFFF0, 0xFFFF},    // specials
	{0x1F000, 0x1FAFF},  // emoji and pictographs
	{0xE0000, 0x10FFFF}, // tags, private use
}

// isWordRune reports whether r belongs in a word: a letter or a digit.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	if r < 0xC0 {
		return r == 0xAA || r == 0xB5 || r == 0xBA // ª µ º
	}
	lo, hi := 0, len(notWord)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < notWord[m][0]:
			hi = m
		case r > notWord[m][1]:
			lo = m + 1
		default:
			return false
		}
	}
	return true
}

// lowerRune lower-cases Latin (but for U+0180-U+01FF), Greek, Cyrillic,
// Armenian and fullwidth Latin letters; other runes are returned as they
// are.
func lowerRune(r rune) rune {
	switch {
	case r < utf8.RuneSelf:
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
	case r >= 0xC0 && r <= 0xDE && r != 0xD7:
		r += 0x20
	case r == 0x130:
		r = 'i'
	case r >= 0x100 && r <= 0x137, r >= 0x14A && r <= 0x177:
		r |= 1
	case r >= 0x139 && r <= 0x148, r >= 0x179 && r <= 0x17E:
		if r&1 == 1 {
			r++
		}
	case r == 0x178:
		r = 0xFF
	case r == 0x370 || r == 0x372 || r == 0x376 || r == 0x3F7 || r == 0x3FA:
		r++
	case r >= 0x3FD && r <= 0x3FF:
		r -= 0x3FD - 0x37B
	case r == 0x37F:
		r = 0x3F3
	case r == 0x3CF:
		r = 0x3D7
	case r == 0x3F4:
		r = 0x3B8
	case r == 0x3F9:
		r = 0x3F2
	case r == 0x386:
		r = 0x3AC
	case r >= 0x388 && r <= 0x38A:
		r += 37
	case r == 0x38C:
		r = 0x3CC
	case r == 0x38E || r == 0x38F:
		r += 63
	case r >= 0x391 && r <= 0x3AB && r != 0x3A2:
		r += 0x20
	case r >= 0x200 && r <= 0x21F, r >= 0x222 && r <= 0x233, r >= 0x1E00 && r <= 0x1E95, r >= 0x1EA0 && r <= 0x1EFF:
		r |= 1 // Latin Extended-B (Romanian Ș Ț) and Additional (Vietnamese)
	case r == 0x1E9E:
		r = 0xDF // capital sharp s
	case r >= 0x3D8 && r <= 0x3EF:
		r |= 1
	case r >= 0x400 && r <= 0x40F:
		r += 0x50
	case r >= 0x410 && r <= 0x42F:
		r += 0x20
	case r >= 0x460 && r <= 0x481, r >= 0x48A && r <= 0x4BF, r >= 0x4D0 && r <= 0x52F:
		r |= 1
	case r == 0x4C0:
		r = 0x4CF
	case r >= 0x4C1 && r <= 0x4CE:
		if r&1 == 1 {
			r++
		}
	case r >= 0x531 && r <= 0x556:
		r += 0x30
	case r == 0x2126: // ohm sign
		r = 0x3C9
	case r == 0x212A: // kelvin sign
		r = 'k'
	case r == 0x212B: // angstrom sign
		r = 0xE5
	case r >= 0xFF21 && r <= 0xFF3A:
		r += 0x20
	}
	return r
}

// equalLower reports whether a and b are equal once lower-cased with
// lowerRune.
func equalLower(a, b string) bool {
	for a != "" && b != "" {
		ra, na := rune(a[0]), 1
		if ra >= utf8.RuneSelf {
			ra, na = utf8.DecodeRuneInString(a)
		}
		rb, nb := rune(b[0]), 1
		if rb >= utf8.RuneSelf {
			rb, nb = utf8.DecodeRuneInString(b)
		}
		if ra != rb && lowerRune(ra) != lowerRune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b == ""
}

// firstRune and lastRune decode the first and the last rune of a
// non-empty s and give its width.
func firstRune(s string) (rune, int) {
	if s[0] < utf8.RuneSelf {
		return rune(s[0]), 1
	}
	return utf8.DecodeRuneInString(s)
}

func lastRune(s string) (rune, int) {
	if c := s[len(s)-1]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeLastRuneInString(s)
}
