package testcatalog

import (
	"reflect"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(5000, 42), Generate(5000, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same n and seed gave different catalogs")
	}
	if c := Generate(5000, 43); reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same catalog")
	}
	if got := Generate(1, 42); len(got) != 1 || got[0].ID == "" {
		t.Fatalf("Generate(1) = %+v", got)
	}
	if Generate(0, 1) != nil || Generate(-1, 1) != nil {
		t.Fatal("Generate with n <= 0 returned ads")
	}
}

func TestGenerateValid(t *testing.T) {
	const n = 20000
	ads := Generate(n, 1)
	if len(ads) != n {
		t.Fatalf("%d ads, want %d", len(ads), n)
	}
	if err := catalog.Validate(ads); err != nil {
		t.Fatal(err)
	}
	kinds := map[match.Kind]int{}
	markets := map[match.Market]int{}
	gtins := map[string]map[string]bool{}
	var descBytes, noPrice, noLogo int
	for _, a := range ads {
		kinds[a.Kind]++
		for _, m := range a.Markets {
			markets[m]++
		}
		if a.Kind != match.KindProduct {
			continue
		}
		descBytes += len(a.Description)
		if len(a.Description) < 40 || len(a.Description) > 140 {
			t.Errorf("%s: description of %d bytes: %q", a.ID, len(a.Description), a.Description)
		}
		if a.GTIN != "" {
			if !catalog.ValidGTIN(a.GTIN) {
				t.Errorf("%s: GTIN %q has a wrong check digit", a.ID, a.GTIN)
			}
			if gtins[a.GTIN] == nil {
				gtins[a.GTIN] = map[string]bool{}
			}
			gtins[a.GTIN][a.Advertiser] = true
		}
		if a.PriceCents == 0 {
			noPrice++
		} else if a.Currency == "" {
			t.Errorf("%s: price without currency", a.ID)
		}
		if a.Logo == "" {
			noLogo++
		}
		if a.Manufacturer == "" || a.Model == "" || a.Category == "" || len(a.Keywords) == 0 {
			t.Errorf("%s: missing criteria: %+v", a.ID, a)
		}
	}
	if kinds[match.KindAdvertiser] == 0 || kinds[match.KindCoupon] < n/60 || kinds[match.KindProduct] < n*9/10 {
		t.Errorf("kinds: %v", kinds)
	}
	if len(markets) < 6 {
		t.Errorf("only %d markets: %v", len(markets), markets)
	}
	shared := 0
	for _, advs := range gtins {
		if len(advs) > 1 {
			shared++
		}
	}
	if shared < n/100 {
		t.Errorf("only %d GTINs offered by several advertisers", shared)
	}
	if noPrice == 0 || noLogo == 0 {
		t.Errorf("every product has a price (%d without) or logo (%d without)", noPrice, noLogo)
	}
	if avg := descBytes / kinds[match.KindProduct]; avg < 60 || avg > 100 {
		t.Errorf("average description %d bytes, want 60-100", avg)
	}
}

func TestGenerateBuilds(t *testing.T) {
	ads := Generate(10000, 3)
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Len(); n != len(ads) {
		t.Errorf("index holds %d ads, want %d", n, len(ads))
	}
	// A generated product is found by its own category in its own market.
	a := ads[len(ads)-2]
	m := a.Markets[0]
	hits := ix.Match(&match.Query{Text: a.Manufacturer + " " + a.Model, Country: m.Country, Lang: m.Lang, Size: match.MaxSize})
	found := false
	for _, h := range hits {
		found = found || ix.Ad(h.Ad).ID == a.ID
	}
	if !found {
		t.Errorf("query %q in %s does not find %s", a.Manufacturer+" "+a.Model, m, a.ID)
	}
}

func BenchmarkGenerate1M(b *testing.B) {
	for b.Loop() {
		ads := Generate(1_000_000, 1)
		if len(ads) != 1_000_000 {
			b.Fatal(len(ads))
		}
	}
}
