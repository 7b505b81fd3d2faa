package match

import (
	"math"
	"slices"
)

// occ is one occurrence of a criterion in the input: tokens [from, to).
type occ struct {
	crit     uint32
	from, to int32
	title    bool
}

// candExt is what criteria matching knows of a candidate.
type candExt struct {
	occs  []occ     // matched criteria occurrences (high, low, page)
	aggs  []critAgg // the same, per criterion
	terms []int     // matched query token indexes (low)
}

// critAgg is how often, and whether in the title, a criterion occurs.
type critAgg struct {
	crit  uint32
	count int
	title bool
}

// maxPerCriterion is how many of a criterion's ads a query considers, the
// best first (see the index's order): enough for any size and
// distinct_advertiser, and a bound on the work for a criterion (a brand, a
// category) that hundreds of thousands of ads share.
const maxPerCriterion = 4 * MaxSize

// pair ties an ad to a criterion: ord is the criterion's place among the
// input's criteria, src how the ad is tied to it.
type pair struct{ ad, ord, src uint32 }

// maxOccurrences is how many occurrences of one criterion count; later
// ones add nothing to a page's score, so they are not even collected.
const maxOccurrences = 16

// findOccs lists the occurrences of the criteria in the input, the first
// maxOccurrences of each, and the criteria in order of first occurrence.
// It sets slot (scratch.critSlot) for them, to 1 + the criterion's place
// in order, shifted by slotShift, plus its occurrences listed; the caller
// clears it.
func (ix *Index) findOccs(in *input, slot []int32) (out []occ, order []uint32) {
	toks := in.toks
	for i := range toks {
		t := toks[i].id
		if t < 0 {
			continue
		}
		// The criteria starting with t are sorted by their terms, so the
		// ones that go on as the input does are a range that narrows term
		// by term; the criteria that end at depth k come first in it.
		lo, hi := ix.critStart[t], ix.critStart[t+1]
		for k := 1; lo < hi; k++ {
			for ; lo < hi && ix.critOff[lo+1]-ix.critOff[lo] == uint32(k); lo++ {
				if in.inNumber(i, i+k) {
					continue
				}
				if slot[lo] == 0 {
					if len(order) == maxInputCriteria {
						continue
					}
					order = append(order, lo)
					slot[lo] = int32(len(order)) << slotShift
				}
				if slot[lo]&(1<<slotShift-1) < maxOccurrences {
					slot[lo]++
					out = append(out, occ{crit: lo, from: int32(i), to: int32(i + k), title: i < in.nTitle})
				}
			}
			if lo == hi || i+k >= len(toks) || toks[i+k].brk || toks[i+k].id < 0 {
				break
			}
			id := uint32(toks[i+k].id)
			at := func(c uint32) uint32 { return ix.critTerms[ix.critOff[c]+uint32(k)] }
			lo = lowerBound(lo, hi, func(c uint32) bool { return at(c) >= id })
			hi = lowerBound(lo, hi, func(c uint32) bool { return at(c) > id })
		}
	}
	return out, order
}

// slotShift makes room in a criterion's slot for its count of occurrences
// (at most maxOccurrences).
const slotShift = 5

// maxInputCriteria bounds the distinct criteria one input can hold, so that
// a slot (place << slotShift) stays an int32. A page's text holds far fewer
// (its tokens times the longest criterion's length); only a shard of
// millions of copies of one criterion, which Open does not refuse, gets here.
const maxInputCriteria = 1 << 24

// lowerBound returns the first c in [lo, hi) for which ok holds, or hi;
// ok must be false and then true along the range.
func lowerBound(lo, hi uint32, ok func(c uint32) bool) uint32 {
	for lo < hi {
		m := lo + (hi-lo)/2
		if ok(m) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// matchCriteria finds the ads one of whose criteria stands whole in the
// input (ctx.dist=high, and the page context). Occurrences are grouped by
// criterion and the work per ad is shared among the ads that matched the
// same criteria, so a page naming a popular category hundreds of times
// costs little more than one naming it once.
func (ix *Index) matchCriteria(in *input, f filter, page bool, sc *scratch) []cand {
	slot := sc.crits(ix)
	occs, order := ix.findOccs(in, slot)
	if len(occs) == 0 {
		clearSlots(slot, order)
		return nil
	}
	// The occurrences grouped by criterion, in order of first occurrence
	// and each group in input order: those of the k-th criterion are
	// grouped[off[k]:off[k+1]].
	off := make([]int32, len(order)+1)
	for _, o := range occs {
		off[slot[o.crit]>>slotShift]++
	}
	for k := range order {
		off[k+1] += off[k]
	}
	grouped := make([]occ, len(occs))
	for _, o := range occs {
		k := slot[o.crit]>>slotShift - 1
		grouped[off[k]] = o
		off[k]++
	}
	copy(off[1:], off[:len(order)])
	off[0] = 0
	clearSlots(slot, order)
	// (ad, criterion) pairs sorted by ad group each ad's criteria, in
	// order of first occurrence, without a map per ad.
	n := 0
	for _, c := range order {
		n += min(int(ix.critAdOff[c+1]-ix.critAdOff[c]), maxPerCriterion)
	}
	pairs := make([]pair, 0, n)
	for k, c := range order {
		taken := 0
		for _, e := range ix.critAd[ix.critAdOff[c]:ix.critAdOff[c+1]] {
			if taken == maxPerCriterion {
				break
			}
			if f.ok(&ix.ads[e>>2]) {
				pairs = append(pairs, pair{e >> 2, uint32(k), e & 3})
				taken++
			}
		}
	}
	// By ad, then by criterion: pairs went in by criterion, so a stable
	// order by ad is the one wanted.
	keys := make([]uint64, len(pairs))
	for i, p := range pairs {
		keys[i] = uint64(p.ad)<<32 | uint64(i)
	}
	var tmp []uint64
	sortKeys(keys, &tmp)
	sorted := make([]pair, len(pairs))
	for i, k := range keys {
		sorted[i] = pairs[uint32(k)]
	}
	pairs = sorted
	cands := make([]cand, 0, len(pairs))
	crits := make([][]pair, 0, len(pairs)) // per candidate
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].ad == pairs[i].ad {
			j++
		}
		cands = append(cands, cand{ad: pairs[i].ad})
		crits = append(crits, pairs[i:j])
		i = j
	}
	// Candidates tied to the same criteria share that work: an
	// open-addressing table of the candidates whose lists of criteria came
	// first, by a hash of the list (1 + the candidate, 0 for empty).
	table := make([]int32, tableSize(len(cands)))
	mask := uint32(len(table) - 1)
	used := make([]bool, len(in.toks))
	for i := range cands {
		h := uint32(2166136261) // FNV's constants, a word at a time
		for _, p := range crits[i] {
			h = (h ^ p.ord) * 16777619
		}
		h ^= h >> 16 // the table takes the low bits: mix the high ones in
		x := int32(-1)
		j := h & mask
		for ; table[j] != 0; j = (j + 1) & mask {
			if e := table[j] - 1; sameCriteria(crits[e], crits[i]) {
				x = cands[e].ext
				break
			}
		}
		if x < 0 {
			table[j] = int32(i + 1)
			var all []occ
			for _, p := range crits[i] {
				all = append(all, grouped[off[p.ord]:off[p.ord+1]]...)
			}
			x = int32(len(in.ext))
			kept := keepLongest(all, used)
			in.ext = append(in.ext, candExt{occs: kept, aggs: aggregate(kept)})
		}
		cands[i].ext = x
		cands[i].score = ix.criteriaScore(in.ext[x].aggs, crits[i], order, page)
	}
	return cands
}

// tableSize is a power of two at least twice n: an open-addressing
// table of n entries that is at most half full.
func tableSize(n int) int {
	s := 2
	for s < 2*n {
		s *= 2
	}
	return s
}

// sameCriteria tells whether two candidates are tied to the same criteria,
// in the same order.
func sameCriteria(a, b []pair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ord != b[i].ord {
			return false
		}
	}
	return true
}

// keepLongest drops occurrences overlapped by a longer one, so "lg handy"
// wins over "handy" inside it, and returns the rest in input order. used
// has a flag per token and is left all false.
func keepLongest(os []occ, used []bool) []occ {
	if len(os) < 2 {
		return os
	}
	// Longest first, then by place; ties keep their input order. Places
	// and counts are below 2^24: a page is at most MaxPageBytes.
	keys := make([]uint64, len(os))
	for i, o := range os {
		keys[i] = uint64(0xffff-min(o.to-o.from, 0xffff))<<48 | uint64(o.from)<<24 | uint64(i)
	}
	var tmp []uint64
	sortKeys(keys, &tmp)
	kept := make([]occ, 0, len(os))
	for _, k := range keys {
		o := os[k&(1<<24-1)]
		if !slices.Contains(used[o.from:o.to], true) {
			for t := o.from; t < o.to; t++ {
				used[t] = true
			}
			kept = append(kept, o)
		}
	}
	for _, o := range kept {
		for t := o.from; t < o.to; t++ {
			used[t] = false
		}
	}
	// Back to input order, which is by place.
	keys = keys[:len(kept)]
	for i, o := range kept {
		keys[i] = uint64(o.from)<<24 | uint64(i)
	}
	sortKeys(keys, &tmp)
	out := make([]occ, len(kept))
	for i, k := range keys {
		out[i] = kept[k&(1<<24-1)]
	}
	return out
}

// aggregate counts the occurrences of each criterion.
func aggregate(os []occ) []critAgg {
	var seen []critAgg
	for _, o := range os {
		k := slices.IndexFunc(seen, func(a critAgg) bool { return a.crit == o.crit })
		if k < 0 {
			k = len(seen)
			seen = append(seen, critAgg{crit: o.crit})
		}
		seen[k].count++
		seen[k].title = seen[k].title || o.title
	}
	return seen
}

// criteriaScore weighs the distinct criteria matched: by source, by length
// (a longer phrase is a more specific match), by the title, and in pages by
// how often they occur (with diminishing returns).
func (ix *Index) criteriaScore(aggs []critAgg, ties []pair, order []uint32, page bool) float64 {
	var s float64
	for _, a := range aggs {
		n := float64(ix.critOff[a.crit+1] - ix.critOff[a.crit])
		src := uint32(srcKeyword)
		for _, p := range ties {
			if order[p.ord] == a.crit {
				src = p.src
			}
		}
		w := float64(srcWeight[src] * float64(1+float64(0.5*(n-1))))
		if page {
			w = float64(w * math.Sqrt(float64(a.count)))
			if a.title {
				w = float64(w * 2)
			}
		}
		s = float64(s + w)
	}
	// Several distinct criteria of one ad (brand and model) reinforce.
	return float64(s * float64(1+float64(0.25*float64(len(aggs)-1))))
}

// matchLow adds to the strong matches the criteria that share at least half
// of their terms with the input (ctx.dist=low).
func (ix *Index) matchLow(in *input, f filter, sc *scratch) []cand {
	cands := ix.matchCriteria(in, f, false, sc)
	byAd := sc.ads(ix) // 1 + the ad's place in cands
	for i, c := range cands {
		byAd[c.ad] = int32(i + 1)
	}
	// For each criterion containing a query term: which query tokens hit it
	// (hits[k] for the k-th in order).
	slot := sc.crits(ix)
	var hits [][]int
	var order []uint32
	for i, t := range in.toks {
		if t.id < 0 {
			continue
		}
		for _, c := range ix.termCrit[ix.termCritOff[t.id]:ix.termCritOff[t.id+1]] {
			k := slot[c]
			if k == 0 {
				order = append(order, c)
				hits = append(hits, nil)
				k = int32(len(order))
				slot[c] = k
			}
			// A word the query repeats counts once, at its first place.
			if !slices.ContainsFunc(hits[k-1], func(j int) bool { return in.toks[j].id == t.id }) {
				hits[k-1] = append(hits[k-1], i)
			}
		}
	}
	clearSlots(slot, order)
	for o, c := range order {
		toks := hits[o]
		seq := ix.critTerms[ix.critOff[c]:ix.critOff[c+1]]
		matched := 0
		for _, t := range seq {
			for _, i := range toks {
				if in.toks[i].id == int32(t) {
					matched++
					break
				}
			}
		}
		if matched*2 < len(seq) {
			continue
		}
		part := float64(matched) / float64(len(seq))
		taken := 0
		for _, e := range ix.critAd[ix.critAdOff[c]:ix.critAdOff[c+1]] {
			ad := e >> 2
			if taken == maxPerCriterion {
				break
			}
			if !f.ok(&ix.ads[ad]) {
				continue
			}
			taken++
			k := int(byAd[ad]) - 1
			if k < 0 {
				k = len(cands)
				byAd[ad] = int32(k + 1)
				cands = append(cands, cand{ad: ad, ext: int32(len(in.ext))})
				in.ext = append(in.ext, candExt{})
			}
			x := &in.ext[cands[k].ext]
			if len(x.occs) > 0 {
				continue // already a strong match: keep its keywords
			}
			cands[k].score = float64(cands[k].score + float64(0.5*part*srcWeight[e&3]))
			for _, i := range toks {
				if !slices.Contains(x.terms, i) {
					x.terms = append(x.terms, i)
				}
			}
		}
	}
	for _, c := range cands {
		byAd[c.ad] = 0
	}
	for i := range in.ext {
		insertionSort(in.ext[i].terms)
	}
	return cands
}

// within reports whether criterion a's terms stand, in order, inside the
// longer criterion b's.
func (ix *Index) within(a, b uint32) bool {
	sa := ix.critTerms[ix.critOff[a]:ix.critOff[a+1]]
	sb := ix.critTerms[ix.critOff[b]:ix.critOff[b+1]]
	if len(sa) >= len(sb) {
		return false
	}
	for i := 0; i+len(sa) <= len(sb); i++ {
		if slices.Equal(sa, sb[i:i+len(sa)]) {
			return true
		}
	}
	return false
}
