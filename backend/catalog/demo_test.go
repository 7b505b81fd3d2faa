package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/match"
)

func loadDemo(t *testing.T) []match.Ad {
	t.Helper()
	ads, err := Demo(Options{BaseURL: "http://localhost:8080"})
	if err != nil {
		t.Fatalf("demo catalog: %v", err)
	}
	return ads
}

func find(ads []match.Ad, id string) *match.Ad {
	for i := range ads {
		if ads[i].ID == id {
			return &ads[i]
		}
	}
	return nil
}

func TestDemoCounts(t *testing.T) {
	ads := loadDemo(t)
	kinds := map[match.Kind]int{}
	markets := map[string]int{}
	advertisers := map[string]bool{}
	var noPrice, noLogo, umlauts int
	for _, a := range ads {
		kinds[a.Kind]++
		advertisers[a.Advertiser] = true
		for _, m := range a.Markets {
			markets[m.String()]++
		}
		if a.Kind == match.KindProduct {
			if a.PriceCents == 0 {
				noPrice++
			}
			if a.Logo == "" {
				noLogo++
			}
			if a.GTIN != "" && !ValidGTIN(a.GTIN) {
				t.Errorf("%s: GTIN %s has a wrong check digit", a.ID, a.GTIN)
			}
			if a.Manufacturer == "" || a.Model == "" || a.Category == "" || len(a.Keywords) == 0 {
				t.Errorf("%s: a product needs manufacturer, model, category and keywords", a.ID)
			}
		}
		if strings.ContainsAny(a.Title+strings.Join(a.Keywords, " "), "äöüßÄÖÜ") {
			umlauts++
		}
	}
	t.Logf("demo: %d advertisers, %d products, %d coupons, %d advertiser domains, markets %v",
		kinds[match.KindAdvertiser], kinds[match.KindProduct], kinds[match.KindCoupon], len(advertisers), markets)
	if kinds[match.KindAdvertiser] < 60 || kinds[match.KindProduct] < 250 || kinds[match.KindCoupon] < 30 {
		t.Errorf("kinds %v: want 60+ advertisers, 250+ products, 30+ coupons", kinds)
	}
	for _, m := range []string{"de-DE", "en-US", "en-GB"} {
		if markets[m] < 100 {
			t.Errorf("market %s has %d ads", m, markets[m])
		}
	}
	if noPrice == 0 || noLogo == 0 {
		t.Errorf("products without price: %d, without logo: %d; want some of each", noPrice, noLogo)
	}
	if umlauts < 50 {
		t.Errorf("only %d ads with umlauts or ß", umlauts)
	}
	for _, kw := range []string{"handy", "kühlschrank", "kopfhörer", "fußball", "headphones", "laptop", "fridge freezer"} {
		if !slices.ContainsFunc(ads, func(a match.Ad) bool { return slices.Contains(a.Keywords, kw) || strings.EqualFold(a.Category, kw) }) {
			t.Errorf("no ad known by %q", kw)
		}
	}
}

func TestDemoSharedGTINs(t *testing.T) {
	ads := loadDemo(t)
	byGTIN := map[string]map[string]bool{}
	for _, a := range ads {
		if a.GTIN == "" {
			continue
		}
		if byGTIN[a.GTIN] == nil {
			byGTIN[a.GTIN] = map[string]bool{}
		}
		byGTIN[a.GTIN][a.Advertiser] = true
	}
	shared := map[int]int{}
	for _, advs := range byGTIN {
		shared[len(advs)]++
	}
	if shared[2]+shared[3]+shared[4]+shared[5] < 40 || shared[4]+shared[5] == 0 {
		t.Errorf("GTINs by number of advertisers: %v; want many offered by 2-5", shared)
	}
}

func TestDemoSeedExamples(t *testing.T) {
	ads := loadDemo(t)
	de := match.Market{Country: "de", Lang: "de"}

	a := find(ads, "handy-bestkauf.de")
	if a == nil || a.Kind != match.KindAdvertiser || a.Title != "handy-bestkauf.de - gebrauchte Handys verkaufen" ||
		!slices.Contains(a.Keywords, "lg handy") || !slices.Equal(a.Markets, []match.Market{de}) ||
		!strings.HasPrefix(a.Landing, "https://handy-bestkauf.de/") {
		t.Errorf("handy-bestkauf.de: %+v", a)
	}

	a = find(ads, "AMAZON.1.B00JVL2X1I")
	if a == nil || a.Kind != match.KindProduct || a.Manufacturer != "Nokia" || a.Model != "Lumia 630" ||
		a.Category != "Handy" || !slices.Contains(a.Keywords, "handy") || !slices.Equal(a.Markets, []match.Market{de}) ||
		a.Advertiser != "amazon.de" || a.Logo == "" || !strings.Contains(a.Title, "Lumia 630") {
		t.Errorf("AMAZON.1.B00JVL2X1I: %+v", a)
	}
	if a != nil && a.Logo != "http://localhost:8080/demo/logos/nokia.svg?dim={dim}" {
		t.Errorf("Lumia logo %q is not made absolute against the base URL", a.Logo)
	}

	a = find(ads, "EBAY.4.291181826279")
	if a == nil || a.Kind != match.KindProduct || a.Manufacturer != "Apple" || a.Model != "iPhone 5" || a.Logo == "" ||
		len(a.Markets) != 3 {
		t.Errorf("EBAY.4.291181826279: %+v", a)
	}
	for _, m := range []string{"de-DE", "en-US", "en-GB"} {
		mk, _ := match.ParseMarket(m)
		if a != nil && !slices.Contains(a.Markets, mk) {
			t.Errorf("EBAY.4.291181826279 not in %s", m)
		}
	}
	for _, b := range ads {
		if b.Model == "iPhone 5" && b.ID != "EBAY.4.291181826279" {
			t.Errorf("%s also has model iPhone 5", b.ID)
		}
	}
}

func TestDemoLogosExist(t *testing.T) {
	ads, err := Demo(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "web", "demo", "logos")
	seen := map[string]bool{}
	for _, a := range ads {
		if a.Logo == "" || seen[a.Logo] {
			continue
		}
		seen[a.Logo] = true
		name, ok := strings.CutPrefix(a.Logo, "/demo/logos/")
		name, _, _ = strings.Cut(name, "?")
		if !ok || !strings.HasSuffix(a.Logo, "?dim={dim}") {
			t.Errorf("%s: logo %q is not a demo logo", a.ID, a.Logo)
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", a.ID, err)
		} else if fi.Size() > 1024 {
			t.Errorf("%s is %d bytes, want under 1 KB", name, fi.Size())
		}
	}
}

func TestDemoBuildsAndMatches(t *testing.T) {
	ads := loadDemo(t)
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != len(ads) {
		t.Fatalf("index holds %d ads, want %d", ix.Len(), len(ads))
	}
	has := func(hits []match.Hit, id string) bool {
		return slices.ContainsFunc(hits, func(h match.Hit) bool { return ix.Ad(h.Ad).ID == id })
	}
	hits := ix.Match(&match.Query{Text: "lg handy", Country: "de", Lang: "de", Size: match.MaxSize})
	if !has(hits, "handy-bestkauf.de") || !has(hits, "AMAZON.1.B00JVL2X1I") {
		t.Errorf("q=lg handy (de) misses handy-bestkauf.de or AMAZON.1.B00JVL2X1I")
	}
	page := "Review: the Apple iPhone 5 a decade on. We took the iPhone 5 out again to see how it holds up."
	hits = ix.Match(&match.Query{Text: page, Title: "Apple iPhone 5 review", Page: true, Country: "us", Size: match.MaxSize,
		Kinds: match.Kinds(0).Add(match.KindProduct)})
	if !has(hits, "EBAY.4.291181826279") {
		t.Errorf("an iPhone 5 review page misses EBAY.4.291181826279")
	}
}
