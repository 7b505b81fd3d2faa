package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// Retainer is clicks.Retainer over the clicks and impressions tables:
// days are read and deleted in pages of (at_ns, seq) order.
type Retainer struct{ db *DB }

var _ clicks.Retainer = Retainer{}

// Retainer returns the database's retainer.
func (db *DB) Retainer() Retainer { return Retainer{db} }

// retainBatch is the most rows one query of ExportDay reads or one
// transaction of DeleteDay deletes.
const retainBatch = 1000

// table is the table of log.
func table(log clicks.RawLog) (string, error) {
	switch log {
	case clicks.ClickLog:
		return "clicks", nil
	case clicks.ImpressionLog:
		return "impressions", nil
	}
	return "", fmt.Errorf("postgres: no raw log %q", log)
}

// dayRange is the [from, to) of the UTC day that starts at day, in
// nanoseconds.
func dayRange(day time.Time) (int64, int64, error) {
	if !day.Equal(day.UTC().Truncate(24 * time.Hour)) {
		return 0, 0, fmt.Errorf("postgres: %v is no UTC midnight", day)
	}
	return nanos(day), nanos(day.Add(24 * time.Hour)), nil
}

// OldestDay implements clicks.Retainer.
func (r Retainer) OldestDay(ctx context.Context, log clicks.RawLog) (time.Time, bool, error) {
	t, err := table(log)
	if err != nil {
		return time.Time{}, false, err
	}
	var oldest *int64
	if err := r.db.rerun(ctx, func() error {
		return r.db.pool.QueryRow(ctx, `SELECT min(at_ns) FROM `+t).Scan(&oldest)
	}); err != nil {
		return time.Time{}, false, fmt.Errorf("postgres: oldest day: %w", err)
	}
	if oldest == nil {
		return time.Time{}, false, nil
	}
	return fromNanos(*oldest).Truncate(24 * time.Hour), true, nil
}

// ExportDay implements clicks.Retainer: a page of rows at a time, each
// page read after the last row written.
func (r Retainer) ExportDay(ctx context.Context, log clicks.RawLog, day time.Time, w io.Writer) (int, error) {
	return r.ExportDayTo(ctx, log, day, 0, math.MaxInt64, w)
}

// ExportDayTo implements clicks.Exports.
func (r Retainer) ExportDayTo(ctx context.Context, log clicks.RawLog, day time.Time, after, seq int64, w io.Writer) (int, error) {
	from, to, err := dayRange(day)
	if err != nil {
		return 0, err
	}
	rows := 0
	afterNs, afterSeq := from, int64(-1) // (from, -1): every row of the day
	for {
		var lines [][]byte
		var err error
		switch log {
		case clicks.ClickLog:
			lines, afterNs, afterSeq, err = exportPage(ctx, Clicks(r).scanPage, afterNs, afterSeq, to, after, seq)
		case clicks.ImpressionLog:
			lines, afterNs, afterSeq, err = exportPage(ctx, Impressions(r).scanPage, afterNs, afterSeq, to, after, seq)
		default:
			_, err = table(log)
		}
		if err != nil {
			return rows, err
		}
		for _, l := range lines {
			if _, err := w.Write(l); err != nil {
				return rows, err
			}
			rows++
		}
		if len(lines) < retainBatch {
			return rows, ctx.Err()
		}
	}
}

// exportPage reads up to retainBatch rows after (afterNs, afterSeq),
// before to, above from and up to seq with scan, each as a JSON line.
func exportPage[T any](ctx context.Context, scan func(context.Context, int64, int64, int64, int64, int64, func(T, int64, int64) error) error,
	afterNs, afterSeq, to, from, seq int64) ([][]byte, int64, int64, error) {
	var lines [][]byte
	err := scan(ctx, afterNs, afterSeq, to, from, seq, func(v T, ns, seq int64) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		lines = append(lines, append(b, '\n'))
		afterNs, afterSeq = ns, seq
		return nil
	})
	return lines, afterNs, afterSeq, err
}

// pageCond selects a page of rows after ($1, $2), before $3, and above
// seq $5 up to seq $4.
const pageCond = ` WHERE (at_ns, seq) > ($1, $2) AND at_ns < $3 AND seq <= $4 AND seq > $5 ORDER BY at_ns, seq LIMIT 1000`

// scanPage calls fn for up to retainBatch clicks after (afterNs,
// afterSeq), before to, above from and up to upTo, oldest first, with their sequence
// numbers.
func (s Clicks) scanPage(ctx context.Context, afterNs, afterSeq, to, from, upTo int64, fn func(clicks.Click, int64, int64) error) error {
	err := s.db.query(ctx, func(rows pgx.Rows) error {
		var c clicks.Click
		var seq, ns int64
		if err := rows.Scan(&seq, &ns, &c.AdID, &c.AdType, &c.Type, &c.APIKey, &c.SiteID, &c.Criterion, &c.YkTag, &c.IP,
			&c.UserAgent, &c.Country, &c.Advertiser, &c.BidMicros, &c.Currency, &c.Billable, &c.Reason, &c.ID, &c.BudgetDay); err != nil {
			return err
		}
		c.Time = fromNanos(ns)
		return fn(c, ns, seq)
	}, `SELECT seq, at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip,
		user_agent, country, advertiser, bid_micros, currency, billable, reason, coalesce(click_id, ''), coalesce(budget_day, 0) FROM clicks`+pageCond,
		afterNs, afterSeq, to, upTo, from)
	if err != nil {
		return fmt.Errorf("postgres: export clicks: %w", err)
	}
	return nil
}

// scanPage calls fn for up to retainBatch impressions after (afterNs,
// afterSeq), before to, above from and up to upTo, oldest first, with their sequence
// numbers.
func (s Impressions) scanPage(ctx context.Context, afterNs, afterSeq, to, from, upTo int64, fn func(clicks.Impression, int64, int64) error) error {
	err := s.db.query(ctx, func(rows pgx.Rows) error {
		var m clicks.Impression
		var seq, ns int64
		if err := rows.Scan(&seq, &ns, &m.AdID, &m.AdType, &m.Type, &m.APIKey, &m.SiteID, &m.Criterion, &m.YkTag, &m.Page,
			&m.IP, &m.UserAgent, &m.Country, &m.Advertiser, &m.Currency); err != nil {
			return err
		}
		m.Time = fromNanos(ns)
		return fn(m, ns, seq)
	}, `SELECT seq, at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, page,
		ip, user_agent, country, advertiser, currency FROM impressions`+pageCond, afterNs, afterSeq, to, upTo, from)
	if err != nil {
		return fmt.Errorf("postgres: export impressions: %w", err)
	}
	return nil
}

// DeleteDay implements clicks.Retainer: oldest first, retainBatch rows a
// transaction.
func (r Retainer) DeleteDay(ctx context.Context, log clicks.RawLog, day time.Time) (int, error) {
	return r.DeleteDayTo(ctx, log, day, math.MaxInt64)
}

// DeleteDayTo implements clicks.Exports.
func (r Retainer) DeleteDayTo(ctx context.Context, log clicks.RawLog, day time.Time, seq int64) (int, error) {
	t, err := table(log)
	if err != nil {
		return 0, err
	}
	from, to, err := dayRange(day)
	if err != nil {
		return 0, err
	}
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		tag, err := r.db.pool.Exec(ctx, `DELETE FROM `+t+` WHERE seq IN (SELECT seq FROM `+t+`
			WHERE at_ns >= $1 AND at_ns < $2 AND seq <= $4 ORDER BY at_ns, seq LIMIT $3)`, from, to, retainBatch, seq)
		if err != nil {
			return total, fmt.Errorf("postgres: delete day: %w", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < retainBatch {
			return total, nil
		}
	}
}

// ForgetSpendBefore implements clicks.Retainer.
func (r Retainer) ForgetSpendBefore(ctx context.Context, day time.Time) error {
	if err := r.db.rerun(ctx, func() error {
		_, err := r.db.pool.Exec(ctx, `DELETE FROM spend WHERE day < $1`, dayOf(day))
		return err
	}); err != nil {
		return fmt.Errorf("postgres: forget spend: %w", err)
	}
	return nil
}
