//go:build !wasip1

package match_test

import (
	"math/rand/v2"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// FuzzRebuildIsBuild: over generated catalogs of any size and seed, and
// any number of changes (removed, added, changed and moved ads), a
// refreshed index built by Rebuild beside the one before encodes as Build's
// of the same ads, and so does a second refresh beside the first.
func FuzzRebuildIsBuild(f *testing.F) {
	f.Add(uint64(1), uint16(200), uint16(3))
	f.Add(uint64(2), uint16(1), uint16(1))
	f.Add(uint64(3), uint16(50), uint16(500))
	f.Fuzz(func(t *testing.T, seed uint64, size, changes uint16) {
		base := testcatalog.Generate(1+int(size%600), seed)
		prev, err := match.Build(base)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, uint64(changes)))
		ads := changeCatalog(base, r, int(changes%1000))
		got := rebuildIsBuild(t, prev, base, ads)
		rebuildIsBuild(t, got, ads, changeCatalog(ads, r, 1+int(changes%7)))
	})
}
