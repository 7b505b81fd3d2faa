package catalog

import (
	"context"
	"time"

	"github.com/adlink/adlink/match"
)

// RemovedAd is an ad a refresh removed from the catalog, as it was last
// served, and until when the click links issued for it land.
type RemovedAd struct {
	Ad    match.Ad
	Until time.Time
}

// Removals keep the removed ads of the replicas of one deployment, so
// that a replica that did not see an ad go (started after it, on a new
// machine, with an empty data directory) lands the links the others
// issued for it. Postgres implements it; storetest.Removals is its
// contract.
type Removals interface {
	// Share records ads and returns every removed ad recorded whose Until
	// is after now. An ad already recorded keeps the later Until of the
	// two, with the ad that came with it, so that replicas which each saw
	// one removal may each record it, at once or one after the other, in
	// any order. The ads whose Until is not after now are deleted. What
	// Share recorded is durable when it returns; an error records none
	// of ads and returns nothing.
	Share(ctx context.Context, ads []RemovedAd, now time.Time) ([]RemovedAd, error)
}
