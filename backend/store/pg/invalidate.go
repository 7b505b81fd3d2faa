package pgstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// Invalidator credits billed clicks of the clicks table
// (clicks.Invalidator): each batch's clicks, their rollups and their
// advertisers' spend change in one transaction, which adds one to the
// credits' epoch (CreditEpoch).
type Invalidator struct{ db *DB }

var _ clicks.Invalidator = Invalidator{}

// Invalidator returns the database's invalidator.
func (db *DB) Invalidator() Invalidator { return Invalidator{db} }

// invalidateBatch bounds the clicks one transaction credits, and so how
// long it holds their rows and the rollups'.
const invalidateBatch = 500

// selection is the WHERE condition on the clicks table of inv's billable
// clicks, with its arguments, numbered from $1.
func selection(inv *clicks.Invalidation) (string, []any) {
	cond := `billable AND at_ns >= $1 AND at_ns < $2`
	args := []any{nanos(inv.From), nanos(inv.To)}
	add := func(col string, v any) {
		args = append(args, v)
		cond += ` AND ` + col + strconv.Itoa(len(args))
	}
	if inv.APIKey != "" {
		add("api_key = $", clean(inv.APIKey))
	}
	if inv.SiteID != "" {
		add("site_id = $", clean(inv.SiteID))
	}
	if inv.AdID != "" {
		add("ad_id = $", clean(inv.AdID))
	}
	if len(inv.IDs) > 0 {
		ids := make([]string, len(inv.IDs))
		for i, id := range inv.IDs {
			ids[i] = clean(id)
		}
		add("click_id = ANY ($", ids)
		cond += ")"
	}
	return cond, args
}

// Invalidate implements clicks.Invalidator.
func (v Invalidator) Invalidate(ctx context.Context, inv clicks.Invalidation) (clicks.Credit, error) {
	var credit clicks.Credit
	if err := inv.Check(); err != nil {
		return credit, err
	}
	oldest, ok, err := Retainer(v).OldestDay(ctx, clicks.ClickLog)
	if err != nil {
		return credit, err
	}
	if err := inv.CheckHeld(ctx, Rollups(v), oldest, ok); err != nil {
		return credit, err
	}
	cond, args := selection(&inv)
	if inv.DryRun {
		err := v.db.query(ctx, func(rows pgx.Rows) error {
			var cur string
			var n, micros int64
			if err := rows.Scan(&cur, &n, &micros); err != nil {
				return err
			}
			if credit.Micros == nil {
				credit.Micros = map[string]int64{}
			}
			credit.Clicks += n
			credit.Micros[cur] += micros
			return nil
		}, `SELECT currency, count(*), coalesce(sum(bid_micros), 0)::bigint FROM clicks WHERE `+cond+` GROUP BY currency`, args...)
		if err != nil {
			return credit, fmt.Errorf("postgres: invalidate: %w", err)
		}
		return credit, nil
	}
	// The batches go in order of time, then seq, each from the last
	// click of the one before.
	afterAt, afterSeq := int64(-1<<63), int64(-1<<63)
	n := len(args)
	page := cond + ` AND (at_ns, seq) > ($` + strconv.Itoa(n+1) + `, $` + strconv.Itoa(n+2) + `)`
	for {
		var batch clicks.Credit
		var lastAt, lastSeq int64
		got := 0
		err := v.db.inTx(ctx, func(tx pgx.Tx) error {
			batch, got = clicks.Credit{}, 0
			cs, seqs, err := lockBilled(ctx, tx, page, append(args[:n:n], afterAt, afterSeq))
			if err != nil || len(cs) == 0 {
				return err
			}
			got = len(cs)
			lastAt, lastSeq = nanos(cs[len(cs)-1].Time), seqs[len(seqs)-1]
			if _, err := tx.Exec(ctx, `UPDATE clicks SET billable = false, reason = $2 WHERE seq = ANY ($1)`,
				seqs, clicks.ReasonInvalidated); err != nil {
				return err
			}
			rb := newRollupBatch()
			spends := map[spendDay]int64{}
			for i := range cs {
				c := &cs[i]
				rb.add(clicks.ClickRollup(c), clicks.InvalidatedMeasures(c))
				spends[spendDay{clean(c.Advertiser), int64(inv.BudgetDay(c))}] += c.BidMicros
				batch.Clicks++
				if batch.Micros == nil {
					batch.Micros = map[string]int64{}
				}
				batch.Micros[c.Currency] += c.BidMicros
			}
			b := &pgx.Batch{}
			rb.queue(b)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			if err := creditSpend(ctx, tx, spends); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE credit_epoch SET n = n + 1`)
			return err
		})
		if err != nil {
			return credit, fmt.Errorf("postgres: invalidate: %w", err)
		}
		if got == 0 {
			return credit, nil
		}
		credit.Clicks += batch.Clicks
		for cur, m := range batch.Micros {
			if credit.Micros == nil {
				credit.Micros = map[string]int64{}
			}
			credit.Micros[cur] += m
		}
		afterAt, afterSeq = lastAt, lastSeq
		if err := ctx.Err(); err != nil {
			return credit, err
		}
	}
}

// lockBilled reads and locks the next batch of the billable clicks the
// condition cond selects, in order of time, then seq; a click another
// transaction made not billable meanwhile is left out.
func lockBilled(ctx context.Context, tx pgx.Tx, cond string, args []any) ([]clicks.Click, []int64, error) {
	rows, err := tx.Query(ctx, `SELECT seq, at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip,
		user_agent, country, advertiser, bid_micros, currency, billable, reason, coalesce(click_id, ''), coalesce(budget_day, 0)
		FROM clicks WHERE `+cond+` ORDER BY at_ns, seq LIMIT `+strconv.Itoa(invalidateBatch)+` FOR UPDATE`, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var cs []clicks.Click
	var seqs []int64
	for rows.Next() {
		var c clicks.Click
		var seq, ns int64
		if err := rows.Scan(&seq, &ns, &c.AdID, &c.AdType, &c.Type, &c.APIKey, &c.SiteID, &c.Criterion, &c.YkTag, &c.IP,
			&c.UserAgent, &c.Country, &c.Advertiser, &c.BidMicros, &c.Currency, &c.Billable, &c.Reason, &c.ID, &c.BudgetDay); err != nil {
			return nil, nil, err
		}
		c.Time = fromNanos(ns)
		cs, seqs = append(cs, c), append(seqs, seq)
	}
	return cs, seqs, rows.Err()
}

// spendDay is an advertiser's budget day.
type spendDay struct {
	advertiser string
	day        int64
}

// creditSpend takes each advertiser's credited micros of a day from its
// spend, in order of advertiser and day, as the ledger adds them; never
// below nothing, should a zone changed since the clicks name a day they
// did not spend on.
func creditSpend(ctx context.Context, tx pgx.Tx, spends map[spendDay]int64) error {
	keys := make([]spendDay, 0, len(spends))
	for k := range spends {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].advertiser != keys[j].advertiser {
			return keys[i].advertiser < keys[j].advertiser
		}
		return keys[i].day < keys[j].day
	})
	for _, k := range keys {
		var spent int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(micros), 0)::bigint FROM spend WHERE advertiser = $1 AND day = $2`,
			k.advertiser, k.day).Scan(&spent); err != nil {
			return err
		}
		if c := min(spends[k], spent); c > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO spend (advertiser, day, shard, micros) VALUES ($1, $2, `+shard+`, $3)
				ON CONFLICT (advertiser, day, shard) DO UPDATE SET micros = spend.micros + EXCLUDED.micros`,
				k.advertiser, k.day, -c); err != nil {
				return err
			}
		}
	}
	return nil
}

// CreditEpoch is the credits' epoch: a number that each batch of credited
// clicks raises when it commits, so that a server that reads a new one
// knows its advertisers' spend of the day may have gone down, whichever
// replica or adlink invalidate credited them.
func (db *DB) CreditEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT n FROM credit_epoch`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: reading the credits' epoch: %w", err)
	}
	return n, nil
}
