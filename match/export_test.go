//go:build !wasip1

package match

// MatchWalk is Match ranking a full-text query by the pruned walk however
// few postings it has, for the tests in package match_test.
func (ix *Index) MatchWalk(q *Query) []Hit {
	e := *q
	e.fullText = walkAlways
	return ix.Match(&e)
}

// WalkScored is how many ads the index's walks have scored.
func (ix *Index) WalkScored() int64 { return ix.ft.scored.Load() }

// FullTextCand is a candidate of a full-text query: what Match ranks.
type FullTextCand struct {
	Ad, Mask uint32
	Score    float64
}

// FullTextCands returns the candidates a full-text query ranks, best
// first, by the walk or by the exhaustive loop: all of them, where Match
// shows only size of them.
func (ix *Index) FullTextCands(q *Query, walk bool) []FullTextCand {
	mode := walkNever
	if walk {
		mode = walkAlways
	}
	return ix.fullTextCands(q, mode)
}

// MergedCands is FullTextCands by the merge of the query's lists, however
// many postings it has.
func (ix *Index) MergedCands(q *Query) []FullTextCand { return ix.fullTextCands(q, mergeAlways) }

// MatchMerged is Match ranking a full-text query by the merge of its
// lists however many postings it has.
func (ix *Index) MatchMerged(q *Query) []Hit {
	e := *q
	e.fullText = mergeAlways
	return ix.Match(&e)
}

func (ix *Index) fullTextCands(q *Query, mode fullTextMode) []FullTextCand {
	e := *q
	e.fullText = mode
	size := q.Size
	if size <= 0 {
		size = DefaultSize
	}
	distinct := q.DistinctAdvertiser
	if distinct <= 0 {
		distinct = DefaultDistinctAdvertiser
	}
	size, distinct = min(size, MaxSize), min(distinct, MaxDistinctAdvertiser)
	sc := ix.getScratch()
	in := new(input)
	ix.tokenize(in, &e)
	cs := ix.matchFullText(in, ix.filter(&e), &e, fullTextKeep*size*distinct, sc)
	ix.putScratch(sc)
	sortCands(cs)
	out := make([]FullTextCand, len(cs))
	for i, c := range cs {
		out[i] = FullTextCand{c.ad, c.mask, c.score}
	}
	return out
}

// Postings is how many ads hold term, written as the index writes it.
func (ix *Index) Postings(term string) int {
	id := ix.termID(term)
	if id < 0 {
		return 0
	}
	return int(ix.postOff[id+1] - ix.postOff[id])
}

// ReserveAfter is how many ads Build adds before it sizes the postings.
const ReserveAfter = reserveAfter

// CriteriaOf is the set of ad's criteria SameCriteria compares.
func CriteriaOf(ad *Ad) map[string]bool { return criteriaOf(ad) }
