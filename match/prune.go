//go:build !wasip1

package match

import (
	"math"
	"math/bits"
	"slices"
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

// A query must have pruneMin postings, and pruneKeep for each candidate it
// keeps, for the walk to pay: below, the exhaustive loop, a few
// nanoseconds a posting, is faster.
const pruneMin, pruneKeep = 1024, 16

// boundSlack widens every upper bound against the rounding of the sums
// that compare it with exact scores: an ad is skipped only when its bound
// is below the threshold by more than rounding could explain.
const boundSlack = 1 + 1e-9

// termScore is what a posting of term weight idf adds to its ad's score,
// computed as matchFullText computes it, to the bit.
func termScore(idf float64, t uint8, docLen uint32, avg float64) float64 {
	const k1 = bm25K1
	tf := float64(t & maxTF)
	norm := float64(k1 * float64(float64(docLen)/avg))
	return float64(idf * float64(tf*(k1+1)) / float64(tf+norm))
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
		if total < max(pruneMin, pruneKeep*keep) {
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
	k        uint32 // its query term: the group of it and its synonyms
	// typed and other scale a block's bounds into bounds of the final
	// score: idf, doubled where the ads may get the product-type boost.
	typed, other float64
	ub           float64 // the bound of the whole list
}

// walkFullText returns the keep best candidates of the query, as the
// exhaustive loop in matchFullText does: the same ads, masks and scores;
// and how many ads it scored, for the tests.
func (ix *Index) walkFullText(alts []alt, required uint32, and bool, f filter, keep int) (h worst, scored int) {
	if keep <= 0 {
		return nil, 0
	}
	n := float64(len(ix.ads))
	end := uint32(len(ix.ads))
	ads, postAd, postTF, avg := ix.ads, ix.postAd, ix.postTF, ix.avgLen
	var groupDF [maxQueryTerms]uint32
	for _, a := range alts {
		groupDF[a.k] += ix.postOff[a.id+1] - ix.postOff[a.id]
	}
	// An ad gets the type boost only when its type is a term of the
	// query's last word, so it holds that type posting in a head list.
	// The bounds of ads typed by a term's group are doubled when the group
	// has a head term; the others' when some head list has typed ads.
	var headGroup [maxQueryTerms]bool
	boostOther := 1.0
	// rarity is the term's idf before a synonym's weight: the synonyms'
	// bounds hold the weights (computeBounds).
	idf, rarity := make([]float64, len(alts)), make([]float64, len(alts))
	listT := make([]float64, len(alts))
	listO := make([]float64, len(alts))
	for i, a := range alts {
		df := float64(min(groupDF[a.k], uint32(len(ix.ads))))
		rarity[i] = ln(float64(1 + (n-df+0.5)/(df+0.5)))
		idf[i] = float64(a.w * rarity[i])
		listT[i], listO[i] = ix.listMax(a.id)
		for _, h := range alts {
			if h.head && h.id == a.id {
				headGroup[a.k] = true
			}
		}
		if a.head && listT[i] > 0 {
			boostOther = 2
		}
	}
	// cs holds the cursors by ad: pointers, as sorting moves them often.
	cursors := make([]listCursor, len(alts))
	cs := make([]*listCursor, len(alts))
	for i, a := range alts {
		lo, hi := ix.postOff[a.id], ix.postOff[a.id+1]
		c := &cursors[i]
		cs[i] = c
		*c = listCursor{pos: lo, end: hi, doc: end, alt: i, k: a.k, typed: rarity[i], other: rarity[i] * boostOther}
		if headGroup[a.k] {
			c.typed *= 2
		}
		if lo < hi {
			c.doc = postAd[lo]
		}
		c.ub = max(c.typed*listT[i], c.other*listO[i]) * boundSlack
	}
	sortCursors(cs)

	// An ad scoring below floor cannot rank: keep ads score at least that.
	floor := ix.seedFloor(alts, idf, required, and, f, keep)
	h = make(worst, 0, min(keep, len(postAd)))
	theta := math.Inf(-1) // once keep ads are held, the worst one's score
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
					if cs[i].k == k {
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
					ix.seek(cs[i], lower, end)
				}
				sortCursors(cs)
			}
		}
		// The pivot: the first list at which the bounds of the lists up to
		// it could beat the threshold, a term's synonyms counted once. No
		// ad before the pivot's ad can.
		p, sum := -1, 0.0
		var gub [maxQueryTerms]float64
		var seen uint32
		for i := range cs {
			c := cs[i]
			if c.doc >= end {
				break
			}
			if seen&(1<<c.k) == 0 {
				seen |= 1 << c.k
				sum += c.ub
				gub[c.k] = c.ub
			} else if c.ub > gub[c.k] {
				sum += c.ub - gub[c.k]
				gub[c.k] = c.ub
			}
			if sum >= floor && (len(h) < keep || sum > theta) {
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
		// The bounds of the blocks that would hold pd: when they cannot
		// beat the threshold, no ad up to the first of those blocks' ends
		// can.
		// Superblocks first, then blocks.
		next := end
		if p+1 < len(cs) {
			next = cs[p+1].doc
		}
		var coarse, fine [maxQueryTerms]float64
		coarseNext, fineNext := next, next
		seen = 0
		for i := 0; i <= p; i++ {
			b := ix.blocksAt(cs[i], pd)
			k := cs[i].k
			seen |= 1 << k
			coarse[k], fine[k] = max(coarse[k], b.coarse), max(fine[k], b.fine)
			coarseNext, fineNext = min(coarseNext, b.coarseNext), min(fineNext, b.fineNext)
		}
		coarseBound, fineBound := 0.0, 0.0
		for ; seen != 0; seen &= seen - 1 {
			k := bits.TrailingZeros32(seen)
			coarseBound += coarse[k]
			fineBound += fine[k]
		}
		skip := uint32(0)
		if b := coarseBound * boundSlack; b < floor || len(h) == keep && b <= theta {
			skip = coarseNext
		} else if b := fineBound * boundSlack; b < floor || len(h) == keep && b <= theta {
			skip = fineNext
		}
		if skip > 0 {
			for i := 0; i <= p; i++ {
				ix.seek(cs[i], skip, end)
			}
			sortCursors(cs)
			continue
		}
		next = fineNext
		if cs[0].doc != pd {
			for i := 0; cs[i].doc < pd; i++ {
				ix.seek(cs[i], pd, end)
			}
			sortCursors(cs)
			continue
		}
		// Every ad up to next is in the lists 0..p alone, all at pd now:
		// score them all, as the blocks that hold them could rank them.
		// Scored as the exhaustive loop scores them: term by term in the
		// query's order (the window's cursors are put in that order), the
		// same arithmetic, the same rounding.
		win := cs[:p+1]
		slices.SortFunc(win, func(x, y *listCursor) int { return x.alt - y.alt })
		for d := pd; d < next; {
			scored++
			a := &ads[d]
			var acc float64
			var mask uint32
			low := end
			for _, c := range win {
				if c.doc == d {
					al := &alts[c.alt]
					t := postTF[c.pos]
					acc = float64(acc + termScore(idf[c.alt], t, a.docLen, avg))
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
				low = min(low, c.doc)
			}
			m := mask &^ typeBit
			if (!and || m&required == required) && f.ok(a) {
				c := cand{ad: d, mask: m, score: float64(acc * bidFactor(a.bid)), ext: -1}
				if m != mask && (m&required == required || m&^required != 0) {
					c.score = float64(c.score * typeBoost)
				}
				if len(h) < keep || better(&c, &h[0]) {
					h.keep(keep, c)
					if len(h) == keep {
						theta = h[0].score
					}
				}
			}
			d = low
		}
		sortCursors(cs)
	}
	return h, scored
}

// seedFloor scores the champions of the query's terms and returns the
// keep-th best score among those that qualify: at least keep ads score
// that much, so an ad scoring less cannot rank. -Inf when fewer qualify.
func (ix *Index) seedFloor(alts []alt, idf []float64, required uint32, and bool, f filter, keep int) float64 {
	var seeds []uint32
	for _, a := range alts {
		seeds = append(seeds, ix.ft.long[a.id].champs...)
	}
	if len(seeds) < keep {
		return math.Inf(-1)
	}
	slices.Sort(seeds)
	seeds = slices.Compact(seeds)
	end := uint32(len(ix.ads))
	cs := make([]listCursor, len(alts))
	for i, a := range alts {
		lo, hi := ix.postOff[a.id], ix.postOff[a.id+1]
		cs[i] = listCursor{pos: lo, end: hi, doc: end}
		if lo < hi {
			cs[i].doc = ix.postAd[lo]
		}
	}
	scores := make([]float64, 0, len(seeds))
	for _, d := range seeds {
		a := &ix.ads[d]
		if !f.ok(a) {
			continue
		}
		var acc float64
		var mask uint32
		for i := range cs {
			c := &cs[i]
			if ix.seek(c, d, end); c.doc != d {
				continue
			}
			t := ix.postTF[c.pos]
			acc = float64(acc + termScore(idf[i], t, a.docLen, ix.avgLen))
			mask |= alts[i].bit
			if t&typeFlag != 0 && alts[i].head {
				mask |= typeBit
			}
		}
		m := mask &^ typeBit
		if and && m&required != required {
			continue
		}
		score := float64(acc * bidFactor(a.bid))
		if m != mask && (m&required == required || m&^required != 0) {
			score = float64(score * typeBoost)
		}
		scores = append(scores, score)
	}
	if len(scores) < keep {
		return math.Inf(-1)
	}
	slices.Sort(scores)
	return scores[len(scores)-keep]
}

// listMax returns the bounds of the blocks that hold term t's postings,
// typed and others.
func (ix *Index) listMax(t uint32) (typed, other float64) {
	if l, ok := ix.ft.long[t]; ok {
		return float64(l.typed), float64(l.other)
	}
	lo, hi := ix.postOff[t], ix.postOff[t+1]
	if lo == hi {
		return 0, 0
	}
	for j := lo >> blockShift; j <= (hi-1)>>blockShift; j++ {
		typed, other = max(typed, float64(ix.ft.typed[j])), max(other, float64(ix.ft.other[j]))
	}
	return typed, other
}

// blocksAt returns the bounds of the block and the superblock of c's list
// that hold its first ad at or after doc, and 1 + the last ad of the list
// in each; 0 and end when the list has no ad from doc on.
func (ix *Index) blocksAt(c *listCursor, doc uint32) (b struct {
	fine, coarse         float64
	fineNext, coarseNext uint32
}) {
	pos := ix.find(c, doc)
	if pos == c.end {
		b.fineNext, b.coarseNext = uint32(len(ix.ads)), uint32(len(ix.ads))
		return b
	}
	j, k := pos>>blockShift, pos>>superShift
	b.fine = max(c.typed*float64(ix.ft.typed[j]), c.other*float64(ix.ft.other[j]))
	b.coarse = max(c.typed*float64(ix.ft.superTyped[k]), c.other*float64(ix.ft.superOther[k]))
	b.fineNext = ix.postAd[min(pos|(blockLen-1), c.end-1)] + 1
	b.coarseNext = ix.postAd[min(pos|(superLen-1), c.end-1)] + 1
	return b
}

// seek moves c to its first ad at or after doc.
func (ix *Index) seek(c *listCursor, doc, end uint32) {
	if c.doc >= doc {
		return
	}
	c.pos = ix.find(c, doc)
	c.doc = end
	if c.pos < c.end {
		c.doc = ix.postAd[c.pos]
	}
}

// find returns the place of c's first ad at or after doc, or c.end: by
// steps that double from a block, then by halves.
func (ix *Index) find(c *listCursor, doc uint32) uint32 {
	postAd := ix.postAd
	lo := c.pos
	if lo >= c.end || postAd[lo] >= doc {
		return lo
	}
	// postAd[lo] < doc throughout; hi is past it.
	step, hi := uint32(blockLen), c.end
	for lo+step < c.end {
		if postAd[lo+step] >= doc {
			hi = lo + step
			break
		}
		lo += step
		step *= 2
	}
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if postAd[mid] < doc {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// sortCursors orders the cursors by ad, then by their term's place in the
// query: an insertion sort, as they are few and mostly in order.
func sortCursors(cs []*listCursor) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && (cs[j].doc < cs[j-1].doc || cs[j].doc == cs[j-1].doc && cs[j].alt < cs[j-1].alt); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}
