package match

import "runtime"

// getScratch and putScratch run once a query; noinline: module size, see
// docs/PERFORMANCE.md.
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
	// stand in for maps: a lookup here is one load, where a map costs the
	// module runtime calls (hashing, probing).
	critSlot []int32
	adSlot   []int32
	// cands holds the server's merged candidates (merge.go) until Match
	// has ranked them.
	cands []cand
}

// The scratch's parts are got once a query, and clearSlots runs a few
// times; noinline: module size, see docs/PERFORMANCE.md.
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

// clearSlots sets slot back to 0 for the criteria or ads in order.
//
//go:noinline
func clearSlots(slot []int32, order []uint32) {
	for _, c := range order {
		slot[c] = 0
	}
}
