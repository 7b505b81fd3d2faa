//go:build !wasip1

package match

import (
	"strings"
	"testing"
)

// TestCriterion: a hit's criterion is its keywords joined by a space,
// whether it is a part of the query or a string of its own.
func TestCriterion(t *testing.T) {
	ix := mustBuild(t, oddAds())
	for _, text := range []string{"lg handy", "lg  handy", "handy lg", "Nokia Lumia", "nokia, lumia 630", "handy handy", "lg\u00adhandy shop", "apple iphone 5 weiß"} {
		for _, dist := range []Dist{DistNone, DistLow, DistHigh} {
			for _, h := range ix.Match(&Query{Text: text, Dist: dist, Size: MaxSize}) {
				if want := strings.Join(h.Keywords, " "); h.Criterion != want {
					t.Errorf("%q (dist %d): criterion %q, keywords %q", text, dist, h.Criterion, h.Keywords)
				}
			}
		}
	}
}

func TestJoined(t *testing.T) {
	for _, tc := range []struct {
		s    string
		kw   []string
		want bool
	}{
		{"gaming mouse", []string{"gaming", "mouse"}, true},
		{"gaming  mouse", []string{"gaming", "mouse"}, false},
		{"gaming mouse x", []string{"gaming", "mouse"}, false},
		{"gaming", []string{"gaming", "mouse"}, false},
		{"", nil, true},
		{"a b c", []string{"a", "b", "c"}, true},
		{"a-b", []string{"a", "b"}, false},
	} {
		if got := joined(tc.s, tc.kw); got != tc.want {
			t.Errorf("joined(%q, %q) = %v", tc.s, tc.kw, got)
		}
	}
}
