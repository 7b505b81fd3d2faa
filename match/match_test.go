package match

import (
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
)

var (
	de = Market{Country: "de", Lang: "de"}
	us = Market{Country: "us", Lang: "en"}
	gb = Market{Country: "gb", Lang: "en"}
)

// fixture is a small catalog with the seed's documented examples.
func fixture() []Ad {
	return []Ad{
		{ID: "handy-bestkauf.de", Kind: KindAdvertiser, Title: "handy-bestkauf.de - gebrauchte Handys verkaufen",
			Keywords: []string{"lg handy", "handy verkaufen"}, Landing: "https://handy-bestkauf.de/", Advertiser: "handy-bestkauf.de",
			Markets: []Market{de}, BidMicros: 450000},
		{ID: "AMAZON.1.B00JVL2X1I", Kind: KindProduct, Title: "Nokia Lumia 630 Smartphone 4,5 Zoll schwarz",
			Keywords: []string{"handy", "smartphone"}, Manufacturer: "Nokia", Model: "Lumia 630", Category: "Handy",
			GTIN: "6438158655587", PriceCents: 8999, Currency: "EUR", Logo: "https://img.example/nokia-{dim}.png",
			Landing: "https://www.amazon.de/dp/B00JVL2X1I", Advertiser: "amazon.de", Markets: []Market{de}, BidMicros: 300000},
		{ID: "EBAY.4.291181826279", Kind: KindProduct, Title: "Apple iPhone 5 16GB weiß",
			Manufacturer: "Apple", Model: "iPhone 5", Category: "Smartphone", PriceCents: 19900, Currency: "EUR",
			Logo: "https://img.example/iphone5-{dim}.png", Landing: "https://www.ebay.de/itm/291181826279",
			Advertiser: "ebay.de", Markets: []Market{de, us, gb}, BidMicros: 250000},
		{ID: "OTTO.2.555", Kind: KindProduct, Title: "Nokia Lumia 630 Dual-SIM", Manufacturer: "Nokia", Model: "Lumia 630",
			Category: "Handy", GTIN: "6438158655587", PriceCents: 9499, Currency: "EUR", Landing: "https://www.otto.de/p/555",
			Advertiser: "otto.de", Markets: []Market{de}, BidMicros: 200000},
		{ID: "mueller-mode.de", Kind: KindAdvertiser, Title: "Müller Mode - Jacken und Mäntel", Keywords: []string{"müller jacken", "wintermantel"},
			Landing: "https://mueller-mode.de/", Advertiser: "mueller-mode.de", Markets: []Market{de}, BidMicros: 100000},
		{ID: "COUPON.1.7", Kind: KindCoupon, Title: "10% off wireless headphones", Keywords: []string{"headphones coupon", "wireless headphones"},
			Landing: "https://audio.example/coupon", Advertiser: "audio.example", Markets: []Market{us, gb}, BidMicros: 50000},
		{ID: "BESTBUY.1.9", Kind: KindProduct, Title: "Sony WH-1000XM4 Wireless Noise Cancelling Headphones", Manufacturer: "Sony",
			Model: "WH-1000XM4", Category: "Headphones", Description: "Industry-leading noise cancellation, 30 hour battery.",
			PriceCents: 27999, Currency: "USD", Logo: "https://img.example/sony.png", Landing: "https://bestbuy.example/p/9",
			Advertiser: "bestbuy.example", Markets: []Market{us}, BidMicros: 400000},
		{ID: "batteries.example", Kind: KindAdvertiser, Title: "Batteries for every device", Keywords: []string{"aa batteries", "battery pack"},
			Landing: "https://batteries.example/", Advertiser: "batteries.example", Markets: []Market{us, gb}, BidMicros: 150000},
	}
}

func mustBuild(t testing.TB, ads []Ad) *Index {
	t.Helper()
	ix, err := Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func ids(ix *Index, hits []Hit) []string {
	var s []string
	for _, h := range hits {
		s = append(s, ix.Ad(h.Ad).ID)
	}
	return s
}

func TestSeedSearchExample(t *testing.T) {
	ix := mustBuild(t, fixture())
	hits := ix.Match(&Query{Text: "lg handy", Country: "de"})
	got := string(ix.AppendResponse(nil, hits[:2], &LinkOptions{Context: ContextSearch, ClickBase: "http://r.example/v1/redirect?", ClickQuery: clickQuery(ContextSearch, "1", "2", "")}))
	want := `{"link":[` +
		`{"title":"handy-bestkauf.de - gebrauchte Handys verkaufen","keywords":["lg handy"],"ad":"http://r.example/v1/redirect?type=search\u0026adId=handy-bestkauf.de\u0026adType=advertiser\u0026api_key=1\u0026site_id=2\u0026criterionId=lg+handy","display_type":["link"]},` +
		`{"title":"Nokia Lumia 630 Smartphone 4,5 Zoll schwarz","keywords":["handy"],"ad":"http://r.example/v1/redirect?type=search\u0026adId=AMAZON.1.B00JVL2X1I\u0026adType=product\u0026api_key=1\u0026site_id=2\u0026criterionId=handy","display_type":["widget"]}` +
		`]}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var v struct {
		Link []struct{ Ad string }
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(v.Link[0].Ad)
	if err != nil || u.Query().Get("criterionId") != "lg handy" {
		t.Fatalf("ad URL %q does not decode: %v", v.Link[0].Ad, err)
	}
}

func TestSeedPageExample(t *testing.T) {
	ix := mustBuild(t, fixture())
	text := "Im Test: Das Apple iPhone 5 ist dünner als sein Vorgänger. Apple hat beim iPhone 5 vieles richtig gemacht."
	hits := ix.Match(&Query{Page: true, Title: "Testbericht", Text: text})
	if len(hits) == 0 || ix.Ad(hits[0].Ad).ID != "EBAY.4.291181826279" {
		t.Fatalf("hits %v", ids(ix, hits))
	}
	h := hits[0]
	if !slices.Equal(h.Keywords, []string{"Apple", "iPhone 5"}) || h.Criterion != "Apple iPhone 5" {
		t.Fatalf("keywords %q criterion %q", h.Keywords, h.Criterion)
	}
	js := string(ix.AppendLinks(nil, hits[:1], &LinkOptions{Context: ContextPage, ClickBase: "http://r/v1/redirect?", ClickQuery: clickQuery(ContextPage, "1", "2", "")}))
	for _, want := range []string{`criterionId=Apple+iPhone+5`, `type=intext`, `"display_type":["link","widget"]`} {
		if !strings.Contains(js, want) {
			t.Errorf("%s lacks %s", js, want)
		}
	}
}

// randomText makes page-like text from the catalog's words and noise.
func randomText(r *rand.Rand, words []string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString([]string{" ", " ", " ", ", ", ". ", "\n", "-"}[r.IntN(7)])
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}
