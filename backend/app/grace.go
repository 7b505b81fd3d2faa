package app

import (
	"log/slog"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/match"
)

// Grace bounds: a refresh that changes the criteria of more ads than
// graceMaxShare of the catalog, or than graceMaxAds, keeps none of them
// (criteriaBefore), as indexing them would cost it a second build and a
// second index held for the grace. Pages that matched on the catalog
// before it then make links whose old criteria get no click token.
const (
	graceMaxShare = 0.10
	graceMaxAds   = 50_000
)

// criteriaBefore is what a swap from the ads before to the ads now, whose
// index is all, keeps of the catalog before for the links pages made on
// its shards: the ads still served whose criteria changed, as they were,
// indexed, until `until`. Ads whose criteria stayed are not kept: the
// catalog now has them as they were. nil when no ad's criteria changed,
// when more changed than the grace bounds allow (logged to log at warn),
// or the ads before will not index.
func criteriaBefore(before, now []match.Ad, all *match.Index, until time.Time, log *slog.Logger) *api.Before {
	var changed []match.Ad
	at := 0
	for i := range before {
		b := &before[i]
		k := at
		if k >= len(now) || now[k].ID != b.ID {
			var kept bool
			if k, kept = all.Lookup(b.ID); !kept {
				continue // removed: no link of it gets a token
			}
		}
		at = k + 1 // the index's ordinals are the ads' positions
		if !match.SameCriteria(b, &now[k]) {
			changed = append(changed, *b)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if limit := min(graceMaxAds, int(graceMaxShare*float64(len(now)))); len(changed) > limit {
		if log != nil {
			log.Warn("catalog refresh changed too many ads' criteria to keep the old ones: links pages make on the shards before it get no click token for their old criteria",
				"changed", len(changed), "ads", len(now), "limit", limit)
		}
		return nil
	}
	ix, err := match.Build(changed)
	if err != nil {
		return nil // they indexed before; a swap does not fail for a grace
	}
	return &api.Before{Index: ix, Until: until}
}
