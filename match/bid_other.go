//go:build !wasip1

package match

// The server's reading of an index's ads, outside the module: the site
// shards (backend/siteshards) rank a market's ads without taking every ad
// apart with Ad.

// AdBid returns ad i's bid as the index keeps it, rounded (in micros).
func (ix *Index) AdBid(i int) int64 { return int64(ix.ads[i].bid) }

// AdCategory returns ad i's category; "" while the fragment holding it is
// not loaded.
func (ix *Index) AdCategory(i int) string { return ix.field(i, fCategory) }

// AdMarketBits returns the set of the index's markets (Markets, by
// position) ad i runs in.
func (ix *Index) AdMarketBits(i int) uint64 { return ix.ads[i].marketBits() }
