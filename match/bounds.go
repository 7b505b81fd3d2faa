//go:build !wasip1

package match

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// The bounds the server's full-text walk (prune.go) prunes by, computed
// from the index and kept beside it.

// Postings are bounded in blocks of blockLen, aligned on their place in
// postAd: a block can hold the end of one list and the start of the next,
// and its bound is then theirs together, which is still a bound of each.
// Each posting has its own bound too, in a byte: a share of its block's
// in postSteps steps, rounded up.
const (
	blockShift = 4
	blockLen   = 1 << blockShift
	postSteps  = 127
	postTyped  = 0x80
)

// fullTextBounds holds, for each block of postings, the most its ads can
// get from the query term that holds them, before the term's rarity (idf)
// and the product-type boost: the BM25 weights of the term and of its
// synonyms (which a query always scores together) in the ad, summed,
// times the ad's bid factor. Ads whose product type is one of those words
// are bounded apart from the others, as only they can be doubled by the
// type of a query that names it. The shard does not carry the bounds:
// Build computes them, an opened index on its first full-text query.
type fullTextBounds struct {
	once         sync.Once
	typed, other []float32 // per block, rounded up
	post         []uint8   // per posting: postTyped, and its share of its block's bound
	// long holds what a term of champMin postings or more keeps, so a
	// query does not go through its blocks for it.
	long   map[uint32]longList
	scored atomic.Int64 // ads the walks scored, for the tests
	// merge is what the merge reads of each ad (mergeAds).
	mergeOnce sync.Once
	merge     []mergeAd
}

// longList is a long posting list's bounds, and its champN ads with the
// highest weights, ascending: scored first, they set a threshold before
// the walk starts.
type longList struct {
	typed, other float32
	champs       []uint32
}

// A term of champMin postings or more keeps its champN best ads.
const champMin, champN = 1024, 64

// prepareFullText computes the bounds once.
func (ix *Index) prepareFullText() {
	ix.ft.once.Do(ix.computeBounds)
}

func (ix *Index) computeBounds() {
	n := (len(ix.postAd) + blockLen - 1) >> blockShift
	typed, other := make([]float32, n), make([]float32, n)
	ads := make([]adWeight, len(ix.ads))
	for i := range ads {
		ads[i] = adWeightOf(&ix.ads[i], ix.avgLen)
	}
	bound := func(p uint32, v float64, isTyped bool) {
		j, w := p>>blockShift, up32(v)
		if isTyped {
			typed[j] = max(typed[j], w)
		} else {
			other[j] = max(other[j], w)
		}
	}
	// Each posting's own bound, in 7 bits, a share of its block's bound
	// for its kind, rounded up; the high bit says which kind.
	post := make([]uint8, len(ix.postAd))
	share := func(p uint32, v float64, isTyped bool) {
		j, flag := p>>blockShift, uint8(0)
		b := float64(other[j])
		if isTyped {
			b, flag = float64(typed[j]), postTyped
		}
		q := uint8(postSteps)
		if v < b {
			q = uint8(min(math.Ceil(v/b*postSteps*(1+1e-12)), postSteps))
		}
		post[p] = flag | q
	}
	// The synonym groups' postings bound their blocks first; then the
	// other postings, which come block after block, each weighed once:
	// a block's bound is whole once its last one is, and its postings'
	// shares follow from the weights kept meanwhile.
	groups, inGroup := ix.termGroups()
	ix.groupWeights(ads, groups, bound)
	type weighed struct {
		p       uint32
		v       float64
		isTyped bool
	}
	var block [blockLen]weighed
	n, cur := 0, uint32(0)
	postAd, tfs := ix.postAd, ix.postTF
	for t := range inGroup {
		if inGroup[t] {
			continue
		}
		for p := ix.postOff[t]; p < ix.postOff[t+1]; p++ {
			if j := p >> blockShift; j != cur {
				for _, w := range block[:n] {
					share(w.p, w.v, w.isTyped)
				}
				n, cur = 0, j
			}
			w := weighed{p, tfWeight(tfs[p], ads[postAd[p]]), tfs[p]&typeFlag != 0}
			bound(w.p, w.v, w.isTyped)
			block[n] = w
			n++
		}
	}
	for _, w := range block[:n] {
		share(w.p, w.v, w.isTyped)
	}
	ix.groupWeights(ads, groups, share)
	ix.ft.typed, ix.ft.other, ix.ft.post = typed, other, post
	long := make(map[uint32]longList)
	for t := range len(ix.postOff) - 1 {
		if lo, hi := ix.postOff[t], ix.postOff[t+1]; hi-lo >= champMin {
			l := longList{champs: ix.champions(lo, hi, ads)}
			for j := lo >> blockShift; j <= (hi-1)>>blockShift; j++ {
				l.typed, l.other = max(l.typed, typed[j]), max(l.other, other[j])
			}
			long[uint32(t)] = l
		}
	}
	ix.ft.long = long
}

// termGroups returns the term ids of each synonym group the index has
// two or more words of, and which terms are in one.
func (ix *Index) termGroups() ([][]uint32, []bool) {
	groups := ix.synonymGroups()
	inGroup := make([]bool, len(ix.postOff)-1)
	for _, g := range groups {
		for _, t := range g {
			inGroup[t] = true
		}
	}
	return groups, inGroup
}

// groupWeights calls put with each posting of the terms of groups, the
// most its ad can get from the query term that holds it, per unit of idf,
// and whether that ad is typed by the term. ads are the ads' weights
// (adWeightOf). A posting of any other term gets tfWeight of its own.
//
// A group's words count together: each posting is bounded by what all of
// them give its ad, typed when the ad is any of their types. The word the
// query wrote weighs 1, its synonyms synonymWeight: the sum is at most
// synonymWeight times all plus the rest of the largest.
func (ix *Index) groupWeights(ads []adWeight, groups [][]uint32, put func(p uint32, w float64, isTyped bool)) {
	postAd, tfs := ix.postAd, ix.postTF
	sum := make([]float64, len(ads))
	most := make([]float64, len(ads))
	isTyped := make([]bool, len(ads))
	for _, g := range groups {
		for _, t := range g {
			for p := ix.postOff[t]; p < ix.postOff[t+1]; p++ {
				ad := postAd[p]
				w := tfWeight(tfs[p], ads[ad])
				sum[ad] += w
				most[ad] = max(most[ad], w)
				isTyped[ad] = isTyped[ad] || tfs[p]&typeFlag != 0
			}
		}
		for _, t := range g {
			for p := ix.postOff[t]; p < ix.postOff[t+1]; p++ {
				ad := postAd[p]
				put(p, (synonymWeight*sum[ad]+(1-synonymWeight)*most[ad])*boundSlack, isTyped[ad])
			}
		}
		for _, t := range g {
			for _, ad := range postAd[ix.postOff[t]:ix.postOff[t+1]] {
				sum[ad], most[ad], isTyped[ad] = 0, 0, false
			}
		}
	}
}

// synonymGroups returns the term ids of each synonym group the index
// has two or more words of.
func (ix *Index) synonymGroups() [][]uint32 {
	var groups [][]uint32
	for _, g := range synonymGroups {
		var ids []uint32
		for _, w := range g {
			if id := ix.termID(Normalize(w)); id >= 0 && !slices.Contains(ids, uint32(id)) {
				ids = append(ids, uint32(id))
			}
		}
		if len(ids) > 1 {
			groups = append(groups, ids)
		}
	}
	return groups
}

// champions returns the champN ads of postings [lo, hi) with the highest
// weights, a type posting's doubled, ascending. ads are the ads' weights.
func (ix *Index) champions(lo, hi uint32, ads []adWeight) []uint32 {
	type champ struct {
		w  float64
		ad uint32
	}
	h := make([]champ, 0, champN) // a min-heap by weight
	less := func(i, j int) bool { return h[i].w < h[j].w }
	down := func(i int) {
		for {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && less(l, m) {
				m = l
			}
			if r < len(h) && less(r, m) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for p := lo; p < hi; p++ {
		ad := ix.postAd[p]
		w := tfWeight(ix.postTF[p], ads[ad])
		if ix.postTF[p]&typeFlag != 0 {
			w *= 2
		}
		switch {
		case len(h) < champN:
			h = append(h, champ{w, ad})
			for i := len(h) - 1; i > 0 && less(i, (i-1)/2); i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case w > h[0].w:
			h[0] = champ{w, ad}
			down(0)
		}
	}
	best := make([]uint32, len(h))
	for i, c := range h {
		best[i] = c.ad
	}
	slices.Sort(best)
	return best
}

// postingWeight is what a posting adds to its ad's score per unit of idf,
// times the ad's bid factor: the quantity the bounds bound.
func postingWeight(t uint8, a *adRec, avg float64) float64 {
	return tfWeight(t, adWeightOf(a, avg))
}

// adWeight is what of postingWeight depends on the ad alone: worked out
// once per ad, not once per posting of the ad, when all of them are
// bounded.
type adWeight struct{ norm, bid float64 }

func adWeightOf(a *adRec, avg float64) adWeight {
	return adWeight{norm: float64(bm25K1 * float64(float64(a.docLen)/avg)), bid: bidFactor(a.bid)}
}

func tfWeight(t uint8, w adWeight) float64 {
	const k1 = bm25K1
	tf := float64(t & maxTF)
	return tf * (k1 + 1) / (tf + w.norm) * w.bid
}

// up32 rounds v up to a float32, so a stored bound is never below it.
func up32(v float64) float32 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}
