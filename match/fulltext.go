package match

import (
	"math"
	"slices"
)

// maxQueryTerms bounds the distinct terms a full-text query scores.
const maxQueryTerms = 16

// bm25K1 is BM25's k1, how soon a word's repeats stop adding, for the
// module's loop and the server's walk and bounds alike. Its b is 1: an
// ad's length discounts its words in full (norm is k1 times its length
// over the mean), as a word in a short ad says more of what it is than in
// one with a long description or list of specifications
// (docs/PERFORMANCE.md).
const bm25K1 = 1.2

// matchFullText scores every ad containing the query's terms with BM25 over
// all its text (ctx.dist=none); and requires every term. It adds term by
// term into dense accumulators, a few nanoseconds per posting.
//
// It returns at most keep candidates, the best: a common word can match
// hundreds of thousands of ads, and only a few can be shown.
func (ix *Index) matchFullText(in *input, f filter, q *Query, keep int, sc *scratch) []cand {
	and := q.Operator == OpAnd
	var altBuf [8]alt
	alts := altBuf[:0]
	var required uint32
	group := func(toks []int, term string, need bool) {
		if len(in.qtoks) == maxQueryTerms {
			return
		}
		bit := uint32(1) << len(in.qtoks)
		n := len(alts)
		// The query's last word names its type, unless the catalog
		// writes it as one with the word before ("head set": a
		// headset, not a styling set): those two, grouped just before.
		head := toks[len(toks)-1] == len(in.toks)-1 && (n == 0 || !alts[n-1].head)
		// The term, then its synonyms: no list of them made.
		syn := synonyms[term]
		for k := -1; k < len(syn); k++ {
			w, term := 1.0, term
			if k >= 0 {
				w, term = synonymWeight, syn[k]
			}
			if id := ix.termID(term); id >= 0 && !slices.ContainsFunc(alts[n:], func(a alt) bool { return a.id == uint32(id) }) {
				alts = append(alts, alt{uint32(id), uint32(len(in.qtoks)), bit, w, head})
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
	var seenBuf [maxQueryTerms]seenTerm
	seen := seenBuf[:0]
	for i, t := range in.toks {
		if j := slices.IndexFunc(seen, func(s seenTerm) bool { return s.term == t.term }); j >= 0 {
			k := seen[j].k
			in.qtoks[k] = append(in.qtoks[k], i)
			continue
		}
		if n := len(in.qtoks); true {
			group([]int{i}, t.term, true)
			if len(in.qtoks) > n {
				seen = append(seen, seenTerm{t.term, n})
			}
		}
		// Two words written apart that the catalog writes as one
		// ("head set" -> headset) also count, as an optional term; at
		// the query's end, it names the type.
		if i+1 < len(in.toks) && !in.toks[i+1].brk {
			group([]int{i, i + 1}, t.term+in.toks[i+1].term, false)
		}
	}
	if len(alts) == 0 || required&(1<<31) != 0 {
		return nil
	}
	// The server skips the ads that cannot make the top keep (prune.go);
	// the module scores every posting, below.
	if pruning {
		if h, ok := ix.prunedFullText(q, alts, required, f, keep, sc); ok {
			return h
		}
	}
	sc.fullText(ix)
	const k1 = bm25K1
	n := float64(len(ix.ads))
	touched := sc.touched[:0]
	// The loops read the index's and scratch's slices from locals: Go does
	// not hoist loads out of loops, and in the module each load of a field
	// is a bounds-checked read of linear memory.
	acc, mask, ads, avg := sc.acc, sc.mask, ix.ads, ix.avgLen
	// A word and its synonyms share one rarity, that of the group as a
	// whole (as if one term): otherwise the rarer spelling would win, and
	// "laptop" would prefer laptop cases to the many notebooks.
	var groupDF [maxQueryTerms]uint32
	for _, a := range alts {
		groupDF[a.k] += ix.postOff[a.id+1] - ix.postOff[a.id]
	}
	for _, a := range alts {
		lo, hi := ix.postOff[a.id], ix.postOff[a.id+1]
		df := float64(min(groupDF[a.k], uint32(len(ix.ads))))
		idf := float64(a.w * ln(float64(1+(n-df+0.5)/(df+0.5))))
		postTF := ix.postTF[lo:hi]
		for i, ad := range ix.postAd[lo:hi] {
			if mask[ad] == 0 {
				touched = append(touched, ad)
			}
			t := postTF[i]
			tf := float64(t & maxTF)
			norm := float64(k1 * float64(float64(ads[ad].docLen)/avg))
			acc[ad] = float64(acc[ad] + idf*float64(tf*(k1+1))/float64(tf+norm))
			mask[ad] |= a.bit
			if t&typeFlag != 0 && a.head {
				mask[ad] |= typeBit
			}
		}
	}
	all := required
	h := make(worst, 0, min(keep, len(touched)))
	for _, ad := range touched {
		m := mask[ad] &^ typeBit
		if (!and || m&all == all) && f.ok(&ads[ad]) {
			// Most candidates of a common word lose to the worst kept:
			// that test here spares them a call.
			c := cand{ad: ad, mask: m, score: float64(acc[ad] * bidFactor(ads[ad].bid)), ext: -1}
			// Among ads with every word of the query, or two of them
			// as one (the optional terms are those), those that are
			// what it names come first.
			if m != mask[ad] && (m&required == required || m&^required != 0) {
				c.score = float64(c.score * typeBoost)
			}
			if len(h) < keep || (keep > 0 && better(&c, &h[0])) {
				h.keep(keep, c)
			}
		}
		acc[ad], mask[ad] = 0, 0
	}
	sc.touched = touched
	return h
}

// alt is one term a full-text query scores: a word it wrote, a synonym,
// or two words the catalog writes as one.
type alt struct {
	id, k, bit uint32 // k: the query term's place, bit: 1<<k
	w          float64
	head       bool // the query's last word, the type it names
}

// A posting's term frequency keeps its high bit for "this word is the
// ad's product type": an ad that is what the query names ranks above ads
// that only mention it (a notebook above a notebook case).
const (
	maxTF     = 0x7f
	typeFlag  = 0x80
	typeBit   = 1 << 30 // in a candidate's mask while scoring
	typeBoost = 2
)

// fullTextKeep times size times distinct_advertiser is how many full-text
// candidates are ranked: room for distinct_advertiser to drop the copies of
// an offer and still fill size.
const fullTextKeep = 2

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
