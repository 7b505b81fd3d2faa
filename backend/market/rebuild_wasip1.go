//go:build wasip1

package market

import (
	"hash/maphash"

	"github.com/adlink/adlink/match"
)

// rebuildIndex is match.Build where match.Rebuild is not built (the
// module's target, where this package is only compiled for the module's
// tests).
func rebuildIndex(_ *match.Index, _ func(int) *match.Ad, ads []match.Ad) (*match.Index, error) {
	return match.Build(ads)
}

// adSumsBeside is adSums.
func adSumsBeside(_ *Set, seed maphash.Seed, ads []match.Ad) []uint64 { return adSums(seed, ads) }
