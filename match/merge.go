//go:build !wasip1

package match

import (
	"slices"
	"sync"
)

// A full-text query with few postings is not worth the walk's bounds
// (prune.go): the server scores all of its postings, as the module's loop
// does (matchFullText), but in ad order, its lists merged, rather than
// term by term into the scratch's per-ad accumulators. An ad's score is
// then summed in one go, in the same order of terms as the loop sums it,
// and a query's ads are each read once: no accumulator, mask or touched
// list to write and clear, which cost the loop a cache line each per
// posting on an index the other queries had just been through.

// mergeMaxLists bounds the lists a merged query has: the merge looks at
// each of them for each ad, so a query of many words, each with its
// synonyms, is left to the exhaustive loop, whose cost is its postings
// alone. The dev queries have at most 5.
const mergeMaxLists = 8

// mergeFullText returns the keep best candidates of the query, as the
// exhaustive loop in matchFullText does: the same ads, masks and scores.
// They lie in sc's candidate buffer, which Match hands back only once it
// has ranked them.
func (ix *Index) mergeFullText(alts []alt, required uint32, and bool, f filter, keep int, sc *scratch) []cand {
	if keep <= 0 {
		return nil
	}
	n := float64(len(ix.ads))
	end := uint32(len(ix.ads))
	ads, postAd, postTF, avg := ix.ads, ix.postAd, ix.postTF, ix.avgLen
	// What scoring reads of each ad, from a compact copy; the ad's record
	// only when the query filters ads out.
	w := ix.mergeAds()
	all := f.kinds == 0 && f.any && f.exclude == nil
	groupDF := ix.groupDFs(alts)
	// The lists' places and weights, in the order of alts: the order the
	// loop adds an ad's scores in.
	var curBuf [mergeMaxLists]mergeCursor
	cur := curBuf[:0]
	for _, a := range alts {
		df := float64(min(groupDF[a.k], uint32(len(ix.ads))))
		c := mergeCursor{pos: ix.postOff[a.id], end: ix.postOff[a.id+1],
			idf: float64(a.w * ln(float64(1+(n-df+0.5)/(df+0.5)))), bit: a.bit, head: a.head}
		cur = append(cur, c)
	}
	total := uint32(0)
	for _, c := range cur {
		total += c.end - c.pos
	}
	buf := mergeBufs.Get().(*[]mergeCand)
	defer mergeBufs.Put(buf)
	t := topK{c: (*buf)[:0], keep: keep}
	if need := min(int(total), topKRoom*keep); cap(t.c) < need {
		t.c = make([]mergeCand, 0, need)
		*buf = t.c
	}
	if len(cur) == 1 {
		// One list: each posting is an ad's whole score.
		c := &cur[0]
		tfs, list := postTF[c.pos:c.end], postAd[c.pos:c.end]
		for i, d := range list {
			tf := tfs[i]
			mask := c.bit
			if tf&typeFlag != 0 && c.head {
				mask |= typeBit
			}
			m := w[d]
			t.offer(d, m.bf, float64(0+termScore(c.idf, tf, m.docLen, avg)), mask, required, and, all || f.ok(&ads[d]))
		}
		return t.result(sc)
	}
	for i := range cur {
		if c := &cur[i]; c.pos < c.end {
			c.doc = postAd[c.pos]
		} else {
			c.doc = end
		}
	}
	for {
		d := end
		for i := range cur {
			d = min(d, cur[i].doc)
		}
		if d == end {
			break
		}
		m := w[d]
		docLen := m.docLen
		var acc float64
		var mask uint32
		for i := range cur {
			c := &cur[i]
			if c.doc != d {
				continue
			}
			tf := postTF[c.pos]
			acc = float64(acc + termScore(c.idf, tf, docLen, avg))
			mask |= c.bit
			if tf&typeFlag != 0 && c.head {
				mask |= typeBit
			}
			if c.pos++; c.pos < c.end {
				c.doc = postAd[c.pos]
			} else {
				c.doc = end
			}
		}
		t.offer(d, m.bf, acc, mask, required, and, all || f.ok(&ads[d]))
	}
	return t.result(sc)
}

// groupDFs is each query term's postings with its synonyms', the document
// frequency its idf is computed from, as matchFullText computes it.
func (ix *Index) groupDFs(alts []alt) (df [maxQueryTerms]uint32) {
	for _, a := range alts {
		df[a.k] += ix.postOff[a.id+1] - ix.postOff[a.id]
	}
	return df
}

// mergeCursor is one alternative's list in mergeFullText.
type mergeCursor struct {
	pos, end, doc uint32
	bit           uint32
	idf           float64
	head          bool
}

// topK keeps the keep best candidates it is given, by better: it gathers
// them until it holds topKRoom times keep, then keeps the keep best
// (selectBest) and from then on takes only those better than the worst of
// them. A query with few postings has its candidates selected once, at
// the end, a pass over them; a heap of keep costs a sift of its depth to
// each that enters it, and most do when the ads a list holds come in
// rising order of score.
type topK struct {
	c    []mergeCand
	keep int
	thr  mergeCand // once full, the worst of the best keep so far
	full bool
}

// mergeCand is a candidate as topK gathers and selects it: a cand without
// ext (the merge's have none), 16 bytes where a cand has 24, which the
// selection moves about.
type mergeCand struct {
	score    float64
	ad, mask uint32
}

// betterMerged is better for mergeCands.
func betterMerged(a, b *mergeCand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.ad < b.ad
}

// mergeBufs holds the buffers topK gathers candidates in, kept between
// queries: a query writes into memory the last one used, where a new
// buffer would be cleared, then written to cache lines that held nothing
// of this query's.
var mergeBufs = sync.Pool{New: func() any { return new([]mergeCand) }}

const topKRoom = 8

// offer adds ad d, of bid bid, score acc before its bid and the query
// terms it holds mask, as the exhaustive loop makes it a candidate; ok is
// whether the query's filter keeps it.
func (t *topK) offer(d uint32, bf, acc float64, mask, required uint32, and, ok bool) {
	m := mask &^ typeBit
	if (!and || m&required == required) && ok {
		c := mergeCand{ad: d, mask: m, score: float64(acc * bf)}
		if m != mask && (m&required == required || m&^required != 0) {
			c.score = float64(c.score * typeBoost)
		}
		t.add(&c)
	}
}

func (t *topK) add(c *mergeCand) {
	if t.full && !betterMerged(c, &t.thr) {
		return
	}
	t.c = append(t.c, *c)
	if len(t.c) == topKRoom*t.keep {
		t.trim()
	}
}

// trim keeps the keep best and notes the worst of them.
func (t *topK) trim() {
	selectBest(t.c, t.keep)
	t.c = t.c[:t.keep]
	w := 0
	for i := 1; i < len(t.c); i++ {
		if betterMerged(&t.c[w], &t.c[i]) {
			w = i
		}
	}
	t.thr, t.full = t.c[w], true
}

// result returns the keep best candidates, in no order, in sc's buffer,
// kept between queries, which Match hands back once it has ranked them.
func (t *topK) result(sc *scratch) []cand {
	if len(t.c) > t.keep {
		selectBest(t.c, t.keep)
		t.c = t.c[:t.keep]
	}
	out := sc.cands[:0]
	for _, c := range t.c {
		out = append(out, cand{ad: c.ad, mask: c.mask, score: c.score, ext: -1})
	}
	sc.cands = out
	return out
}

// selectBest moves the m best candidates to the front, in no order, as
// selectTop does, but partitions without a branch on each comparison: the
// element goes to one side or the other by an index that the comparison
// moves or not. A comparison near the pivot is a coin toss, which a
// branch would guess wrong half the time. After 64 rounds (a pivot choice
// gone wrong that often), a sort finishes.
func selectBest(c []mergeCand, m int) {
	lo, hi := 0, len(c)
	if m <= 0 || m >= hi {
		return
	}
	// Everything before lo is better than all of c[lo:hi], everything
	// from hi on worse; the m-th best is in c[lo:hi].
	for round := 0; hi-lo > 1; round++ {
		if round == 64 {
			slices.SortFunc(c[lo:hi], func(a, b mergeCand) int {
				if betterMerged(&a, &b) {
					return -1
				}
				return 1
			})
			return
		}
		// The median of three as the pivot, at hi-1.
		mid := lo + (hi-lo)/2
		if betterMerged(&c[mid], &c[lo]) {
			c[mid], c[lo] = c[lo], c[mid]
		}
		if betterMerged(&c[hi-1], &c[lo]) {
			c[hi-1], c[lo] = c[lo], c[hi-1]
		}
		if betterMerged(&c[hi-1], &c[mid]) {
			c[hi-1], c[mid] = c[mid], c[hi-1]
		}
		c[mid], c[hi-1] = c[hi-1], c[mid]
		p := c[hi-1]
		j := lo
		for i := lo; i < hi-1; i++ {
			x := c[i]
			c[i] = c[j]
			c[j] = x
			j += b2i(betterMerged(&x, &p))
		}
		c[j], c[hi-1] = c[hi-1], c[j]
		// c[lo:j] are better than the pivot, now at j, c[j+1:hi] worse.
		switch {
		case m < j:
			hi = j
		case m > j+1:
			lo = j + 1
		default:
			return
		}
	}
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mergeAd is what the merge reads of an ad to score it, in 16 bytes where
// its record has 28, so that the ads a query's lists name take fewer cache
// lines on a server whose other queries went through other ads; and its
// bid's factor computed once, not for each query that scores it.
type mergeAd struct {
	docLen uint32
	bf     float64 // bidFactor of its bid
}

// mergeAds returns the index's mergeAds, made on first use.
func (ix *Index) mergeAds() []mergeAd {
	ix.ft.mergeOnce.Do(func() {
		w := make([]mergeAd, len(ix.ads))
		for i := range ix.ads {
			w[i] = mergeAd{ix.ads[i].docLen, bidFactor(ix.ads[i].bid)}
		}
		ix.ft.merge = w
	})
	return ix.ft.merge
}
