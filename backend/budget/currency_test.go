package budget

import (
	"strconv"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// TestCheckCurrencies: a budgeted advertiser's ads must bid in its
// budget's currency in every market they run in; the error names the
// advertiser, the ad, the market and both currencies.
func TestCheckCurrencies(t *testing.T) {
	de, gb, us, xx := match.Market{Country: "de", Lang: "de"}, match.Market{Country: "gb", Lang: "en"},
		match.Market{Country: "us", Lang: "en"}, match.Market{Country: "xx", Lang: "en"}
	ad := func(id, advertiser, currency string, ms ...match.Market) match.Ad {
		return match.Ad{ID: id, Advertiser: advertiser, Currency: currency, Markets: ms, BidMicros: 100_000}
	}
	budgets := map[string]accounts.Budget{"shop.example": {DailyMicros: 5_000_000, Currency: "EUR"}}
	for _, tt := range []struct {
		name string
		ads  []match.Ad
		want []string // "" is no error
	}{
		{"the market's currency", []match.Ad{ad("A", "shop.example", "", de)}, nil},
		{"the ad's own currency", []match.Ad{ad("A", "shop.example", "EUR", de, gb, us)}, nil},
		{"another advertiser's GBP", []match.Ad{ad("A", "shop.example", "", de), ad("B", "other.example", "", gb)}, nil},
		{"a GBP market", []match.Ad{ad("A", "shop.example", "", de), ad("B", "shop.example", "", gb)},
			[]string{`advertiser "shop.example" has a daily budget in EUR, but its ad "B" bids in GBP in the market en-GB`}},
		{"a second market in GBP", []match.Ad{ad("A", "shop.example", "", de, gb)},
			[]string{`its ad "A" bids in GBP in the market en-GB`}},
		{"the ad's own USD", []match.Ad{ad("A", "shop.example", "USD", de)},
			[]string{`its ad "A" bids in USD in the market de-DE`}},
		{"a country of no known currency", []match.Ad{ad("A", "shop.example", "", xx)},
			[]string{`its ad "A" bids in no currency adlink knows (give the ad a currency) in the market en-XX`}},
		{"an upper-case advertiser", []match.Ad{ad("A", "Shop.Example", "", gb)}, []string{`"Shop.Example"`, `GBP`}},
	} {
		err := CheckCurrencies(tt.ads, budgets)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != nil && err == nil:
			t.Errorf("%s: accepted", tt.name)
		}
		for _, w := range tt.want {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, err, w)
			}
		}
	}

	var many []match.Ad
	for i := range catalog.MaxErrors + 7 {
		many = append(many, ad("G"+strconv.Itoa(i), "shop.example", "GBP", de))
	}
	err := CheckCurrencies(many, budgets)
	if err == nil || strings.Count(err.Error(), "\n") != catalog.MaxErrors || !strings.HasSuffix(err.Error(), "and 7 more ads of budgeted advertisers in another currency") {
		t.Errorf("%d bad ads: %v", len(many), err)
	}
	if err := CheckCurrencies(many, nil); err != nil {
		t.Errorf("no budgets: %v", err)
	}
}

// The demo catalog runs with the demo's budgets.
func TestDemoCurrencies(t *testing.T) {
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	book, err := accounts.New(nil, accounts.Demo())
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCurrencies(ads, book.Budgets()); err != nil {
		t.Error(err)
	}
}
