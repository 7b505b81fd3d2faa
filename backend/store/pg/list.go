package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

var _ clicks.Lister = Clicks{}

// listedID is the SQL of a click's id as listings order it: byte order,
// empty for a click recorded before clicks had ids; the indexes of
// 00018_click_listing.sql hold it.
const listedID = `(coalesce(click_id, '') COLLATE "C")`

// List implements clicks.Lister: the account, range, verdict and cursor
// filtered in SQL, read in the order of an index of the account's kind,
// backwards for a listing newest first.
func (s Clicks) List(ctx context.Context, q clicks.Query) ([]clicks.Click, bool, error) {
	if q.Limit < 1 {
		return nil, false, errors.New("postgres: list clicks: limit below 1")
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	query, args := listSQL(q)
	var page []clicks.Click
	err := s.db.query(ctx, func(rows pgx.Rows) error {
		var c clicks.Click
		var ns int64
		if err := rows.Scan(&ns, &c.AdID, &c.AdType, &c.Type, &c.APIKey, &c.SiteID, &c.Criterion, &c.YkTag,
			&c.Country, &c.Advertiser, &c.BidMicros, &c.Currency, &c.Billable, &c.Reason, &c.ID); err != nil {
			return err
		}
		c.Time = fromNanos(ns)
		page = append(page, c)
		return nil
	}, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: list clicks: %w", err)
	}
	if len(page) > q.Limit {
		return page[:q.Limit], true, nil
	}
	return page, false, nil
}

// listSQL is the query of q's page and one click more, and its arguments.
func listSQL(q clicks.Query) (string, []any) {
	cond, args := rangeArgs(q.From, q.To)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Advertiser != "" {
		cond += " AND advertiser = " + arg(clean(q.Advertiser))
	}
	if q.APIKey != "" {
		cond += " AND api_key = " + arg(clean(q.APIKey))
	}
	if q.Billable != nil {
		cond += " AND billable = " + arg(*q.Billable)
	}
	after, order := ">", "at_ns, "+listedID
	if q.Desc {
		after, order = "<", "at_ns DESC, "+listedID+" DESC"
	}
	if !q.After.Time.IsZero() {
		cond += " AND (at_ns, " + listedID + ") " + after + " (" + arg(nanos(q.After.Time)) + ", " + arg(clean(q.After.ID)) + " COLLATE \"C\")"
	}
	limit := arg(q.Limit + 1)
	return `SELECT at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, country, advertiser,
		bid_micros, currency, billable, reason, ` + listedID + `
		FROM clicks WHERE ` + cond + ` ORDER BY ` + order + ` LIMIT ` + limit, args
}
