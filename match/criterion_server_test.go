//go:build !wasip1

package match_test

import (
	"slices"
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
	eachCatalog(t, func(t *testing.T, ads []match.Ad, set *market.Set) {
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
		for _, r := range testcatalog.Requests(ads, 200, 2, true) {
			q := match.Query{Page: true, Title: r.Title, Text: r.Q, Country: r.Loc, Lang: r.Lang, Size: r.Size}
			check(r.Loc, r.Lang, &q)
		}
		for _, r := range testcatalog.Requests(ads, 300, 1, false) {
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

// Every criterion a looser search match (ctx.dist=low or none) names has
// all its words in its ad's text, as the impression beacon checks a
// page-made link of one; a word the ad's text lacks, after it, or no
// word, has not. A criterion of the ad's has all its words in its text.
func TestHasWords(t *testing.T) {
	eachCatalog(t, func(t *testing.T, ads []match.Ad, set *market.Set) {
		all := set.All()
		hits, loose := 0, 0
		for _, r := range testcatalog.Requests(ads, 300, 1, false) {
			for _, dist := range []match.Dist{match.DistHigh, match.DistLow, match.DistNone} {
				q := match.Query{Text: strings.TrimSpace(r.Q), Country: r.Loc, Lang: r.Lang, Dist: dist,
					Size: match.DefaultSize, DistinctAdvertiser: match.DefaultDistinctAdvertiser}
				ix := set.For(r.Loc, r.Lang)
				if ix == nil {
					ix = all
				}
				for _, h := range ix.Match(&q) {
					at, ok := all.Lookup(ix.Ad(h.Ad).ID)
					if !ok {
						t.Fatalf("%s is in a market's index and not in the whole catalog's", ix.Ad(h.Ad).ID)
					}
					hits++
					if !all.IsCriterionOf(at, h.Criterion) {
						loose++
					}
					if !all.HasWords(at, h.Criterion) {
						t.Errorf("%q (dist %d), matched for %s, has a word its text has not", h.Criterion, dist, ix.Ad(h.Ad).ID)
					}
					for _, bad := range []string{h.Criterion + " zzzqx", "zzzqx", "", " "} {
						if all.HasWords(at, bad) {
							t.Errorf("%q has all its words in %s's text, want not", bad, ix.Ad(h.Ad).ID)
						}
					}
				}
			}
		}
		if hits < 100 || loose == 0 {
			t.Fatalf("%d hits checked, %d not a criterion of their ad; want at least 100, and some", hits, loose)
		}
		t.Logf("%d hits, %d named no criterion of their ad", hits, loose)
	})
}

// eachCatalog runs f on the demo catalog and on a generated one, each
// built into its markets' indexes, in subtests named for them.
func eachCatalog(t *testing.T, f func(t *testing.T, ads []match.Ad, set *market.Set)) {
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
			f(t, cat.ads, set)
		})
	}
}

// FuzzIsCriterionOf: whatever the text, IsCriterionOf answers, the same
// for the same text; a text it takes stops being the ad's with a word no
// criterion has after it; and exactly a text it takes has a canonical
// spelling, which is its own.
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
	for _, s := range []string{"handy", "Apple iPhone 5", "lg handy", "iPhone-5 iPhone 5", "x\u00adx", "\xff", "",
		"HANDY--Hülle handyhülle", "apple iphone 5", "Handyhüllen  Apple"} {
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
		if all.HasWords(i, text+" zzzqx") {
			t.Fatalf("%d %q with an unknown word after it has all its words in the ad's text", i, text)
		}
		c := all.CanonicalCriterion(i, text)
		if (c == "") == got {
			t.Fatalf("%d %q: the ad's criterion %v, canonically %q", i, text, got, c)
		}
		if again := all.CanonicalCriterion(i, c); again != c {
			t.Fatalf("%d %q is %q, whose own canonical spelling is %q", i, text, c, again)
		}
	})
}

// Every spelling of an ad's criteria, whatever its case, punctuation,
// spaces, soft hyphens and word forms, their order, and with a criterion
// spelled twice, is one canonical criterion, the one of them the ad lists
// first as the ad's own field writes it, which is its own; a text with a
// criterion of another ad, or none, has none.
func TestCanonicalCriterion(t *testing.T) {
	ads := []match.Ad{
		{ID: "s1", Kind: match.KindProduct, Title: "Samsung Galaxy S24", Manufacturer: "Samsung", Model: "Galaxy S24",
			Category: "Handys", Keywords: []string{"Samsung  Galaxy", "Handyhülle", "canvases"}, Landing: "https://shop.example/s1"},
		{ID: "x1", Kind: match.KindProduct, Title: "Sony Xperia", Manufacturer: "Sony", Model: "Xperia",
			Category: "Kameras", Keywords: []string{"Sony Xperia"}, Landing: "https://shop.example/x1"},
	}
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	for want, spellings := range map[string][]string{
		"Samsung Galaxy": {"Samsung Galaxy", "samsung galaxy", "SAMSUNG--galaxy", "samsung ... galaxy", "  Samsung   Galaxy ",
			"Sam\u00adsung Gal\u00adaxy", "samsung\tgalaxy", "Samsung Galaxy samsung-galaxy", "Samsung-Galaxy SAMSUNG GALAXY",
			"Samsung Galaxy Handyhülle", "samsung-galaxy, HANDYHÜLLE", "Samsung Galaxy Handy\u00adhülle samsung-galaxy",
			"Handyhüllen Samsung Galaxy", "handyhulle samsung galaxy", "Handys Handyhülle Galaxy S24 Samsung Galaxy canvases",
			"Samsung Galaxy S24 Handys"},
		"Handyhülle": {"Handyhülle", "handyhüllen", "Handys Handyhülle", "Galaxy S24 Handyhülle samsung", "canvases HANDYHÜLLE"},
		"canvases":   {"canvases", "Canvases", "CANVASES", "Handys canvases", "Handys Galaxy S24 canvases"},
		"Galaxy S24": {"Galaxy S24", "Galaxy S24 Handys", "galaxy-s24 handy", "handys galaxy s24"},
		"Samsung":    {"samsung", "SAMSUNG", "Handys Samsung", "samsung handys"},
		"Handys":     {"Handys", "handy"},
	} {
		for _, s := range spellings {
			if got := ix.CanonicalCriterion(0, s); got != want {
				t.Errorf("%q is %q, want %q", s, got, want)
			}
			if !ix.IsCriterionOf(0, s) {
				t.Errorf("%q is not the ad's criterion, want it", s)
			}
		}
		if got := ix.CanonicalCriterion(0, want); got != want {
			t.Errorf("%q, canonical, is %q", want, got)
		}
	}
	for _, s := range []string{"", " ", "Sony Xperia", "Samsung Galaxy Sony", "Samsung Galaxy zzzqx", "canva", "canvas",
		"samsung galaxy samsung galaxy", "Samsung Galaxy SAMSUNG GALAXY"} {
		if got := ix.CanonicalCriterion(0, s); got != "" {
			t.Errorf("%q is %q, want none", s, got)
		}
	}
	for _, i := range []int{-1, 2} {
		if got := ix.CanonicalCriterion(i, "Samsung Galaxy"); got != "" {
			t.Errorf("ad %d: %q, want none", i, got)
		}
	}
	if got := ix.CanonicalCriterion(1, "SONY xperia"); got != "Sony Xperia" {
		t.Errorf("the other ad's criterion is %q, want %q", got, "Sony Xperia")
	}
}

// SameCriteria tells a change of what an ad's criteria are drawn from
// (its keywords but bare numbers, model, brand and category, by its kind),
// or of how it orders or spells them, from a change of anything else; and where it says the criteria are the
// same, the index of the changed ad judges each of the phrases of both
// as the index of the ad before does.
func TestSameCriteria(t *testing.T) {
	for _, mut := range []struct {
		name    string
		change  func(a *match.Ad)
		changed bool
	}{
		{"title", func(a *match.Ad) { a.Title += " Neu" }, false},
		{"description", func(a *match.Ad) { a.Description = "ganz anders beschrieben" }, false},
		{"price and bid", func(a *match.Ad) { a.PriceCents += 100; a.BidMicros += 1000 }, false},
		{"landing", func(a *match.Ad) { a.Landing += "?neu=1" }, false},
		{"the spaces of the keywords and brand", func(a *match.Ad) {
			a.Keywords = slices.Clone(a.Keywords)
			for i, k := range a.Keywords {
				a.Keywords[i] = "  " + strings.ReplaceAll(k, " ", "   ")
			}
			a.Manufacturer += " "
		}, false},
		// A link records its criterion as the ad spells it, and the one it
		// lists first of those it names.
		{"the case of the brand", func(a *match.Ad) {
			if u := strings.ToUpper(a.Manufacturer); u != a.Manufacturer {
				a.Manufacturer = u
			} else {
				a.Manufacturer = strings.ToLower(u)
			}
		}, true},
		{"the order of the keywords", func(a *match.Ad) { a.Keywords = append(slices.Clone(a.Keywords[1:]), a.Keywords[0]) }, true},
		{"a bare-number keyword", func(a *match.Ad) { a.Keywords = append(slices.Clone(a.Keywords), "12345") }, false},
		{"a keyword", func(a *match.Ad) { a.Keywords = append(slices.Clone(a.Keywords), "grünkohlpresse") }, true},
		{"the model", func(a *match.Ad) { a.Model = "zx900 turbo" }, true},
		{"the brand", func(a *match.Ad) { a.Manufacturer = "Grünwerk" }, true},
		{"the category", func(a *match.Ad) { a.Category = "Küche > Pressen" }, true},
		{"an advertiser's ad", func(a *match.Ad) { a.Kind = match.KindAdvertiser }, true},
	} {
		t.Run(mut.name, func(t *testing.T) {
			n := 0
			for _, a := range testcatalog.Generate(60, 11) {
				if a.Kind == match.KindAdvertiser || a.Manufacturer == "" || a.Category == "" {
					continue // each change below changes such an ad's criteria
				}
				n++
				b := a
				mut.change(&b)
				if got := !match.SameCriteria(&a, &b); got != mut.changed {
					t.Fatalf("%s: criteria changed %v, want %v (%v against %v)", a.ID, got, mut.changed, match.CriteriaOf(&a), match.CriteriaOf(&b))
				}
				if mut.changed {
					continue
				}
				ixA, errA := match.Build([]match.Ad{a})
				ixB, errB := match.Build([]match.Ad{b})
				if errA != nil || errB != nil {
					t.Fatal(errA, errB)
				}
				for _, c := range append([]string{a.Model, a.Manufacturer, a.Category, b.Model, b.Manufacturer, b.Category},
					slices.Concat(a.Keywords, b.Keywords)...) {
					if before, after := ixA.IsCriterionOf(0, c), ixB.IsCriterionOf(0, c); before != after {
						t.Errorf("%s: %q is a criterion before %v and after %v", a.ID, c, before, after)
					}
				}
			}
			if n < 10 {
				t.Fatalf("%d generated ads with a brand and a category, want 10 or more", n)
			}
		})
	}
}
