//go:build !wasip1

package match

import (
	"math"
	"sync"
	"sync/atomic"
)

// The server ranks full-text queries by block-max WAND (Ding and Suel,
// 2011): it walks the query's posting lists together in ad order and
// scores an ad only when the upper bounds of the lists that hold it could
// lift it above the worst of the keep best so far. A common word's
// hundreds of thousands of postings are mostly skipped a block at a time.
// The answer is the exhaustive loop's (fulltext.go), which the module
// keeps: the same candidates with the same scores, to the last bit.

// pruning is true: the server prunes full-text queries (prunedFullText).
const pruning = true

// Postings are bounded in blocks of blockLen, aligned on their place in
// postAd: a block can hold the end of one list and the start of the next,
// and its bound is then theirs together, which is still a bound of each.
const (
	blockShift = 6
	blockLen   = 1 << blockShift
)

// pruneMin is the fewest postings a query must have for the walk to pay:
// below it the exhaustive loop, a few nanoseconds a posting, is faster.
const pruneMin = 1024

// boundSlack widens every upper bound against the rounding of the sums
// that compare it with exact scores: an ad is skipped only when its bound
// is below the threshold by more than rounding could explain.
const boundSlack = 1 + 1e-9

// fullTextBounds holds, for each block of postings, the most any of them
// can add to an ad's final score before its list's rarity (idf) and the
// product-type boost: its BM25 term weight times the ad's bid factor,
// apart for the postings that name the ad's product type and the others.
// The shard does not carry them: Build computes them, an opened index on
// its first full-text query.
type fullTextBounds struct {
	once         sync.Once
	typed, other []float32    // per block, rounded up
	scored       atomic.Int64 // ads the walks scored, for the tests
}

// prepareFullText computes the block bounds once.
func (ix *Index) prepareFullText() {
	ix.ft.once.Do(ix.computeBounds)
}

func (ix *Index) computeBounds() {
	n := (len(ix.postAd) + blockLen - 1) >> blockShift
	typed, other := make([]float32, n), make([]float32, n)
	ads, tfs, avg := ix.ads, ix.postTF, ix.avgLen
	for p, ad := range ix.postAd {
		v := up32(postingWeight(tfs[p], &ads[ad], avg))
		j := p >> blockShift
		if tfs[p]&typeFlag != 0 {
			typed[j] = max(typed[j], v)
		} else {
			other[j] = max(other[j], v)
		}
	}
	ix.ft.typed, ix.ft.other = typed, other
}

// postingWeight is what a posting adds to its ad's score per unit of idf,
// times the ad's bid factor: the quantity the bounds bound.
func postingWeight(t uint8, a *adRec, avg float64) float64 {
	const k1, b = 1.2, 0.75
	tf := float64(t & maxTF)
	norm := k1 * (1 - b + b*float64(a.docLen)/avg)
	return tf * (k1 + 1) / (tf + norm) * bidFactor(a.bid)
}

// up32 rounds v up to a float32, so a stored bound is never below it.
func up32(v float64) float32 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// The full-text modes: the walk where it pays, always the exhaustive
// loop, always the walk.
const (
	walkWherePays fullTextMode = iota
	walkNever
	walkAlways
)

// MatchExhaustive is Match scoring every posting of a full-text query, as
// the module does: the baseline the pruned evaluation is tested and
// measured against. Other queries are answered as Match answers them.
func (ix *Index) MatchExhaustive(q *Query) []Hit {
	e := *q
	e.fullText = walkNever
	return ix.Match(&e)
}

// prunedFullText ranks a full-text query by the walk, unless its mode
// says otherwise or it has too few postings for the walk to pay.
func (ix *Index) prunedFullText(q *Query, alts []alt, required uint32, f filter, keep int) ([]cand, bool) {
	switch q.fullText {
	case walkNever:
		return nil, false
	case walkWherePays:
		total := 0
		for _, a := range alts {
			total += int(ix.postOff[a.id+1] - ix.postOff[a.id])
		}
		if total < pruneMin {
			return nil, false
		}
	}
	ix.prepareFullText()
	h, scored := ix.walkFullText(alts, required, q.Operator == OpAnd, f, keep)
	ix.ft.scored.Add(int64(scored))
	return h, true
}

// listCursor walks one alternative's posting list.
type listCursor struct {
	pos, end uint32 // the current posting and the list's end in postAd
	doc      uint32 // postAd[pos], or the walk's end once the list is done
	alt      int    // the alternative's place in alts: scores add in that order
	idf      float64
	// typed and other scale a block's bounds into bounds of the final
	// score: idf, doubled where the ads may get the product-type boost.
	typed, other float64
	ub           float64 // the bound of the whole list
}

// walkFullText returns the keep best candidates of the query, as the
// exhaustive loop in matchFullText does: the same ads, masks and scores;
// and how many ads it scored, for the tests.
func (ix *Index) walkFullText(alts []alt, required uint32, and bool, f filter, keep int) (h worst, scored int) {
	const k1, b = 1.2, 0.75
	n := float64(len(ix.ads))
	end := uint32(len(ix.ads))
	ads, postAd, postTF, avg := ix.ads, ix.postAd, ix.postTF, ix.avgLen
	var groupDF [maxQueryTerms]uint32
	for _, a := range alts {
		groupDF[a.k] += ix.postOff[a.id+1] - ix.postOff[a.id]
	}
	// An ad gets the type boost only when its product type is a term of
	// the query's last word: such an ad has that type posting in a head
	// list. So a type posting can be doubled only in a list of a head
	// term, and any other posting only when some head list has type
	// postings at all.
	if keep <= 0 {
		return nil, 0
	}
	cs := make([]listCursor, len(alts))
	oth := make([]float64, len(alts))
	boostOther := 1.0
	for i, a := range alts {
		lo, hi := ix.postOff[a.id], ix.postOff[a.id+1]
		df := float64(min(groupDF[a.k], uint32(len(ix.ads))))
		idf := float64(a.w * ln(float64(1+(n-df+0.5)/(df+0.5))))
		c := &cs[i]
		*c = listCursor{pos: lo, end: hi, doc: end, alt: i, idf: idf, typed: idf, other: idf}
		if lo < hi {
			c.doc = postAd[lo]
		}
		for _, h := range alts {
			if h.head && h.id == a.id {
				c.typed = 2 * idf
			}
		}
		// ub holds the list's own bounds until all are known.
		t, o := ix.listMax(lo, hi)
		if a.head && t > 0 {
			boostOther = 2
		}
		c.ub = max(c.typed*t, idf*o)
		oth[i] = idf * o
	}
	for i := range cs {
		c := &cs[i]
		c.other *= boostOther
		c.ub = max(c.ub, boostOther*oth[i]) * boundSlack
	}
	sortCursors(cs)

	h = make(worst, 0, min(keep, len(postAd)))
	theta := math.Inf(-1)
	for {
		if and {
			// Every required term must be there: no ad before the
			// latest of the terms' first ads can be.
			lower := uint32(0)
			for k := uint32(0); k < maxQueryTerms; k++ {
				if required&(1<<k) == 0 {
					continue
				}
				first := end
				for i := range cs {
					if alts[cs[i].alt].k == k {
						first = min(first, cs[i].doc)
					}
				}
				lower = max(lower, first)
			}
			if lower >= end {
				break
			}
			if cs[0].doc < lower {
				for i := range cs {
					if cs[i].doc < lower {
						ix.seek(&cs[i], lower, end)
					}
				}
				sortCursors(cs)
			}
		}
		// The pivot: the first list at which the bounds of the lists up to
		// it could beat the threshold. No ad before its ad can.
		p, sum := -1, 0.0
		for i := range cs {
			if cs[i].doc >= end {
				break
			}
			sum += cs[i].ub
			if sum > theta {
				p = i
				break
			}
		}
		if p < 0 {
			break
		}
		pd := cs[p].doc
		for p+1 < len(cs) && cs[p+1].doc == pd {
			p++
		}
		if len(h) == keep {
			// The bounds of the blocks that would hold pd: when they
			// cannot beat the threshold, no ad up to the first of those
			// blocks' ends can.
			bound, next := 0.0, end
			if p+1 < len(cs) {
				next = cs[p+1].doc
			}
			for i := 0; i <= p; i++ {
				bb, last := ix.blockAt(&cs[i], pd)
				bound += bb
				next = min(next, last)
			}
			if bound*boundSlack <= theta {
				for i := 0; i <= p; i++ {
					ix.seek(&cs[i], next, end)
				}
				sortCursors(cs)
				continue
			}
		}
		if cs[0].doc != pd {
			for i := 0; cs[i].doc < pd; i++ {
				ix.seek(&cs[i], pd, end)
			}
			sortCursors(cs)
			continue
		}
		// Score pd as the exhaustive loop does: term by term in the
		// query's order (the cursors at pd are in that order), the same
		// arithmetic, the same rounding.
		scored++
		a := &ads[pd]
		var acc float64
		var mask uint32
		for i := 0; i <= p; i++ {
			c := &cs[i]
			al := &alts[c.alt]
			t := postTF[c.pos]
			tf := float64(t & maxTF)
			norm := float64(k1 * (1 - b + b*float64(a.docLen)/avg))
			acc = float64(acc + c.idf*float64(tf*(k1+1))/float64(tf+norm))
			mask |= al.bit
			if t&typeFlag != 0 && al.head {
				mask |= typeBit
			}
			c.pos++
			c.doc = end
			if c.pos < c.end {
				c.doc = postAd[c.pos]
			}
		}
		sortCursors(cs)
		m := mask &^ typeBit
		if (!and || m&required == required) && f.ok(a) {
			c := cand{ad: pd, mask: m, score: float64(acc * bidFactor(a.bid)), ext: -1}
			if m != mask && m&required == required {
				c.score = float64(c.score * typeBoost)
			}
			if len(h) < keep || (keep > 0 && better(&c, &h[0])) {
				h.keep(keep, c)
				if len(h) == keep {
					theta = h[0].score
				}
			}
		}
	}
	return h, scored
}

// listMax returns the bounds of the postings [lo, hi): the blocks' for
// the blocks inside it, and the postings' own in the blocks it shares with
// other lists.
func (ix *Index) listMax(lo, hi uint32) (typed, other float64) {
	add := func(p uint32) {
		v := float64(up32(postingWeight(ix.postTF[p], &ix.ads[ix.postAd[p]], ix.avgLen)))
		if ix.postTF[p]&typeFlag != 0 {
			typed = max(typed, v)
		} else {
			other = max(other, v)
		}
	}
	p := lo
	for ; p < hi && p%blockLen != 0; p++ {
		add(p)
	}
	for ; p+blockLen <= hi; p += blockLen {
		j := p >> blockShift
		typed, other = max(typed, float64(ix.ft.typed[j])), max(other, float64(ix.ft.other[j]))
	}
	for ; p < hi; p++ {
		add(p)
	}
	return typed, other
}

// blockAt returns the bound of the block of c's list that holds its first
// ad at or after doc, and 1 + the last ad of the list in that block; 0 and
// end when the list has no ad from doc on.
func (ix *Index) blockAt(c *listCursor, doc uint32) (float64, uint32) {
	pos := c.pos
	for pos < c.end {
		last := min(pos|(blockLen-1), c.end-1)
		if d := ix.postAd[last]; d >= doc {
			j := pos >> blockShift
			return max(c.typed*float64(ix.ft.typed[j]), c.other*float64(ix.ft.other[j])), d + 1
		}
		pos = last + 1
	}
	return 0, uint32(len(ix.ads))
}

// seek moves c to its first ad at or after doc: a block at a time by the
// blocks' last ads, then by halves within the block.
func (ix *Index) seek(c *listCursor, doc, end uint32) {
	if c.doc >= doc {
		return
	}
	postAd := ix.postAd
	pos := c.pos
	for {
		last := min(pos|(blockLen-1), c.end-1)
		if postAd[last] >= doc {
			lo, hi := pos, last // postAd[hi] >= doc
			for lo < hi {
				mid := lo + (hi-lo)/2
				if postAd[mid] < doc {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			c.pos, c.doc = lo, postAd[lo]
			return
		}
		pos = last + 1
		if pos >= c.end {
			c.pos, c.doc = c.end, end
			return
		}
	}
}

// sortCursors orders the cursors by ad, then by their term's place in the
// query: an insertion sort, as they are few and mostly in order.
func sortCursors(cs []listCursor) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && (cs[j].doc < cs[j-1].doc || cs[j].doc == cs[j-1].doc && cs[j].alt < cs[j-1].alt); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}
