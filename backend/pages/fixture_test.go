package pages

import (
	"testing"

	"github.com/adlink/adlink/match"
)

var (
	mDE = match.Market{Country: "de", Lang: "de"}
	mUS = match.Market{Country: "us", Lang: "en"}
	mGB = match.Market{Country: "gb", Lang: "en"}
)

// fixtureIndex is a small catalog with the seed's page example (the Apple
// iPhone 5 on eBay) and ads a gadget page must not pull in from its
// navigation, sidebar or footer.
func fixtureIndex(t testing.TB) *match.Index {
	t.Helper()
	ix, err := match.Build([]match.Ad{
		{ID: "EBAY.4.291181826279", Kind: match.KindProduct, Title: "Apple iPhone 5 16GB weiß",
			Manufacturer: "Apple", Model: "iPhone 5", Category: "Smartphone", PriceCents: 19900, Currency: "EUR",
			Logo: "https://img.example/iphone5-{dim}.png", Landing: "https://www.ebay.de/itm/291181826279",
			Advertiser: "ebay.de", Markets: []match.Market{mDE, mUS, mGB}, BidMicros: 250000},
		{ID: "AMAZON.1.B00JVL2X1I", Kind: match.KindProduct, Title: "Nokia Lumia 630 Smartphone 4,5 Zoll schwarz",
			Keywords: []string{"handy"}, Manufacturer: "Nokia", Model: "Lumia 630", Category: "Handy",
			PriceCents: 8999, Currency: "EUR", Logo: "https://img.example/nokia-{dim}.png",
			Landing: "https://www.amazon.de/dp/B00JVL2X1I", Advertiser: "amazon.de", Markets: []match.Market{mDE}, BidMicros: 300000},
		{ID: "BESTBUY.1.9", Kind: match.KindProduct, Title: "Sony WH-1000XM4 Wireless Noise Cancelling Headphones", Manufacturer: "Sony",
			Model: "WH-1000XM4", Category: "Headphones", PriceCents: 27999, Currency: "USD", Logo: "https://img.example/sony.png",
			Landing: "https://bestbuy.example/p/9", Advertiser: "bestbuy.example", Markets: []match.Market{mUS}, BidMicros: 400000},
		{ID: "batteries.example", Kind: match.KindAdvertiser, Title: "Batteries for every device", Keywords: []string{"aa batteries", "battery pack"},
			Landing: "https://batteries.example/", Advertiser: "batteries.example", Markets: []match.Market{mUS, mGB}, BidMicros: 150000},
		{ID: "tv-deals.example", Kind: match.KindAdvertiser, Title: "Samsung TV deals", Keywords: []string{"samsung tvs"},
			Landing: "https://tv-deals.example/", Advertiser: "tv-deals.example", Markets: []match.Market{mUS}, BidMicros: 150000},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}
