package match

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

func TestStringHelpersAgreeWithStrings(t *testing.T) {
	inputs := []string{"", "a", " a ", "a,b,,c", "\u00a0handy\u3000", "\t\n x \r", ",", "a,", "ü,ö ", "\u2000\u200a\u2028x\u205f", "\xff ", " \x85"}
	for _, s := range inputs {
		if got, want := TrimSpace(s), strings.TrimSpace(s); got != want {
			t.Errorf("TrimSpace(%q) = %q, strings %q", s, got, want)
		}
		if got, want := splitString(s, ","), strings.Split(s, ","); !slices.Equal(got, want) {
			t.Errorf("splitString(%q) = %q, strings %q", s, got, want)
		}
		b, a, f := CutByte(s, ',')
		wb, wa, wf := strings.Cut(s, ",")
		if b != wb || a != wa || f != wf {
			t.Errorf("CutByte(%q) = %q %q %v, strings %q %q %v", s, b, a, f, wb, wa, wf)
		}
	}
	for _, l := range [][]string{nil, {"a"}, {"a", ""}, {"x", "y", "z"}} {
		if got, want := joinStrings(l, ", "), strings.Join(l, ", "); got != want {
			t.Errorf("joinStrings(%q) = %q, strings %q", l, got, want)
		}
	}
	for r := rune(0); r <= 0x3000; r++ {
		if isSpace(r) != unicode.IsSpace(r) {
			t.Errorf("isSpace(%U) = %v", r, isSpace(r))
		}
	}
}

func TestItoa(t *testing.T) {
	for _, n := range []int{0, 7, 10, 99, 100, 1<<31 - 1, 1 << 40, -1, -250, math.MinInt, math.MaxInt} {
		if got, want := itoa(n), strconv.Itoa(n); got != want {
			t.Errorf("itoa(%d) = %q, want %q", n, got, want)
		}
	}
}
