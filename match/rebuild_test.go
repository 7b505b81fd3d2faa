//go:build !wasip1

package match_test

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// changeCatalog returns ads with ads removed, added (new ones and copies of
// others under new ids, so that they join offer groups), changed in every
// field the index reads, and moved out of their order.
func changeCatalog(ads []match.Ad, r *rand.Rand, changes int) []match.Ad {
	out := slices.Clone(ads)
	for k := range changes {
		if len(out) < 2 {
			break
		}
		i := r.IntN(len(out))
		a := out[i] // its strings and lists where out[i]'s are, but for those changed
		switch k % 12 {
		case 0:
			out = slices.Delete(out, i, i+1)
			continue
		case 1:
			a.PriceCents++
		case 2:
			a.Title = "Brandneu " + a.Title + fmt.Sprint(" zq", k)
		case 3:
			a.GTIN = ""
		case 4:
			a.Markets = []match.Market{{Country: "nl", Lang: "nl"}}
		case 5:
			a.Advertiser = fmt.Sprintf("new%d.example", k)
		case 6:
			a.Keywords = append(slices.Clone(a.Keywords), "frisch gepresst")
		case 7:
			a.BidMicros = a.BidMicros*3 + 1
		case 8:
			a.ID = fmt.Sprintf("new-%d", k) // a new ad, another's offer
			out = slices.Insert(out, r.IntN(len(out)+1), a)
			continue
		case 9:
			a.ID = fmt.Sprintf("moved-%d", k)
			out = slices.Delete(out, i, i+1)
			out = slices.Insert(out, r.IntN(len(out)+1), ads[i%len(ads)])
			continue
		case 10:
			a.Description = a.Description + " wasserdicht"
			a.Category = "Zelte"
		case 11:
			a.Model = "Xq " + a.Model
			a.Manufacturer = "Neuhaus"
		}
		out[i] = a
	}
	// Drop what the moves doubled.
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(a match.Ad) bool {
		d := seen[a.ID]
		seen[a.ID] = true
		return d
	})
}

// TestRebuildIsBuild checks that an index rebuilt beside the one before is
// the index Build makes of the changed catalog, byte for byte, over
// catalogs with ads removed first and last, added, changed in each field,
// moved, and every ad of a market gone.
func TestRebuildIsBuild(t *testing.T) {
	base := testcatalog.Generate(3000, 11)
	prev, err := match.Build(base)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	cases := map[string][]match.Ad{
		"unchanged":    base,
		"one left":     base[7:8],
		"first gone":   base[1:],
		"last gone":    base[:len(base)-1],
		"two changes":  changeCatalog(base, r, 2),
		"few changes":  changeCatalog(base, r, 30),
		"many changes": changeCatalog(base, r, 400),
		"most changed": changeCatalog(base, r, 3000),
		"reversed": func() []match.Ad {
			c := slices.Clone(base)
			slices.Reverse(c)
			return c
		}(),
		"a market gone": slices.DeleteFunc(slices.Clone(base), func(a match.Ad) bool {
			return slices.Contains(a.Markets, base[0].Markets[0])
		}),
		// Titles of common words only, each another: many ads to read
		// for their offer groups, past Rebuild's budget.
		"common titles": func() []match.Ad {
			freq := map[string]int{}
			for _, a := range base {
				for _, w := range strings.Fields(strings.ToLower(a.Title)) {
					freq[w]++
				}
			}
			words := slices.Collect(maps.Keys(freq))
			slices.SortFunc(words, func(x, y string) int { return cmp.Or(freq[y]-freq[x], strings.Compare(x, y)) })
			words = words[:30]
			c := slices.Clone(base)
			for k := range 600 {
				c[k*5].Title = words[k%30] + " " + words[(k/30+k%30+1)%30]
				c[k*5].GTIN = ""
			}
			return c
		}(),
		"first price": func() []match.Ad {
			c := slices.Clone(base)
			c[0].PriceCents += 100
			return c
		}(),
	}
	for name, ads := range cases {
		t.Run(name, func(t *testing.T) {
			got := rebuildIsBuild(t, prev, base, ads)
			// And again beside the rebuilt one: a second refresh.
			rebuildIsBuild(t, got, ads, changeCatalog(ads, r, 20))
		})
	}
}

// TestRebuildErrors checks that Rebuild fails where Build fails, with its
// error: a duplicate id among kept and new ads, an ad without id.
func TestRebuildErrors(t *testing.T) {
	base := testcatalog.Generate(500, 5)
	prev, err := match.Build(base)
	if err != nil {
		t.Fatal(err)
	}
	dup := append(slices.Clone(base), base[10])
	dup[len(dup)-1].Title = "Another title"
	noID := append(slices.Clone(base), match.Ad{Title: "x"})
	for name, ads := range map[string][]match.Ad{"duplicate": dup, "no id": noID} {
		_, want := match.Build(ads)
		_, got := match.Rebuild(prev, ads)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: Rebuild's error %v, Build's %v", name, got, want)
		}
	}
}

// TestRebuildTypesFromTheWholeCatalog: an ad without a category takes its
// product type from its title when some ad of the catalog has that type as
// its category's last word, so a change to other ads' categories changes
// it. Rebuild reads the types from the whole new catalog, as Build does:
// for a new uncategorised ad whose type only kept ads name, and for a kept
// one whose type went with the last ad of that category.
func TestRebuildTypesFromTheWholeCatalog(t *testing.T) {
	base := testcatalog.Generate(600, 7)
	like := func(id, title, category string) match.Ad {
		a := base[0]
		a.ID, a.Title, a.Category, a.GTIN, a.Keywords = id, title, category, "", nil
		return a
	}
	base = append(base, like("cat-1", "Acme Zeltplane", "Outdoor > Zeltplane"), like("untyped-1", "Nordwand Zeltplane - 3x4 m", ""))
	prev, err := match.Build(base)
	if err != nil {
		t.Fatal(err)
	}
	fresh := append(slices.Clone(base), like("untyped-2", "Bergfex Zeltplane (grün)", ""))
	gone := slices.DeleteFunc(slices.Clone(base), func(a match.Ad) bool { return a.ID == "cat-1" })
	for name, ads := range map[string][]match.Ad{"new ad typed by a kept one": fresh, "the type's category gone": gone} {
		t.Run(name, func(t *testing.T) { rebuildIsBuild(t, prev, base, ads) })
	}
}

// rebuildIsBuild fails t unless Rebuild of ads beside prev, made of
// prevAds, encodes as Build of ads does, told prevAds or not, and returns
// it.
func rebuildIsBuild(t *testing.T, prev *match.Index, prevAds, ads []match.Ad) *match.Index {
	t.Helper()
	want, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	got, err := match.Rebuild(prev, ads)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Encode(), want.Encode()) {
		t.Fatalf("Rebuild of %d ads differs from Build", len(ads))
	}
	beside, err := match.RebuildBeside(prev, func(j int) *match.Ad { return &prevAds[j] }, ads)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(beside.Encode(), want.Encode()) {
		t.Fatalf("Rebuild of %d ads told the ads before differs from Build", len(ads))
	}
	return got
}

// TestBuildReservesPostings: Build sizes a large catalog's postings by its
// first ads (reserve), which must change no byte of the index: rebuilt
// from the index of its first ads, with no part large enough to be sized,
// the catalog is the same index byte for byte.
func TestBuildReservesPostings(t *testing.T) {
	ads := testcatalog.Generate(2*match.ReserveAfter+100, 3)
	full, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	// A quarter fresh: Rebuild's most before it builds anew.
	first, err := match.Build(ads[:len(ads)*3/4+10])
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := match.Rebuild(first, ads)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := full.Encode(), rebuilt.Encode(); !bytes.Equal(a, b) {
		t.Errorf("Build of %d ads: %d bytes, unlike the same rebuilt (%d bytes)", len(ads), len(a), len(b))
	}
}
