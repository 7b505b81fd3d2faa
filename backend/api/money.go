package api

import (
	"strings"

	"github.com/adlink/adlink/match"
)

// euro are the countries whose currency is the euro.
var euro = map[string]bool{"at": true, "be": true, "cy": true, "de": true, "ee": true, "es": true, "fi": true,
	"fr": true, "gr": true, "hr": true, "ie": true, "it": true, "lt": true, "lu": true, "lv": true, "mt": true,
	"nl": true, "pt": true, "si": true, "sk": true}

// others are the currencies of the other countries adlink's markets serve.
var others = map[string]string{"us": "USD", "gb": "GBP", "ch": "CHF", "at": "EUR", "pl": "PLN", "cz": "CZK",
	"se": "SEK", "dk": "DKK", "no": "NOK", "ca": "CAD", "au": "AUD"}

// bidCurrency is the currency an ad's bid is in: its own, when it has a
// price; else that of its first market's country; "" when neither says.
func bidCurrency(ad *match.Ad) string {
	if ad.Currency != "" {
		return ad.Currency
	}
	for _, m := range ad.Markets {
		c := strings.ToLower(m.Country)
		if euro[c] {
			return "EUR"
		}
		if cur, ok := others[c]; ok {
			return cur
		}
	}
	return ""
}
