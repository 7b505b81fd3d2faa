package match

import "slices"

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
	var termBuf [maxQueryTerms]int
	hs := hitScratch{terms: termBuf[:0]}
	m := size * 2
	for {
		if m > len(cands) {
			m = len(cands)
		}
		selectTop(cands, m)
		head := cands[:m]
		sortCands(head)
		hits := make([]Hit, 0, size)
		var takenBuf [MaxSize]offerAdv
		taken := takenBuf[:0]
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
	h.Criterion = criterion(in, &x, h.Keywords)
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
