//go:build wasip1

package match

// The module scores every posting of a full-text query: a shard holds few
// ads, and the pruning's code would cost the module bytes (prune.go).
// pruning is false: the module has no pruned evaluation.
const pruning = false

type fullTextBounds struct{}

func (ix *Index) prunedFullText(*Query, []alt, uint32, filter, int) ([]cand, bool) {
	return nil, false
}

func (ix *Index) prepareFullText() {}
