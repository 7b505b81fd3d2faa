package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// unbilledSums is the SQL of the sums of unbilled's counts, an array in
// the order of clicks.Reasons: those of reasons a newer server added are
// left out.
var unbilledSums = func() string {
	sums := make([]string, len(clicks.Reasons))
	for i := range sums {
		sums[i] = "coalesce(sum(unbilled[" + strconv.Itoa(i+1) + "]), 0)::bigint"
	}
	return "ARRAY[" + strings.Join(sums, ", ") + "]"
}()

// siteColumns are the columns sumSitesSQL reads.
const siteColumns = `api_key, site_id, context, currency, impressions, clicks, billable, spend_micros, unbilled`

// sumSitesSQL sums, by partner's site, context and currency, the DaySite
// rows of the days [$2, $3) and the Hour rows of the hours [$5, $6) and
// [$7, $8): a row per group, whatever the advertisers, shards and periods
// under it. Each part is a range of the primary key.
var sumSitesSQL = `SELECT api_key, site_id, context, currency,
		sum(impressions)::bigint, sum(clicks)::bigint, sum(billable)::bigint, sum(spend_micros)::bigint, ` + unbilledSums + `
	FROM (
		SELECT ` + siteColumns + ` FROM rollups WHERE grain = $1 AND period >= $2 AND period < $3
		UNION ALL
		SELECT ` + siteColumns + ` FROM rollups WHERE grain = $4 AND period >= $5 AND period < $6
		UNION ALL
		SELECT ` + siteColumns + ` FROM rollups WHERE grain = $4 AND period >= $7 AND period < $8
	) r
	WHERE api_key <> '' AND site_id <> ''
	GROUP BY api_key, site_id, context, currency`

// SumSites implements clicks.RollupReader: Postgres sums the range's
// rows by site, so that a review of 92 days sends a row per site,
// context and currency, not one per advertiser, shard and day.
func (r Rollups) SumSites(ctx context.Context, from, to time.Time, fn func(*clicks.Rollup) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	days, daysEnd := clicks.WholeDays(from, to)
	hour := func(t time.Time) int64 { return ceilDiv(t.Unix(), 3600) }
	day := func(t time.Time) int64 { return ceilDiv(t.Unix(), 86400) }
	row := clicks.Rollup{Start: from}
	var sums []int64
	var byFn bool
	err := r.db.query(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&row.APIKey, &row.SiteID, &row.Context, &row.Currency,
			&row.Impressions, &row.Clicks, &row.Billable, &row.SpendMicros, &sums); err != nil {
			return err
		}
		copy(row.Unbilled[:], sums)
		err := fn(&row)
		if err == nil {
			err = ctx.Err()
		}
		byFn = err != nil
		return err
	}, sumSitesSQL, int16(clicks.DaySite), day(days), day(daysEnd), int16(clicks.Hour), hour(from), hour(days), hour(daysEnd), hour(to))
	switch {
	case err != nil && byFn:
		return err
	case err != nil:
		return fmt.Errorf("postgres: sum sites: %w", err)
	}
	return nil
}
