//go:build !wasip1

package match_test

import (
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// Every criterion a page's match names, on the index the server would
// pick for it, is its ad's criterion in the whole catalog's index; and so
// is every criterion of a strong search match. A criterion with words
// the ad has no criterion of, before or after it, or with a keyword
// repeated, is not.
func TestIsCriterionOf(t *testing.T) {
	demo, err := catalog.Demo(catalog.Options{BaseURL: "http://localhost"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cat := range []struct {
		name string
		ads  []match.Ad
	}{
		{"demo", demo},
		{"generated", testcatalog.Generate(3000, 7)},
	} {
		t.Run(cat.name, func(t *testing.T) {
			set, err := market.Build(cat.ads)
			if err != nil {
				t.Fatal(err)
			}
			all := set.All()
			hits := 0
			check := func(loc, lang string, q *match.Query) {
				ix := set.For(loc, lang)
				if ix == nil {
					ix = all
				}
				for _, h := range ix.Match(q) {
					ad := ix.Ad(h.Ad)
					at, ok := all.Lookup(ad.ID)
					if !ok {
						t.Fatalf("%s is in a market's index and not in the whole catalog's", ad.ID)
					}
					hits++
					if !all.IsCriterionOf(at, h.Criterion) {
						t.Errorf("%q (keywords %q), matched for %s, is not its criterion", h.Criterion, h.Keywords, ad.ID)
					}
					for _, bad := range []string{h.Criterion + " zzzqx", "zzzqx " + h.Criterion, "zzzqx", "", " ",
						h.Criterion + " " + h.Criterion[:len(h.Criterion)/2] + "zz", h.Keywords[0] + " " + strings.ToUpper(h.Keywords[0])} {
						if all.IsCriterionOf(at, bad) {
							t.Errorf("%q is %s's criterion, want not", bad, ad.ID)
						}
					}
				}
			}
			for _, r := range testcatalog.Requests(cat.ads, 200, 2, true) {
				q := match.Query{Page: true, Title: r.Title, Text: r.Q, Country: r.Loc, Lang: r.Lang, Size: r.Size}
				check(r.Loc, r.Lang, &q)
			}
			for _, r := range testcatalog.Requests(cat.ads, 300, 1, false) {
				if r.Dist != "" || r.Op != "" {
					continue // only a strong match names one of the ad's criteria
				}
				q := match.Query{Text: strings.TrimSpace(r.Q), Country: r.Loc, Lang: r.Lang, Size: match.DefaultSize, DistinctAdvertiser: match.DefaultDistinctAdvertiser}
				check(r.Loc, r.Lang, &q)
			}
			if hits < 100 {
				t.Fatalf("%d hits checked, want at least 100", hits)
			}
		})
	}
}

// FuzzIsCriterionOf: whatever the text, IsCriterionOf answers, the same
// for the same text; and a text it takes stops being the ad's with a word
// no criterion has after it.
func FuzzIsCriterionOf(f *testing.F) {
	ads, err := catalog.Demo(catalog.Options{BaseURL: "http://localhost"})
	if err != nil {
		f.Fatal(err)
	}
	set, err := market.Build(ads)
	if err != nil {
		f.Fatal(err)
	}
	all := set.All()
	for _, s := range []string{"handy", "Apple iPhone 5", "lg handy", "iPhone-5 iPhone 5", "x\u00adx", "\xff", ""} {
		f.Add(0, s)
		f.Add(3, s)
	}
	f.Fuzz(func(t *testing.T, i int, text string) {
		got := all.IsCriterionOf(i, text)
		if again := all.IsCriterionOf(i, text); again != got {
			t.Fatalf("%d %q: %v, then %v", i, text, got, again)
		}
		if got && all.IsCriterionOf(i, text+" zzzqx") {
			t.Fatalf("%d %q with an unknown word after it is still the ad's", i, text)
		}
	})
}
