package pages

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

// The article extraction benchmark's own metric: 4-token shingles, token
// being a run of Unicode word characters, counted as multisets; each page's
// true positives, false positives and false negatives are normalised to sum
// to 1, precision and recall are averaged over the pages that have any, and
// F1 is the harmonic mean of the two averages.

var wordRE = regexp.MustCompile(`[\p{L}\p{N}_]+`)

const shingleN = 4

func shingles(text string) map[string]int {
	toks := wordRE.FindAllString(text, -1)
	out := map[string]int{}
	for i := 0; i < max(1, len(toks)-shingleN+1); i++ {
		s := toks[i:min(i+shingleN, len(toks))]
		if len(s) > 0 {
			out[strings.Join(s, "\x00")]++
		}
	}
	return out
}

// shingleCounts is one page's normalised true positives, false positives
// and false negatives.
type shingleCounts struct{ tp, fp, fn float64 }

func shingleMatch(truth, pred string) shingleCounts {
	ts, ps := shingles(truth), shingles(pred)
	var c shingleCounts
	for k, t := range ts {
		p := ps[k]
		c.tp += float64(min(t, p))
		c.fn += float64(max(0, t-p))
	}
	for k, p := range ps {
		c.fp += float64(max(0, p-ts[k]))
	}
	if s := c.tp + c.fp + c.fn; s > 0 {
		c.tp, c.fp, c.fn = c.tp/s, c.fp/s, c.fn/s
	}
	return c
}

func (c shingleCounts) precision() float64 {
	switch {
	case c.fp == 0 && c.fn == 0:
		return 1
	case c.tp == 0 && c.fp == 0:
		return 0
	}
	return c.tp / (c.tp + c.fp)
}

func (c shingleCounts) recall() float64 {
	switch {
	case c.fp == 0 && c.fn == 0:
		return 1
	case c.tp == 0 && c.fn == 0:
		return 0
	}
	return c.tp / (c.tp + c.fn)
}

// shingleScore is precision, recall and F1 over pages as the benchmark
// computes them.
func shingleScore(pages []shingleCounts) (p, r, f float64) {
	var np, nr int
	for _, c := range pages {
		if c.tp+c.fp > 0 {
			p += c.precision()
			np++
		}
		if c.tp+c.fn > 0 {
			r += c.recall()
			nr++
		}
	}
	if np > 0 {
		p /= float64(np)
	}
	if nr > 0 {
		r /= float64(nr)
	}
	if p+r > 0 {
		f = 2 * p * r / (p + r)
	}
	return p, r, f
}

func TestShingleScore(t *testing.T) {
	same := shingleMatch("The quick brown fox jumps.", "the quick brown fox jumps")
	// Tokens keep their case: "The" and "the" differ.
	if same.tp == 0 || same.fp == 0 {
		t.Errorf("case: %+v", same)
	}
	exact := shingleMatch("Ein schöner Tag, nicht wahr? Ja.", "Ein schöner Tag — nicht wahr?! Ja")
	if exact != (shingleCounts{1, 0, 0}) {
		t.Errorf("punctuation is not a token: %+v", exact)
	}
	// Half the text: 2 of the 5 shingles of "a b c d e f g h" are missing.
	half := shingleMatch("a b c d e f g h", "a b c d e f")
	if math.Abs(half.precision()-1) > 1e-12 || math.Abs(half.recall()-0.6) > 1e-12 {
		t.Errorf("half: %+v p=%v r=%v", half, half.precision(), half.recall())
	}
	// Short texts are one shingle of what there is.
	if c := shingleMatch("a b", "a b"); c != (shingleCounts{1, 0, 0}) {
		t.Errorf("short: %+v", c)
	}
	// An empty prediction has no precision to average; its recall is 0.
	p, r, f := shingleScore([]shingleCounts{shingleMatch("a b c d", ""), shingleMatch("a b c d", "a b c d")})
	if p != 1 || r != 0.5 || math.Abs(f-2.0/3) > 1e-12 {
		t.Errorf("score: %v %v %v", p, r, f)
	}
}
