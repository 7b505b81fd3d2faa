package catalog

import (
	"context"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/match"
)

// RemovedAd is an ad a refresh removed from the catalog, as it was last
// served, until when the click links issued for it land, and its
// advertiser's daily budget when it was removed (none when DailyMicros
// is 0): a replica whose advertisers file no longer lists the advertiser
// bills the links' clicks under it.
type RemovedAd struct {
	Ad     match.Ad
	Until  time.Time
	Budget accounts.Budget
}

// Removals keep the removed ads of the replicas of one deployment, so
// that a replica that did not see an ad go (started after it, on a new
// machine, with an empty data directory) lands the links the others
// issued for it. Postgres implements it; storetest.Removals is its
// contract.
type Removals interface {
	// Share records ads and returns the removed ads recorded whose Until
	// is after now that this Removals has not returned yet: at its first
	// call, every one; after, those recorded or recorded again (by any
	// replica, this one included) since its last call that succeeded, so
	// that a swap reads what changed, not every removal. An ad already
	// recorded keeps the later Until of the two, with the ad that came
	// with it, so that replicas which each saw one removal may each
	// record it, at once or one after the other, in any order; of the
	// same Until, the one recorded last, as its advertiser's budget may
	// have changed since. The ads whose Until is not after now are
	// deleted. What Share recorded is durable when it returns; an error
	// records none of ads, returns nothing, and leaves what the next call
	// returns as it was.
	Share(ctx context.Context, ads []RemovedAd, now time.Time) ([]RemovedAd, error)
}

// SavedBudget is a removed ad's last budget as the removed ads' file and
// the shared removed ads keep it, in JSON.
type SavedBudget struct {
	DailyMicros int64           `json:"daily_micros"`
	Currency    string          `json:"currency"`
	Pacing      accounts.Pacing `json:"pacing,omitempty"`
	// Timezone is the zone of the budget's days; "" (or a budget kept
	// before budgets had zones) is UTC.
	Timezone string `json:"timezone,omitempty"`
}

// SaveBudget is b as it is kept: nil for none.
func SaveBudget(b accounts.Budget) *SavedBudget {
	if b.DailyMicros <= 0 {
		return nil
	}
	return &SavedBudget{DailyMicros: b.DailyMicros, Currency: b.Currency, Pacing: b.Pacing, Timezone: b.Zone}
}

// Budget is the budget s keeps: none for nil or a budget of no money.
func (s *SavedBudget) Budget() accounts.Budget {
	if s == nil || s.DailyMicros <= 0 {
		return accounts.Budget{}
	}
	return accounts.Budget{DailyMicros: s.DailyMicros, Currency: s.Currency, Pacing: s.Pacing, Zone: s.Timezone}
}
