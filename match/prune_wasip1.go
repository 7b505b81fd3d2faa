//go:build wasip1

package match

// pruning is false: the module scores every posting of a full-text query,
// as a shard holds few ads and the pruned walk's code would cost the
// module bytes (prune.go, bounds.go).
const pruning = false

type fullTextBounds struct{}

func (ix *Index) prunedFullText(*Query, []alt, uint32, filter, int, *scratch) ([]cand, bool) {
	return nil, false
}

func (ix *Index) prepareFullText() {}

func touchHits(*Index, []Hit) byte { return 0 }

func criterion(_ *input, _ *candExt, kw []string) string { return joinStrings(kw, " ") }
