//go:build !wasip1

package match

import (
	"cmp"
	"math"
	"slices"
)

// The server ranks full-text queries by MaxScore with block and posting
// bounds (as Lucene and PISA do): it walks the query's posting lists
// together in ad order and scores an ad only when the upper bounds of the
// terms that hold it could lift it above the worst of the keep best so
// far. A common word's hundreds of thousands of postings are mostly
// passed over by a byte each, or a block at a time, and where an ad must
// hold two common words to rank, only the ads holding both are looked at.
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

// The full-text modes: the walk where it pays and the merge elsewhere,
// always the exhaustive loop, always the walk, always the merge.
const (
	walkWherePays fullTextMode = iota
	walkNever
	walkAlways
	mergeAlways
)

// MatchExhaustive is Match scoring every posting of a full-text query, as
// the module does: the baseline the pruned evaluation is tested and
// measured against. Other queries are answered as Match answers them.
func (ix *Index) MatchExhaustive(q *Query) []Hit {
	e := *q
	e.fullText = walkNever
	return ix.Match(&e)
}

// prunedFullText ranks a full-text query by the walk, or by the merge of
// its lists (merge.go) where it has too few postings for the walk to pay;
// false when its mode asks for the exhaustive loop.
func (ix *Index) prunedFullText(q *Query, alts []alt, required uint32, f filter, keep int, sc *scratch) ([]cand, bool) {
	switch q.fullText {
	case walkNever:
		return nil, false
	case mergeAlways:
		return ix.mergeFullText(alts, required, q.Operator == OpAnd, f, keep, sc), true
	case walkWherePays:
		total := 0
		for _, a := range alts {
			total += int(ix.postOff[a.id+1] - ix.postOff[a.id])
		}
		if total < max(pruneMin, pruneKeep*keep) {
			if len(alts) > mergeMaxLists {
				return nil, false
			}
			return ix.mergeFullText(alts, required, q.Operator == OpAnd, f, keep, sc), true
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
	// typed and other scale a block's bounds into bounds of the final
	// score: idf, doubled where the ads may get the product-type boost.
	typed, other float64
}

// walkFullText returns the keep best candidates of the query, as the
// exhaustive loop in matchFullText does: the same ads, masks and scores;
// and how many ads it scored, for the tests.
//
// It is MaxScore (Turtle and Flood, 1995) over the query's terms, each
// term a group of lists (the word and its synonyms): at each moment some
// terms drive the walk, and only their ads are looked at. When the
// threshold is such that an ad lacking one term cannot rank, that term
// alone drives (the one with the fewest postings), and the others are
// looked up in it: a query of two common words walks their intersection
// rather than their union, and an ad the other term lacks skips the
// driver to that term's next ad. Otherwise the terms whose bounds
// together cannot reach the threshold follow, and the others drive.
// Every list passes over the postings whose own bound, with the other
// terms' bounds, cannot rank (viable), and an ad's bound is narrowed
// term by term before it is scored.
//
// A list passes only ads that cannot rank; an ad that another list then
// brings up may be scored without that list's share, lower than its
// score, and still cannot rank: it may be held while fewer than keep
// are, never at the end.
func (ix *Index) walkFullText(alts []alt, required uint32, and bool, f filter, keep int) (h worst, scored int) {
	if keep <= 0 {
		return nil, 0
	}
	n := float64(len(ix.ads))
	end := uint32(len(ix.ads))
	ads, postAd, postTF, avg := ix.ads, ix.postAd, ix.postTF, ix.avgLen
	groupDF := ix.groupDFs(alts)
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
	// The cursors in the order of alts, which is the order scores add in;
	// each query term's cursors together.
	cursors := make([]listCursor, len(alts))
	var terms [maxQueryTerms]walkTerm
	var nterms int
	for i, a := range alts {
		lo, hi := ix.postOff[a.id], ix.postOff[a.id+1]
		c := &cursors[i]
		// The type boost doubles the whole score once any head posting
		// is typed: a posting of another term, typed or not (an ad typed
		// twice, by its category and an acronym of it), gains it as any
		// posting does.
		*c = listCursor{pos: lo, end: hi, doc: end, typed: rarity[i] * boostOther, other: rarity[i] * boostOther}
		if headGroup[a.k] {
			c.typed = rarity[i] * 2
		}
		if lo < hi {
			c.doc = postAd[lo]
		}
		t := &terms[a.k]
		t.lists = append(t.lists, c)
		t.ub = max(t.ub, c.typed*listT[i], c.other*listO[i])
		t.postings += hi - lo
		t.need = and && required&a.bit != 0
		nterms = max(nterms, int(a.k)+1)
	}
	w := walk{ix: ix, terms: terms[:nterms], keep: keep, end: end}
	w.floor = ix.seedFloor(alts, idf, required, and, f, keep)
	w.theta = math.Inf(-1)
	h = make(worst, 0, min(keep, len(postAd)))
	from := uint32(0) // every ad before it is scored or cannot rank
	if !w.plan() {
		return h, 0
	}
	for {
		// d is the first ad of the driving lists that could rank.
		d := end
		for _, t := range w.drive {
			// No other driving term holds an ad before the first of
			// their lists' ads.
			limit := end
			for _, u := range w.drive {
				if u != t {
					for _, c := range u.lists {
						limit = min(limit, c.doc)
					}
				}
			}
			for _, c := range t.lists {
				if c.doc < from {
					ix.seek(c, from, end)
				}
				w.viable(c, t.rest, w.rest, limit)
				d = min(d, c.doc)
			}
		}
		if d >= end {
			break
		}
		from = d + 1
		// d's own bound: each driving term that holds it by the least of
		// its postings at d (each bounds the whole term), then the other
		// terms one by one, looked up.
		known := 0.0
		for _, t := range w.drive {
			tb := math.Inf(1)
			for _, c := range t.lists {
				if c.doc == d {
					tb = min(tb, ix.postBound(c))
				}
			}
			if tb < math.Inf(1) {
				known += tb
			}
		}
		if !w.pass(known + w.rest) {
			continue
		}
		dead := false
		for i, t := range w.others {
			tb, has := math.Inf(1), false
			for _, c := range t.lists {
				ix.seek(c, d, end)
				w.viable(c, t.rest, t.rest, 0)
				if c.doc == d {
					tb, has = min(tb, ix.postBound(c)), true
				}
			}
			if has {
				known += tb
			} else if t.required {
				// No ad before the term's next one can rank either.
				next := end
				for _, c := range t.lists {
					next = min(next, c.doc)
				}
				from = max(from, next)
				dead = true
				break
			}
			if !w.pass(known + w.suffix[i+1]) {
				dead = true
				break
			}
		}
		if dead {
			continue
		}
		// Scored as the exhaustive loop scores it: term by term in the
		// query's order, the same arithmetic, the same rounding.
		scored++
		a := &ads[d]
		var acc float64
		var mask uint32
		for i := range cursors {
			c := &cursors[i]
			if c.doc != d {
				continue
			}
			al := &alts[i]
			t := postTF[c.pos]
			acc = float64(acc + termScore(idf[i], t, a.docLen, avg))
			mask |= al.bit
			if t&typeFlag != 0 && al.head {
				mask |= typeBit
			}
		}
		m := mask &^ typeBit
		if (!and || m&required == required) && f.ok(a) {
			c := cand{ad: d, mask: m, score: float64(acc * bidFactor(a.bid)), ext: -1}
			if m != mask && (m&required == required || m&^required != 0) {
				c.score = float64(c.score * typeBoost)
			}
			if len(h) < keep || better(&c, &h[0]) {
				h.keep(keep, c)
				if len(h) == keep && (!w.full || h[0].score != w.theta) {
					w.full, w.theta = true, h[0].score
					if !w.plan() {
						break
					}
				}
			}
		}
	}
	return h, scored
}

// walkTerm is one query term in the walk: the lists of the word and its
// synonyms, and the bound of all of them.
type walkTerm struct {
	lists    []*listCursor
	ub       float64
	postings uint32
	need     bool    // the query's operator is and: an ad must hold it
	required bool    // need, or the threshold is beyond the other terms' bounds
	rest     float64 // the bound of the other terms together
}

// walk is the state of walkFullText that its plan depends on.
type walk struct {
	ix         *Index
	terms      []walkTerm
	keep       int
	end        uint32
	floor      float64 // the seeds' score: an ad below cannot rank
	theta      float64 // once keep ads are held, the worst one's score
	full       bool    // keep ads are held
	drive      []*walkTerm
	others     []*walkTerm // by bound, the greatest first
	rest       float64     // the bound of the others together
	suffix     []float64   // suffix[i]: the bound of others[i:] together
	byBound    []*walkTerm
	driveBuf   [maxQueryTerms]*walkTerm
	othersBuf  [maxQueryTerms]*walkTerm
	suffixBuf  [maxQueryTerms + 1]float64
	byBoundBuf [maxQueryTerms]*walkTerm
}

// viable moves c to its first posting, from its present one, whose bound
// with rest, the bound of the query's other terms, could rank: an ad it
// passes cannot. A block at a time where the block's bound is too low.
// Before ad limit, near bounds the other terms instead: the walk knows
// that some of them hold no ad there.
func (w *walk) viable(c *listCursor, rest, near float64, limit uint32) {
	ix := w.ix
	post, typed, other, postAd := ix.ft.post, ix.ft.typed, ix.ft.other, ix.postAd
	for c.pos < c.end {
		j := c.pos >> blockShift
		bt, bo := c.typed*float64(typed[j]), c.other*float64(other[j])
		stop := min(c.end, (j+1)<<blockShift)
		r := rest
		if postAd[stop-1] < limit {
			r = near
		}
		if w.pass(max(bt, bo) + r) {
			bt, bo = bt/postSteps, bo/postSteps
			for p := c.pos; p < stop; p++ {
				q := post[p]
				b := bo * float64(q)
				if q&postTyped != 0 {
					b = bt * float64(q&^postTyped)
				}
				r := rest
				if postAd[p] < limit {
					r = near
				}
				if w.pass(b + r) {
					if p != c.pos {
						c.pos, c.doc = p, ix.postAd[p]
					}
					return
				}
			}
		}
		c.pos = stop
		if c.pos < c.end {
			c.doc = ix.postAd[c.pos]
		}
	}
	c.doc = w.end
}

// pass reports whether an ad bounded by b could rank.
func (w *walk) pass(b float64) bool {
	b *= boundSlack
	return b >= w.floor && (!w.full || b > w.theta)
}

// plan chooses the terms that drive the walk at the present threshold;
// false when no ad can reach it any more.
func (w *walk) plan() bool {
	total := 0.0
	for i := range w.terms {
		total += w.terms[i].ub
	}
	if !w.pass(total) {
		return false
	}
	var drive *walkTerm
	for i := range w.terms {
		t := &w.terms[i]
		if len(t.lists) == 0 {
			continue
		}
		others := 0.0
		for j := range w.terms {
			if j != i {
				others += w.terms[j].ub
			}
		}
		t.rest = others
		t.required = t.need || !w.pass(others)
		if t.required && (drive == nil || t.postings < drive.postings) {
			drive = t
		}
	}
	w.drive, w.others = w.driveBuf[:0], w.othersBuf[:0]
	if drive != nil {
		w.drive = append(w.drive, drive)
		for i := range w.terms {
			if t := &w.terms[i]; t != drive && len(t.lists) > 0 {
				w.others = append(w.others, t)
			}
		}
	} else {
		// The terms of least bound whose bounds together cannot reach the
		// threshold follow; the others drive.
		if w.byBound == nil {
			w.byBound = w.byBoundBuf[:0]
			for i := range w.terms {
				if len(w.terms[i].lists) > 0 {
					w.byBound = append(w.byBound, &w.terms[i])
				}
			}
			slices.SortStableFunc(w.byBound, func(x, y *walkTerm) int { return cmp.Compare(x.ub, y.ub) })
		}
		sum, i := 0.0, 0
		for ; i < len(w.byBound) && !w.pass(sum+w.byBound[i].ub); i++ {
			sum += w.byBound[i].ub
		}
		w.drive = append(w.drive, w.byBound[i:]...)
		w.others = append(w.others, w.byBound[:i]...)
	}
	slices.SortStableFunc(w.others, func(x, y *walkTerm) int { return cmp.Compare(y.ub, x.ub) })
	w.suffix = w.suffixBuf[:len(w.others)+1]
	w.suffix[len(w.others)] = 0
	for i := len(w.others) - 1; i >= 0; i-- {
		w.suffix[i] = w.suffix[i+1] + w.others[i].ub
	}
	w.rest = w.suffix[0]
	return true
}

// postBound returns the bound of c's present posting.
func (ix *Index) postBound(c *listCursor) float64 {
	j, q := c.pos>>blockShift, ix.ft.post[c.pos]
	if q&postTyped != 0 {
		return c.typed * float64(ix.ft.typed[j]) * float64(q&^postTyped) / postSteps
	}
	return c.other * float64(ix.ft.other[j]) * float64(q) / postSteps
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
	// Most seeks move a few postings: look at those first.
	for range 4 {
		if lo++; lo == c.end || postAd[lo] >= doc {
			return lo
		}
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
