//go:build !wasip1

package market

import (
	"hash/maphash"

	"github.com/adlink/adlink/match"
)

// rebuildIndex indexes a changed catalog beside the index before it.
var rebuildIndex = match.RebuildBeside

// adSumsBeside is adSums of ads, taking an ad's sum from prev (nil for
// none) when prev has that very ad (match.SameMemory): a feed's
// unchanged lines read again are the ads they were, mostly in the same
// order, so each is found at the place after the last one found, else
// by its id.
func adSumsBeside(prev *Set, seed maphash.Seed, ads []match.Ad) []uint64 {
	if prev == nil || prev.seed != seed || len(prev.adSums) != len(prev.ads) || prev.all == nil {
		return adSums(seed, ads)
	}
	sums := make([]uint64, len(ads))
	next := 0
	for i := range ads {
		a := &ads[i]
		j := next
		if j >= len(prev.ads) || !match.SameMemory(&prev.ads[j], a) {
			k, ok := prev.all.Lookup(a.ID)
			if !ok || !match.SameMemory(&prev.ads[k], a) {
				sums[i] = adSums(seed, ads[i:i+1])[0]
				continue
			}
			j = k
		}
		sums[i], next = prev.adSums[j], j+1
	}
	return sums
}
