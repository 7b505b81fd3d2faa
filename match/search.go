package match

import "math"

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
	in := new(input)
	ix.tokenize(in, q)
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
		cands, fullText = ix.matchFullText(in, f, q, fullTextKeep*size*distinct, sc), true
	}
	if !fullText {
		for i := range cands {
			c := &cands[i]
			c.score = float64(c.score * bidFactor(ix.ads[c.ad].bid))
		}
	}
	// The candidates may lie in the scratch (the server's merge keeps them
	// there): it goes back once they are ranked.
	hits := ix.top(in, cands, size, distinct)
	ix.putScratch(sc)
	return hits
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
	exclude []uint32 // advertiser groups left out
}

func (ix *Index) filter(q *Query) filter {
	f := filter{kinds: q.Kinds, any: q.Country == "" && q.Lang == "", exclude: q.Exclude}
	for m, mk := range ix.markets {
		if (q.Country == "" || mk.Country == q.Country) && (q.Lang == "" || mk.Lang == q.Lang) {
			f.markets |= 1 << m
		}
	}
	return f
}

func (f *filter) ok(a *adRec) bool {
	return f.kinds.Has(a.kind()) && (f.any || a.marketBits()&f.markets != 0) && (f.exclude == nil || f.kept(a.adv))
}

// kept reports whether advertiser group adv is not excluded: a scan, as
// few advertisers are out at once, and not inlined, as the module pays for
// each copy.
//
//go:noinline
func (f *filter) kept(adv uint32) bool {
	for _, g := range f.exclude {
		if g == adv {
			return false
		}
	}
	return true
}

// cand is an ad being scored. It is small because full-text queries make
// many of them and ranking moves them around.
type cand struct {
	ad    uint32
	mask  uint32 // full text: the query terms (qterm bits) it contains
	score float64
	ext   int32 // index into the query's candExt, or -1
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

// tokenize fills in with q's tokens; in is the caller's, so it need not
// be allocated.
func (ix *Index) tokenize(in *input, q *Query) {
	limit := MaxQueryBytes
	if q.Page {
		limit = MaxPageBytes
	}
	title := cut(q.Title, limit)
	text := cut(q.Text, limit)
	in.src = [2]string{title, text}
	// A search query (at most MaxQueryBytes) gets room for a word per few
	// bytes at once. A page's text grows its list as it goes: made at that
	// size up front, the list slowed the module's page matching, its
	// runtime collecting and clearing far more memory (docs/PERFORMANCE.md).
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
