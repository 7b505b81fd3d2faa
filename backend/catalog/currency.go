package catalog

import (
	"strings"

	"github.com/adlink/adlink/match"
)

// euro are the countries whose currency is the euro.
var euro = map[string]bool{"at": true, "be": true, "cy": true, "de": true, "ee": true, "es": true, "fi": true,
	"fr": true, "gr": true, "hr": true, "ie": true, "it": true, "lt": true, "lu": true, "lv": true, "mt": true,
	"nl": true, "pt": true, "si": true, "sk": true}

// others are the currencies of the other countries adlink's markets serve.
var others = map[string]string{"us": "USD", "gb": "GBP", "ch": "CHF", "pl": "PLN", "cz": "CZK",
	"se": "SEK", "dk": "DKK", "no": "NOK", "ca": "CAD", "au": "AUD"}

// CountryCurrency is the currency of a country (ISO 3166 alpha-2, any
// case), or "" for one adlink knows none of.
func CountryCurrency(country string) string {
	c := strings.ToLower(country)
	if euro[c] {
		return "EUR"
	}
	return others[c]
}

// BidCurrency is the currency an ad's bid is in where it runs in market
// m: the ad's own currency when it has one, else that of m's country; ""
// when neither says.
func BidCurrency(a *match.Ad, m match.Market) string {
	if a.Currency != "" {
		return a.Currency
	}
	return CountryCurrency(m.Country)
}

// ClickCurrency is the currency a click on ad a records its bid in: the
// ad's own, else that of the first of its markets whose country has one
// adlink knows; "" when none says. A click does not say in which market
// its link was shown, so an ad without a currency whose markets use
// several bills every click in the first one's (the load refuses such an
// ad of an advertiser with a budget: budget.CheckCurrencies).
func ClickCurrency(a *match.Ad) string {
	if a.Currency != "" {
		return a.Currency
	}
	for _, m := range a.Markets {
		if cur := CountryCurrency(m.Country); cur != "" {
			return cur
		}
	}
	return ""
}
