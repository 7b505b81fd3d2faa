package match

import (
	"math"
	"runtime"
	"slices"
)

// maxQueryTerms bounds the distinct terms a full-text query scores.
const maxQueryTerms = 16

// occ is one occurrence of a criterion in the input: tokens [from, to).
type occ struct {
	crit     uint32
	from, to int32
	title    bool
}

// cand is an ad being scored. It is small because full-text queries make
// many of them and ranking moves them around.
type cand struct {
	ad    uint32
	mask  uint32 // full text: the query terms (qterm bits) it contains
	score float64
	ext   int32 // index into the query's candExt, or -1
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

// getScratch and putScratch run once a query: inlined, their locking cost
// the module 0.2 KB with zstd.
//
//go:noinline
func (ix *Index) getScratch() *scratch {
	ix.scratchMu.Lock()
	defer ix.scratchMu.Unlock()
	if n := len(ix.scratches); n > 0 {
		sc := ix.scratches[n-1]
		ix.scratches = ix.scratches[:n-1]
		return sc
	}
	return &scratch{}
}

// An index keeps as many scratches between queries as threads run Go
// code, from minScratches to maxScratches: a query that runs while as many
// others do gets scratch the GC takes back. For a large index each is
// megabytes (an int32 per criterion, up to 20 bytes per ad), every query
// takes one, and a server holds an index per market besides the whole
// catalog's.
const minScratches, maxScratches = 4, 8

//go:noinline
func (ix *Index) putScratch(sc *scratch) {
	keep := min(max(minScratches, runtime.GOMAXPROCS(0)), maxScratches)
	ix.scratchMu.Lock()
	if len(ix.scratches) < keep {
		ix.scratches = append(ix.scratches, sc)
	}
	ix.scratchMu.Unlock()
}

// scratch is per-query working memory, pooled so a query over a large
// index does not allocate its size each time. Each part is made on first
// use: criteria matching never needs the full-text accumulators.
type scratch struct {
	// Full text: a score and the query terms found per ad, and the ads
	// touched, whose entries go back to 0 after each query.
	acc     []float64
	mask    []uint32
	touched []uint32
	// critSlot is, for each criterion the input holds, 1 + its place among
	// the input's criteria (in findOccs shifted by slotShift, plus its
	// occurrences), and 0 for the others; adSlot is 1 + an ad's place among
	// matchLow's candidates. Both are all 0 between queries. They
	// stand where maps did: a lookup here is one load, where a map cost the
	// module four runtime calls (hashing, probing), a third of a query's
	// calls in all.
	critSlot []int32
	adSlot   []int32
}

// The scratch's parts are got once a query, and clearSlots runs a few
// times: none is inlined (each copy costs the module's download).
//
//go:noinline
func (sc *scratch) fullText(ix *Index) {
	if sc.acc == nil {
		sc.acc, sc.mask = make([]float64, len(ix.ads)), make([]uint32, len(ix.ads))
	}
}

func (sc *scratch) crits(ix *Index) []int32 { return slots(&sc.critSlot, len(ix.critOff)-1) }
func (sc *scratch) ads(ix *Index) []int32   { return slots(&sc.adSlot, len(ix.ads)) }

// slots returns *p, made n long (all 0) on first use.
//
//go:noinline
func slots(p *[]int32, n int) []int32 {
	if *p == nil {
		*p = make([]int32, max(n, 0))
	}
	return *p
}

// input is a tokenised query: title tokens first, then text tokens.
type input struct {
	src    [2]string // the text each token's span refers to: title, text
	toks   []token
	nTitle int
	qtoks  [][]int // full text: the token indexes of each query term
	ext    []candExt
}

func (in *input) span(i int) string {
	t := &in.toks[i]
	s := in.src[0]
	if i >= in.nTitle {
		s = in.src[1]
	}
	return s[t.start:t.end]
}

func (ix *Index) tokenize(q *Query) *input {
	limit := MaxQueryBytes
	if q.Page {
		limit = MaxPageBytes
	}
	title := cut(q.Title, limit)
	text := cut(q.Text, limit)
	in := &input{src: [2]string{title, text}}
	// A search query (at most MaxQueryBytes) gets room for a word per few
	// bytes at once. A page's text grows its list as it goes: made at that
	// size up front, the list cost the module three times the time for a
	// page (BenchmarkPage: 5.0 ms against 1.8 ms on the 10k-ad shard), the
	// runtime collecting and clearing far more memory.
	if !q.Page {
		in.toks = make([]token, 0, (len(title)+len(text))/6+4)
	}
	// Only full-text queries look at the terms themselves (synonyms,
	// compounds); the rest need the ids, and a page has thousands of words.
	keep := !q.Page && q.Dist == DistNone
	var scratch []byte
	for k, s := range in.src {
		if k == 1 {
			in.nTitle = len(in.toks)
		}
		brk := k == 1
		scratch = scan(s, scratch, func(term []byte, start, end int, b bool) {
			t := token{id: ix.termIDBytes(term), start: int32(start), end: int32(end), brk: b || brk}
			if keep {
				// A term the index has is the index's string: no copy.
				if t.id >= 0 {
					t.term = ix.term(uint32(t.id))
				} else {
					t.term = string(term)
				}
			}
			in.toks = append(in.toks, t)
			brk = false
		})
	}
	return in
}

// cut shortens s to at most n bytes, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Match returns the ads for q, best first. The result is deterministic:
// the same index and query give the same hits in the same order.
func (ix *Index) Match(q *Query) []Hit {
	if len(ix.ads) == 0 {
		return nil
	}
	size := q.Size
	if size <= 0 {
		size = DefaultSize
	}
	size = min(size, MaxSize)
	distinct := q.DistinctAdvertiser
	if distinct <= 0 {
		distinct = DefaultDistinctAdvertiser
	}
	// The API caps it; a caller of Match that does not still gets a bounded
	// ranking (and a candidate heap whose size does not overflow).
	distinct = min(distinct, MaxDistinctAdvertiser)
	in := ix.tokenize(q)
	f := ix.filter(q)
	// Scratch goes back to the pool only after a query that ran to its
	// end: one that panicked may have left it dirty.
	sc := ix.getScratch()
	var cands []cand
	fullText := false
	switch {
	case q.Page || q.Dist == DistHigh:
		cands = ix.matchCriteria(in, f, q.Page, sc)
	case q.Dist == DistLow:
		cands = ix.matchLow(in, f, sc)
	default:
		// Full text scores bids in, and keeps only the best candidates.
		cands, fullText = ix.matchFullText(in, f, q.Operator == OpAnd, fullTextKeep*size*distinct, sc), true
	}
	ix.putScratch(sc)
	if !fullText {
		for i := range cands {
			c := &cands[i]
			c.score = float64(c.score * bidFactor(ix.ads[c.ad].bid))
		}
	}
	return ix.top(in, cands, size, distinct)
}

// bidFactor lifts an ad by its bid, sub-linearly: relevance leads, and the
// bid decides among ads of like relevance.
func bidFactor(micros uint32) float64 {
	return float64(math.Sqrt(1 + float64(micros)/1e6))
}

// filter holds the request's market and kind filters.
type filter struct {
	markets uint64
	any     bool
	kinds   Kinds
}

func (ix *Index) filter(q *Query) filter {
	f := filter{kinds: q.Kinds, any: q.Country == "" && q.Lang == ""}
	for m, mk := range ix.markets {
		if (q.Country == "" || mk.Country == q.Country) && (q.Lang == "" || mk.Lang == q.Lang) {
			f.markets |= 1 << m
		}
	}
	return f
}

func (f *filter) ok(a *adRec) bool {
	return f.kinds.Has(a.kind()) && (f.any || a.marketBits()&f.markets != 0)
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

// clearSlots sets slot back to 0 for the criteria or ads in order.
//
//go:noinline
func clearSlots(slot []int32, order []uint32) {
	for _, c := range order {
		slot[c] = 0
	}
}

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

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// matchFullText scores every ad containing the query's terms with BM25 over
// all its text (ctx.dist=none); and requires every term. It adds term by
// term into dense accumulators, a few nanoseconds per posting.
//
// It returns at most keep candidates, the best: a common word can match
// hundreds of thousands of ads, and only a few can be shown.
func (ix *Index) matchFullText(in *input, f filter, and bool, keep int, sc *scratch) []cand {
	type alt struct {
		id  uint32
		bit uint32
		w   float64
	}
	var alts []alt
	var required uint32
	group := func(toks []int, terms []string, need bool) {
		if len(in.qtoks) == maxQueryTerms {
			return
		}
		bit := uint32(1) << len(in.qtoks)
		n := len(alts)
		for k, term := range terms {
			w := 1.0
			if k > 0 {
				w = synonymWeight
			}
			if id := ix.termID(term); id >= 0 && !slices.ContainsFunc(alts[n:], func(a alt) bool { return a.id == uint32(id) }) {
				alts = append(alts, alt{uint32(id), bit, w})
			}
		}
		if len(alts) == n {
			if need && and {
				required |= 1 << 31 // a term nothing can match: and fails
			}
			return
		}
		in.qtoks = append(in.qtoks, toks)
		if need {
			required |= bit
		}
	}
	// The query terms already grouped, at most maxQueryTerms: a scan, no map.
	type seenTerm struct {
		term string
		k    int
	}
	var seen []seenTerm
	for i, t := range in.toks {
		if j := slices.IndexFunc(seen, func(s seenTerm) bool { return s.term == t.term }); j >= 0 {
			k := seen[j].k
			in.qtoks[k] = append(in.qtoks[k], i)
			continue
		}
		if n := len(in.qtoks); true {
			group([]int{i}, withSynonyms(t.term), true)
			if len(in.qtoks) > n {
				seen = append(seen, seenTerm{t.term, n})
			}
		}
		// Two words written apart that the catalog writes as one
		// ("head set" -> headset) also count, as an optional term.
		if i+1 < len(in.toks) && !in.toks[i+1].brk {
			group([]int{i, i + 1}, withSynonyms(t.term+in.toks[i+1].term), false)
		}
	}
	if len(alts) == 0 || required&(1<<31) != 0 {
		return nil
	}
	sc.fullText(ix)
	const k1, b = 1.2, 0.75
	n := float64(len(ix.ads))
	touched := sc.touched[:0]
	// The loops read the index's and scratch's slices from locals: Go does
	// not hoist loads out of loops, and in the module each load of a field
	// is a bounds-checked read of linear memory.
	acc, mask, ads, avg := sc.acc, sc.mask, ix.ads, ix.avgLen
	for _, a := range alts {
		lo, hi := ix.postOff[a.id], ix.postOff[a.id+1]
		df := float64(hi - lo)
		idf := float64(a.w * ln(float64(1+(n-df+0.5)/(df+0.5))))
		postTF := ix.postTF[lo:hi]
		for i, ad := range ix.postAd[lo:hi] {
			if mask[ad] == 0 {
				touched = append(touched, ad)
			}
			tf := float64(postTF[i])
			norm := float64(k1 * (1 - b + b*float64(ads[ad].docLen)/avg))
			acc[ad] = float64(acc[ad] + idf*float64(tf*(k1+1))/float64(tf+norm))
			mask[ad] |= a.bit
		}
	}
	all := required
	h := make(worst, 0, min(keep, len(touched)))
	for _, ad := range touched {
		if (!and || mask[ad]&all == all) && f.ok(&ads[ad]) {
			// Most candidates of a common word lose to the worst kept:
			// that test here spares them a call.
			c := cand{ad: ad, mask: mask[ad], score: float64(acc[ad] * bidFactor(ads[ad].bid)), ext: -1}
			if len(h) < keep || (keep > 0 && better(&c, &h[0])) {
				h.keep(keep, c)
			}
		}
		acc[ad], mask[ad] = 0, 0
	}
	sc.touched = touched
	return h
}

// fullTextKeep times size times distinct_advertiser is how many full-text
// candidates are ranked: room for distinct_advertiser to drop the copies of
// an offer and still fill size.
const fullTextKeep = 2

// better is the ranking order: higher score, then lower ordinal.
func better(a, b *cand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.ad < b.ad
}

// worst is a heap of the best candidates seen, the worst of them on top.
type worst []cand

// keep adds c when fewer than n are kept or c beats the worst kept.
func (h *worst) keep(n int, c cand) {
	s := *h
	if len(s) < n {
		s = append(s, c)
		for i := len(s) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !better(&s[p], &s[i]) {
				break
			}
			s[p], s[i] = s[i], s[p]
			i = p
		}
		*h = s
		return
	}
	if n == 0 || !better(&c, &s[0]) {
		return
	}
	s[0] = c
	for i := 0; ; { // sift down
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && better(&s[w], &s[l]) {
			w = l
		}
		if r < len(s) && better(&s[w], &s[r]) {
			w = r
		}
		if w == i {
			return
		}
		s[i], s[w] = s[w], s[i]
		i = w
	}
}

// top ranks the candidates, applies distinct_advertiser and size, and
// turns them into hits. Only as many candidates as needed are sorted.
func (ix *Index) top(in *input, cands []cand, size, distinct int) []Hit {
	// taken lists the (offer, advertiser) of each hit so far: a scan of at
	// most size entries, no map or slice per offer.
	type offerAdv struct{ offer, adv uint32 }
	var hs hitScratch
	m := size * 2
	for {
		if m > len(cands) {
			m = len(cands)
		}
		selectTop(cands, m)
		head := cands[:m]
		sortCands(head)
		hits := make([]Hit, 0, size)
		taken := make([]offerAdv, 0, size)
		hs.keywords = make([]string, 0, 2*size)
		for i := range head {
			c := &head[i]
			a := &ix.ads[c.ad]
			adv := a.adv
			n, dup := 0, false
			for _, t := range taken {
				if t.offer == a.offer {
					n++
					dup = dup || t.adv == adv
				}
			}
			if n >= distinct || dup {
				continue
			}
			taken = append(taken, offerAdv{a.offer, adv})
			hits = append(hits, ix.hit(in, c, &hs))
			if len(hits) == size {
				return hits
			}
		}
		if m == len(cands) {
			return hits
		}
		m *= 4
	}
}

// hitScratch is memory the hits of one Match share: their keywords in one
// backing array (each hit's a capped slice of it), and a list reused.
type hitScratch struct {
	keywords []string
	terms    []int
}

// selectTop moves the m best candidates to the front, in no order.
func selectTop(c []cand, m int) {
	less := better
	lo, hi := 0, len(c)
	if m <= 0 || m >= hi {
		return
	}
	for hi-lo > 1 {
		// Median of three as pivot keeps this deterministic and fast.
		mid := lo + (hi-lo)/2
		if less(&c[mid], &c[lo]) {
			c[mid], c[lo] = c[lo], c[mid]
		}
		if less(&c[hi-1], &c[lo]) {
			c[hi-1], c[lo] = c[lo], c[hi-1]
		}
		if less(&c[hi-1], &c[mid]) {
			c[hi-1], c[mid] = c[mid], c[hi-1]
		}
		p := c[mid]
		i, j := lo, hi-1
		for i <= j {
			for less(&c[i], &p) {
				i++
			}
			for less(&p, &c[j]) {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		switch {
		case m <= j:
			hi = j + 1
		case m >= i:
			lo = i
		default:
			return
		}
	}
}

// sortCands puts candidates in ranking order, best first: a heap sort, as
// better is a total order (ads are distinct) and needs no stability.
func sortCands(c []cand) {
	down := func(i, n int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < n && better(&c[w], &c[l]) {
				w = l
			}
			if r < n && better(&c[w], &c[r]) {
				w = r
			}
			if w == i {
				return
			}
			c[i], c[w] = c[w], c[i]
			i = w
		}
	}
	for i := len(c)/2 - 1; i >= 0; i-- {
		down(i, len(c))
	}
	for n := len(c) - 1; n > 0; n-- {
		c[0], c[n] = c[n], c[0]
		down(0, n)
	}
}

// hit turns a candidate into a Hit with the input's own spelling of what
// matched.
func (ix *Index) hit(in *input, c *cand, hs *hitScratch) Hit {
	h := Hit{Ad: int(c.ad), Score: c.score}
	start := len(hs.keywords)
	add := func(s string) {
		s = dropSoftHyphens(s)
		kw := hs.keywords[start:]
		if len(kw) == maxKeywords {
			return
		}
		// At most maxKeywords to compare with: a scan, no map.
		for _, k := range kw {
			if equalLower(k, s) {
				return
			}
		}
		hs.keywords = append(hs.keywords, s)
	}
	var x candExt
	if c.ext >= 0 {
		x = in.ext[c.ext]
	} else {
		x.terms = hs.terms[:0]
		for k, toks := range in.qtoks {
			if c.mask&(1<<k) != 0 {
				x.terms = append(x.terms, toks...)
			}
		}
		insertionSort(x.terms)
		hs.terms = x.terms
	}
	if len(x.occs) > 0 {
		// A criterion inside another one the ad matched ("iPhone" beside
		// "iPhone 5") says nothing more and is left out. Compared once per
		// distinct criterion, not per occurrence.
		var inner []uint32
		for _, a := range x.aggs {
			if slices.ContainsFunc(x.aggs, func(b critAgg) bool { return ix.within(a.crit, b.crit) }) {
				inner = append(inner, a.crit)
			}
		}
		// Order of first occurrence: title occurrences come first.
		for _, o := range x.occs {
			if slices.Contains(inner, o.crit) {
				continue
			}
			t0, t1 := &in.toks[o.from], &in.toks[o.to-1]
			s := in.src[0]
			if int(o.from) >= in.nTitle {
				s = in.src[1]
			}
			add(s[t0.start:t1.end])
		}
	} else {
		for _, i := range x.terms {
			add(in.span(i))
		}
	}
	end := len(hs.keywords)
	if end > start {
		h.Keywords = hs.keywords[start:end:end]
	}
	h.Criterion = joinStrings(h.Keywords, " ")
	return h
}

// dropSoftHyphens returns s without the soft hyphens a page puts into
// words (scan reads across them): a keyword and its criterionId are the
// word as it reads, "Handyhülle", whatever hyphenation hints the page has.
func dropSoftHyphens(s string) string {
	const shy = "\u00ad"
	i := indexString(s, shy)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for ; i >= 0; i = indexString(s, shy) {
		b = append(b, s[:i]...)
		s = s[i+len(shy):]
	}
	return string(append(b, s...))
}

// maxKeywords bounds an entry's keywords, and so its criterionId.
const maxKeywords = 16

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

// ln is the natural logarithm by plain arithmetic, so the server and the
// WebAssembly module (where math.Log takes other code paths) rank alike.
func ln(x float64) float64 {
	if x <= 0 {
		return math.Inf(-1)
	}
	m, e := math.Frexp(x) // x = m * 2^e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m = float64(m * 2)
		e--
	}
	z := float64((m - 1) / (m + 1))
	z2 := float64(z * z)
	s, t := 0.0, z
	for k := 1; k < 40; k += 2 {
		s = float64(s + t/float64(k))
		t = float64(t * z2)
	}
	return float64(float64(2*s) + float64(float64(e)*math.Ln2))
}
