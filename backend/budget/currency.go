package budget

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// CheckCurrencies refuses a catalog in which an advertiser with a daily
// budget has an ad that bids in another currency than the budget's, in
// any market it runs in (catalog.BidCurrency), or in none adlink knows. A
// budget holds one currency and there is no rate to convert another at:
// the ledger bills no such click (clicks.Use.Currency), so a catalog that
// has them would show ads whose clicks never bill. Each ad is named once,
// with the first market at fault; at most catalog.MaxErrors are.
func CheckCurrencies(ads []match.Ad, budgets map[string]accounts.Budget) error {
	if len(budgets) == 0 {
		return nil
	}
	var problems []error
	n := 0
	for i := range ads {
		a := &ads[i]
		b, ok := budgets[strings.ToLower(a.Advertiser)]
		if !ok {
			continue
		}
		for _, m := range a.Markets {
			cur := catalog.BidCurrency(a, m)
			if cur == b.Currency {
				continue
			}
			if n++; len(problems) < catalog.MaxErrors {
				bids := "bids in " + cur
				if cur == "" {
					bids = "bids in no currency adlink knows (give the ad a currency)"
				}
				problems = append(problems, fmt.Errorf("advertiser %q has a daily budget in %s, but its ad %q %s in the market %s",
					a.Advertiser, b.Currency, a.ID, bids, m))
			}
			break
		}
	}
	if n > len(problems) {
		problems = append(problems, fmt.Errorf("and %d more ads of budgeted advertisers in another currency", n-len(problems)))
	}
	return errors.Join(problems...)
}

// Adless returns the advertisers of budgets that no ad of ads has, sorted:
// one whose feed is not read yet, or a misspelt id, whose budget then
// holds the advertiser meant to nothing. Neither is an error, since a
// budget may come before its feed; the server logs them.
func Adless(ads []match.Ad, budgets map[string]accounts.Budget) []string {
	if len(budgets) == 0 {
		return nil
	}
	has := make(map[string]bool, len(budgets))
	for i := range ads {
		id := strings.ToLower(ads[i].Advertiser)
		if _, ok := budgets[id]; ok {
			has[id] = true
		}
	}
	var ids []string
	for id := range budgets {
		if !has[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
