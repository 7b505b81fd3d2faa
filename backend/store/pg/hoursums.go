package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// rollupDims are the rollups table's columns of clicks' dimensions, in
// the order of clicks.Dimension.
var rollupDims = [...]string{clicks.DimAPIKey: "api_key", clicks.DimSiteID: "site_id", clicks.DimAdvertiser: "advertiser",
	clicks.DimAdID: "ad_id", clicks.DimContext: "context", clicks.DimCurrency: "currency", clicks.DimCriterion: "criterion",
	clicks.DimYkTag: "yk_tag", clicks.DimCountry: "country"}

// SumHours implements clicks.RollupReader: Postgres sums the hours of
// q's account into q's periods and by q's dimensions, so that a month of
// a zone's days sends a row per day and group, not the hours of every
// account by every dimension. The periods are the bounds Go gives
// (width_bucket), so the days are those of Go's zone data, not of
// Postgres's.
func (r Rollups) SumHours(ctx context.Context, q clicks.HourSums, fn func(*clicks.Rollup) error) error {
	if len(q.Starts) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sql, args := sumHoursSQL(&q)
	var row clicks.Rollup
	var period int
	var sums []int64
	var byFn bool
	err := r.db.query(ctx, func(rows pgx.Rows) error {
		if err := rows.Scan(&period, &row.APIKey, &row.SiteID, &row.Advertiser, &row.AdID, &row.Context, &row.Currency,
			&row.Criterion, &row.YkTag, &row.Country, &row.Impressions, &row.Clicks, &row.Billable, &row.SpendMicros, &sums,
			&row.PageImpressions, &row.PageClicks); err != nil {
			return err
		}
		if period < 1 || period > len(q.Starts) {
			return fmt.Errorf("period %d of %d", period, len(q.Starts))
		}
		row.Start = q.Starts[period-1]
		copy(row.Unbilled[:], sums)
		err := fn(&row)
		if err == nil {
			err = ctx.Err()
		}
		byFn = err != nil
		return err
	}, sql, args...)
	switch {
	case err != nil && byFn:
		return err
	case err != nil:
		return fmt.Errorf("postgres: sum hours: %w", err)
	}
	return nil
}

// sumHoursSQL is SumHours' query of q (len(q.Starts) > 0) and its
// arguments.
func sumHoursSQL(q *clicks.HourSums) (string, []any) {
	bounds := make([]int64, len(q.Starts))
	for i, s := range q.Starts {
		bounds[i] = ceilDiv(s.Unix(), 3600)
	}
	sel := make([]string, len(rollupDims))
	var group []string
	for d, col := range rollupDims {
		if slices.Contains(q.Dims, clicks.Dimension(d)) {
			sel[d] = col
			group = append(group, col)
		} else {
			sel[d] = "''"
		}
	}
	// The account is a plain equality, which its index serves: a plan
	// made for any argument ("$5 = '' OR api_key = $5") reads every
	// account's hours.
	args := []any{int16(clicks.Hour), bounds[0], bounds, ceilDiv(q.End.Unix(), 3600)}
	var account strings.Builder
	for _, a := range []struct{ column, id string }{{"api_key", q.APIKey}, {"advertiser", q.Advertiser}} {
		if a.id != "" {
			args = append(args, a.id)
			account.WriteString(" AND " + a.column + " = $" + strconv.Itoa(len(args)))
		}
	}
	// A report past Limit rows is refused: Postgres sends no more, nor
	// sorts more than Limit of the sums.
	limit := ""
	if q.Limit > 0 {
		args = append(args, int64(q.Limit))
		limit = " LIMIT $" + strconv.Itoa(len(args))
	}
	return `SELECT width_bucket(period, $3::bigint[]) AS p, ` + strings.Join(sel, ", ") + `,
		sum(impressions)::bigint, sum(clicks)::bigint, sum(billable)::bigint, sum(spend_micros)::bigint, ` + unbilledSums + `,
		coalesce(sum(impressions) FILTER (WHERE context <> '` + clicks.SearchContext + `'), 0)::bigint,
		coalesce(sum(clicks) FILTER (WHERE context <> '` + clicks.SearchContext + `'), 0)::bigint
		FROM rollups WHERE grain = $1 AND period >= $2 AND period < $4` + account.String() + `
		GROUP BY ` + strings.Join(append([]string{"p"}, group...), ", ") + ` ORDER BY p` + limit, args
}
