//go:build !wasip1

package match

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSynonymGroupsClosed: a query scores a word with its synonyms
// (withSynonyms), and the walk bounds each word by the sum over its
// group (computeBounds), so every word's synonyms must have the same
// group as the word itself.
func TestSynonymGroupsClosed(t *testing.T) {
	for w := range synonyms {
		g := withSynonyms(w)
		slices.Sort(g)
		for _, s := range withSynonyms(w) {
			h := withSynonyms(s)
			slices.Sort(h)
			if !slices.Equal(g, h) {
				t.Errorf("%q scores with %v, its synonym %q with %v", w, g, s, h)
			}
		}
	}
}

// TestBoundsHoldEveryPosting: each posting's weight is within its block's
// bound, typed or not, for a built index and one opened from its shard.
func TestBoundsHoldEveryPosting(t *testing.T) {
	ix := mustBuild(t, fixture())
	opened, err := Open(ix.Encode())
	if err != nil {
		t.Fatal(err)
	}
	opened.prepareFullText()
	for _, x := range []*Index{ix, opened} {
		for p, ad := range x.postAd {
			w := postingWeight(x.postTF[p], &x.ads[ad], x.avgLen)
			j := p >> blockShift
			if b := float64(max(x.ft.typed[j], x.ft.other[j])); w > b {
				t.Fatalf("posting %d of ad %d weighs %v, its block's bound is %v", p, ad, w, b)
			}
			// Its own bound, of its kind: typed when its ad is of the
			// word's type (or of a synonym's).
			q, base := x.ft.post[p], float64(x.ft.other[j])
			if q&postTyped != 0 {
				base = float64(x.ft.typed[j])
			}
			if x.postTF[p]&typeFlag != 0 && q&postTyped == 0 {
				t.Fatalf("posting %d of ad %d is of the word's type, its own bound is not", p, ad)
			}
			if b := base * float64(q&^postTyped) / postSteps; w > b {
				t.Fatalf("posting %d of ad %d weighs %v, its own bound is %v", p, ad, w, b)
			}
		}
	}
}

// TestSelectBest: selectBest puts the m best candidates first, as sorting
// them would, for every m, with scores that tie (decided by the ad) and
// lists in rising, falling and random order.
func TestSelectBest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sorted := func(c []mergeCand) {
		slices.SortFunc(c, func(a, b mergeCand) int {
			if betterMerged(&a, &b) {
				return -1
			}
			return 1
		})
	}
	for n := range 130 {
		for _, order := range []string{"random", "rising", "falling", "ties"} {
			c := make([]mergeCand, n)
			for i := range c {
				c[i] = mergeCand{ad: uint32(r.IntN(1 << 20)), score: float64(r.IntN(1000))}
				switch order {
				case "rising":
					c[i].score = float64(i)
				case "falling":
					c[i].score = float64(n - i)
				case "ties":
					c[i].score = float64(r.IntN(3))
				}
			}
			// Distinct ads, as an index's are.
			for i := range c {
				c[i].ad = c[i].ad<<8 | uint32(i)
			}
			want := slices.Clone(c)
			sorted(want)
			for m := range n + 2 {
				got := slices.Clone(c)
				selectBest(got, m)
				k := min(m, n)
				head := slices.Clone(got[:k])
				sorted(head)
				if !slices.Equal(head, want[:k]) {
					t.Fatalf("%d candidates, %s, m %d: the first %d are not the best", n, order, m, k)
				}
				sorted(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%d candidates, %s, m %d: selectBest lost or changed candidates", n, order, m)
				}
			}
		}
	}
}
