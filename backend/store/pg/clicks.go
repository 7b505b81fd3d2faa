package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// Clicks is the click log (clicks.Store) in the clicks table. Append adds
// a click alone; the Ledger's Record also counts it in the rollups.
type Clicks struct{ db *DB }

var (
	_ clicks.Store    = Clicks{}
	_ clicks.Recorder = Clicks{}
)

// Clicks returns the database's click log.
func (db *DB) Clicks() Clicks { return Clicks{db} }

const insertClick = `INSERT INTO clicks (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent,
	country, advertiser, bid_micros, currency, billable, reason, click_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, NULLIF($17, ''))`

func clickArgs(c *clicks.Click) []any {
	return []any{nanos(c.Time), clean(c.AdID), clean(c.AdType), clean(c.Type), clean(c.APIKey), clean(c.SiteID),
		clean(c.Criterion), clean(c.YkTag), clean(c.IP), clean(c.UserAgent), clean(c.Country), clean(c.Advertiser),
		c.BidMicros, clean(c.Currency), c.Billable, clean(c.Reason), clean(c.ID)}
}

// Append implements clicks.Store: one INSERT, committed before it returns.
func (s Clicks) Append(ctx context.Context, c clicks.Click) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Time.IsZero() {
		return errors.New("postgres: click without time")
	}
	if _, err := s.db.pool.Exec(ctx, insertClick, clickArgs(&c)...); err != nil {
		return fmt.Errorf("postgres: append click: %w", err)
	}
	return nil
}

// Scan implements clicks.Store.
func (s Clicks) Scan(ctx context.Context, from, to time.Time, fn func(clicks.Click) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cond, args := rangeArgs(from, to)
	var byFn bool // whether the error is fn's (or ctx's), returned as it is
	err := s.db.query(ctx, func(rows pgx.Rows) error {
		var c clicks.Click
		var ns int64
		if err := rows.Scan(&ns, &c.AdID, &c.AdType, &c.Type, &c.APIKey, &c.SiteID, &c.Criterion, &c.YkTag, &c.IP,
			&c.UserAgent, &c.Country, &c.Advertiser, &c.BidMicros, &c.Currency, &c.Billable, &c.Reason, &c.ID, &c.BudgetDay); err != nil {
			return err
		}
		c.Time = fromNanos(ns)
		err := fn(c)
		if err == nil {
			err = ctx.Err()
		}
		byFn = err != nil
		return err
	}, `SELECT at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip,
		user_agent, country, advertiser, bid_micros, currency, billable, reason, coalesce(click_id, ''), coalesce(budget_day, 0)
		FROM clicks WHERE `+cond+` ORDER BY at_ns, seq`, args...)
	if err != nil && !byFn {
		return fmt.Errorf("postgres: scan clicks: %w", err)
	}
	return err
}

// Impressions is the impression log (clicks.Impressions) in the
// impressions table; each Append adds to the rollups in its transaction.
type Impressions struct{ db *DB }

var _ clicks.Impressions = Impressions{}

// Impressions returns the database's impression log.
func (db *DB) Impressions() Impressions { return Impressions{db} }

// Append implements clicks.Impressions: the keys, the rows and their
// rollups in one transaction.
func (s Impressions) Append(ctx context.Context, imps []clicks.Impression) (int, error) {
	if err := checkImpressions(ctx, imps); err != nil {
		return 0, err
	}
	var repeats int
	err := s.db.inTx(ctx, func(tx pgx.Tx) (err error) {
		repeats, err = appendImpressions(ctx, tx, imps)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: impressions: %w", err)
	}
	return repeats, nil
}

// Ship implements clicks.ImpressionShipper: the batch's id, its rows and
// their rollups in one transaction, unless the id is there already.
// Batch ids are forgotten a week after their impressions. A batch with
// an impression it cannot record (no time, a malformed key) is refused
// (clicks.ErrRefused), so the spooler sets it aside rather than retry it
// for ever.
func (s Impressions) Ship(ctx context.Context, id string, imps []clicks.Impression) (int, error) {
	if err := checkImpressions(ctx, imps); err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %w", clicks.ErrRefused, err)
	}
	if id == "" || len(imps) == 0 {
		return 0, errors.New("postgres: ship impressions: no id or no impressions")
	}
	var repeats int
	err := s.db.inTx(ctx, func(tx pgx.Tx) error {
		repeats = 0
		tag, err := tx.Exec(ctx, `INSERT INTO impression_batches (id, at_ns) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
			clean(id), nanos(imps[0].Time))
		if err != nil || tag.RowsAffected() == 0 {
			return err // recorded before
		}
		if rand.IntN(forgetEvery) == 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM impression_batches WHERE at_ns < $1`,
				nanos(imps[0].Time.Add(-7*24*time.Hour))); err != nil {
				return err
			}
		}
		repeats, err = appendImpressions(ctx, tx, imps)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: ship impressions: %w", refused(err))
	}
	return repeats, nil
}

// checkImpressions refuses a done ctx and an impression without time.
func checkImpressions(ctx context.Context, imps []clicks.Impression) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range imps {
		if imps[i].Time.IsZero() {
			return errors.New("postgres: impression without time")
		}
		if _, err := clicks.ImpressionKeyBytes(imps[i].Key); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	return nil
}

// insertImpressionKeys inserts the keys of the impressions that have one,
// in the order of their bytes so that transactions of shared keys wait
// for each other rather than deadlock, and returns the keys inserted: of
// a key the table held, or that imps repeat, none or one.
const insertImpressionKeys = `INSERT INTO impression_keys (key)
	SELECT k FROM unnest($1::bytea[]) AS k ORDER BY k ON CONFLICT (key) DO NOTHING RETURNING key`

// appendImpressions adds imps but the repeats of a key recorded before,
// and their rollups, in tx, and returns how many repeats it dropped. Now
// and then it forgets the keys past clicks.ImpressionKeyTTL.
func appendImpressions(ctx context.Context, tx pgx.Tx, imps []clicks.Impression) (int, error) {
	var keys [][]byte
	var last time.Time
	for i := range imps {
		if k, _ := clicks.ImpressionKeyBytes(imps[i].Key); k != nil { // checked by checkImpressions
			keys = append(keys, k)
		}
		if imps[i].Time.After(last) {
			last = imps[i].Time
		}
	}
	repeats := 0
	if len(keys) > 0 {
		fresh := make(map[string]bool, len(keys))
		rows, err := tx.Query(ctx, insertImpressionKeys, keys)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var k []byte
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return 0, err
			}
			fresh[hex.EncodeToString(k)] = true
		}
		if err := rows.Err(); err != nil {
			return 0, err
		}
		kept := make([]clicks.Impression, 0, len(imps))
		for _, m := range imps {
			if m.Key != "" {
				k := strings.ToLower(m.Key)
				if !fresh[k] {
					repeats++
					continue
				}
				delete(fresh, k) // a second of one key in imps is a repeat
			}
			kept = append(kept, m)
		}
		imps = kept
		if rand.IntN(forgetEvery) == 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM impression_keys WHERE key < $1`, clicks.ImpressionKeyCut(last)); err != nil {
				return 0, err
			}
		}
	}
	if len(imps) == 0 {
		return repeats, nil
	}
	return repeats, insertImpressions(ctx, tx, imps)
}

// insertImpressions adds imps and their rollups in tx.
func insertImpressions(ctx context.Context, tx pgx.Tx, imps []clicks.Impression) error {
	rows := newRollupBatch()
	for i := range imps {
		rows.add(impressionRollup(&imps[i]), clicks.Measures{Impressions: 1})
	}
	b := &pgx.Batch{}
	for i := range imps {
		m := &imps[i]
		b.Queue(`INSERT INTO impressions (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, page, ip,
			user_agent, country, advertiser, currency) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			nanos(m.Time), clean(m.AdID), clean(m.AdType), clean(m.Type), clean(m.APIKey), clean(m.SiteID),
			clean(m.Criterion), clean(m.YkTag), clean(m.Page), clean(m.IP), clean(m.UserAgent), clean(m.Country),
			clean(m.Advertiser), clean(m.Currency))
	}
	rows.queue(b)
	return tx.SendBatch(ctx, b).Close()
}

// Scan implements clicks.Impressions.
func (s Impressions) Scan(ctx context.Context, from, to time.Time, fn func(clicks.Impression) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cond, args := rangeArgs(from, to)
	var byFn bool // whether the error is fn's (or ctx's), returned as it is
	err := s.db.query(ctx, func(rows pgx.Rows) error {
		var m clicks.Impression
		var ns int64
		if err := rows.Scan(&ns, &m.AdID, &m.AdType, &m.Type, &m.APIKey, &m.SiteID, &m.Criterion, &m.YkTag, &m.Page, &m.IP,
			&m.UserAgent, &m.Country, &m.Advertiser, &m.Currency); err != nil {
			return err
		}
		m.Time = fromNanos(ns)
		err := fn(m)
		if err == nil {
			err = ctx.Err()
		}
		byFn = err != nil
		return err
	}, `SELECT at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, page, ip,
		user_agent, country, advertiser, currency FROM impressions WHERE `+cond+` ORDER BY at_ns, seq`, args...)
	if err != nil && !byFn {
		return fmt.Errorf("postgres: scan impressions: %w", err)
	}
	return err
}

// Ledger is the clicks.Ledger of the database: one transaction settles a
// batch of concurrent clicks and records them (group commit), one
// statement, adlink_record_clicks (in the migrations). When the
// advertiser has a budget, the advertiser's advisory lock of the day is
// taken first, so that its clicks are judged against its budget one after
// another; the decision is an INSERT … ON CONFLICT DO NOTHING, which makes
// a concurrent insert of the same id wait for the first and then find it;
// a network's windows are judged under a transaction advisory lock of the
// network; the click rows, their rollup rows (a shard no other batch
// holds) and the spend follow. Locks are taken in that order, and a
// batch's networks in the order of their names, so that transactions
// seldom deadlock; one that does, or that Postgres aborts for a
// serialization failure, runs again from the start, and nothing of it was
// written.
type Ledger struct{ db *DB }

var _ clicks.Ledger = Ledger{}

// Ledger returns the database's ledger.
func (db *DB) Ledger() Ledger { return Ledger{db} }

// Record implements clicks.Ledger: the click joins the next batch, one
// call of adlink_record_clicks, committed before it returns. An error
// after the statement was sent (its reply lost: the connection failed)
// may come after the commit, the click recorded: recorded or shipped
// again under its ID, it is found and keeps its verdict, billed once. A
// click without an ID cannot be found: do not record it again.
func (l Ledger) Record(ctx context.Context, c *clicks.Click, u clicks.Use) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.Time.IsZero() {
		return errors.New("postgres: click without time")
	}
	p := &pendingClick{network: clicks.Network(c.IP), click: c, use: u}
	l.db.gc.commit(l.db.recordBatch, p)
	if p.err != nil {
		return fmt.Errorf("postgres: ledger: %w", p.err)
	}
	c.Billable, c.Reason = p.reason == "", p.reason
	c.BudgetDay = u.BilledDay(c)
	return nil
}

// shard is the SQL of the shard a connection adds to: shards of the
// rollup and spend rows spread concurrent transactions over rows of their
// own, and a connection runs one transaction at a time.
const shard = `(pg_backend_pid() % 16)`

func impressionRollup(i *clicks.Impression) clicks.Rollup {
	return clicks.Rollup{Start: i.Time, APIKey: i.APIKey, SiteID: i.SiteID, Advertiser: i.Advertiser, AdID: i.AdID,
		Context: i.Type, Currency: i.Currency, Criterion: i.Criterion, YkTag: i.YkTag, Country: i.Country}
}

// grains are every clicks.Grain, in the order their rows are locked.
var grains = []clicks.Grain{clicks.Hour, clicks.Day, clicks.DaySite, clicks.DayAd}

// rollupKey is one row of the rollups table.
type rollupKey struct {
	grain  clicks.Grain
	period int64
	dims   [9]string // in the order of clicks.Dimension
}

// rollupBatch sums what a transaction adds to each rollup row, so that
// each row is written once, in a fixed order.
type rollupBatch map[rollupKey]*clicks.Measures

func newRollupBatch() rollupBatch { return rollupBatch{} }

// rowKeys are r's rows, at r.Start, in every grain, in grain order.
func rowKeys(r clicks.Rollup) []rollupKey {
	all := [9]string{clean(r.APIKey), clean(r.SiteID), clean(r.Advertiser), clean(r.AdID), clean(r.Context),
		clean(r.Currency), clean(r.Criterion), clean(r.YkTag), clean(r.Country)}
	keys := make([]rollupKey, len(grains))
	for i, g := range grains {
		k := rollupKey{grain: g, period: dayOf(r.Start)}
		if g.Hourly() {
			k.period = hourOf(r.Start)
		}
		for d := range all {
			if g.Keeps(clicks.Dimension(d)) {
				k.dims[d] = all[d]
			}
		}
		keys[i] = k
	}
	return keys
}

// add adds m to the row of r's dimensions at r.Start in every grain.
func (rb rollupBatch) add(r clicks.Rollup, m clicks.Measures) {
	for _, k := range rowKeys(r) {
		if sum, ok := rb[k]; ok {
			sum.Add(&m)
		} else {
			mm := m
			rb[k] = &mm
		}
	}
}

const upsertRollup = `INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency, criterion,
	yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
	VALUES ($1, ` + shard + `, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
	ON CONFLICT (grain, period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country, shard)
	DO UPDATE SET impressions = rollups.impressions + EXCLUDED.impressions, clicks = rollups.clicks + EXCLUDED.clicks,
		billable = rollups.billable + EXCLUDED.billable, spend_micros = rollups.spend_micros + EXCLUDED.spend_micros,
		unbilled = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
			FROM unnest(rollups.unbilled, EXCLUDED.unbilled) WITH ORDINALITY AS u(a, b, n) ORDER BY n)`

// queue queues the upserts of rb's rows on b, in the order of grain,
// then period, then dimensions.
func (rb rollupBatch) queue(b *pgx.Batch) {
	keys := make([]rollupKey, 0, len(rb))
	for k := range rb {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if a.grain != c.grain {
			return a.grain < c.grain
		}
		if a.period != c.period {
			return a.period < c.period
		}
		for d := range a.dims {
			if a.dims[d] != c.dims[d] {
				return a.dims[d] < c.dims[d]
			}
		}
		return false
	})
	for _, k := range keys {
		m := rb[k]
		b.Queue(upsertRollup, int16(k.grain), k.period, k.dims[0], k.dims[1], k.dims[2], k.dims[3], k.dims[4], k.dims[5],
			k.dims[6], k.dims[7], k.dims[8], m.Impressions, m.Clicks, m.Billable, m.SpendMicros, m.Unbilled[:])
	}
}

// Rollups read the rollups table (clicks.RollupReader) and the spend of
// each advertiser and day (budget.Spender).
type Rollups struct{ db *DB }

var _ clicks.RollupReader = Rollups{}

// Rollups returns the database's rollups.
func (db *DB) Rollups() Rollups { return Rollups{db} }

// ScanRollups implements clicks.RollupReader.
func (r Rollups) ScanRollups(ctx context.Context, g clicks.Grain, from, to time.Time, fn func(*clicks.Rollup) error) error {
	return r.scan(ctx, g, from, to, "", "", fn)
}

// ScanAccountRollups implements clicks.RollupReader: the account's
// index of its kind (migration 00020) gives its rows of the range, not
// every account's.
func (r Rollups) ScanAccountRollups(ctx context.Context, g clicks.Grain, from, to time.Time, kind clicks.Dimension, id string, fn func(*clicks.Rollup) error) error {
	if kind != clicks.DimAPIKey && kind != clicks.DimAdvertiser {
		return fmt.Errorf("postgres: no account of dimension %d", kind)
	}
	return r.scan(ctx, g, from, to, rollupDims[kind], id, fn)
}

// scan calls fn for the rows of grain g in [from, to), of every account
// when column is "", else those whose column is id.
func (r Rollups) scan(ctx context.Context, g clicks.Grain, from, to time.Time, column, id string, fn func(*clicks.Rollup) error) error {
	if g < clicks.Hour || g > clicks.DayAd {
		return fmt.Errorf("postgres: no grain %d", g)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	size := int64(86400)
	if g.Hourly() {
		size = 3600
	}
	// The first period that starts at or after from, and the first that
	// starts at or after to.
	first := ceilDiv(from.Unix(), size)
	end := ceilDiv(to.Unix(), size)
	// A row's shards come one after another, and are summed here.
	var row, next clicks.Rollup
	var unbilled []int64
	var byFn bool // whether the error is fn's (or ctx's), returned as it is
	have := false
	sql, args := scanSQL(g, first, end, column, id)
	err := r.db.query(ctx, func(rows pgx.Rows) error {
		var period int64
		if err := rows.Scan(&period, &next.APIKey, &next.SiteID, &next.Advertiser, &next.AdID, &next.Context, &next.Currency,
			&next.Criterion, &next.YkTag, &next.Country, &next.Impressions, &next.Clicks, &next.Billable, &next.SpendMicros,
			&unbilled); err != nil {
			return err
		}
		next.Start = time.Unix(period*size, 0).UTC()
		next.Unbilled = [len(next.Unbilled)]int64{}
		copy(next.Unbilled[:], unbilled) // counts of reasons a newer server added are left out
		if have && sameRow(&row, &next) {
			row.Measures.Add(&next.Measures)
			return nil
		}
		if have {
			err := fn(&row)
			if err == nil {
				err = ctx.Err()
			}
			if byFn = err != nil; byFn {
				return err
			}
		}
		row, have = next, true
		return nil
	}, sql, args...)
	switch {
	case err != nil && byFn:
		return err
	case err != nil:
		return fmt.Errorf("postgres: scan rollups: %w", err)
	case have:
		return fn(&row)
	}
	return nil
}

// scanSQL is the query of scan's rows of grain g whose periods are
// [first, end), of every account when column is "", else those whose
// column is id: a plain equality, which the account's index serves, as
// a condition that also holds for an empty argument would not be in a
// plan made for any argument.
func scanSQL(g clicks.Grain, first, end int64, column, id string) (string, []any) {
	account := ""
	args := []any{int16(g), first, end}
	if column != "" {
		account = " AND " + column + " = $4"
		args = append(args, id)
	}
	return `SELECT period, api_key, site_id, advertiser, ad_id, context, currency, criterion,
		yk_tag, country, impressions, clicks, billable, spend_micros, unbilled
		FROM rollups WHERE grain = $1 AND period >= $2 AND period < $3` + account + `
		ORDER BY period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country`, args
}

// sameRow reports whether a and b are shards of one row.
func sameRow(a, b *clicks.Rollup) bool {
	// Starts made by time.Unix(…).UTC() of one period are equal values.
	x, y := *a, *b
	x.Measures, y.Measures = clicks.Measures{}, clicks.Measures{}
	return x == y
}

// ceilDiv is a / b rounded up, as the bbolt rollups round (b > 0).
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Spent returns what the advertiser's billable clicks cost on the UTC day
// of at, in millionths of their currency: SpentOn of that day.
func (r Rollups) Spent(ctx context.Context, advertiser string, at time.Time) (int64, error) {
	return r.SpentOn(ctx, advertiser, clicks.BudgetDayIn(at, time.UTC))
}

// SpentOn returns what the advertiser's billable clicks cost on its
// budget's day (clicks.Use.BudgetDay), in millionths of their currency.
func (r Rollups) SpentOn(ctx context.Context, advertiser string, day clicks.BudgetDay) (int64, error) {
	var spent int64
	err := r.db.rerun(ctx, func() error {
		return r.db.pool.QueryRow(ctx, `SELECT coalesce(sum(micros), 0)::bigint FROM spend WHERE advertiser = $1 AND day = $2`,
			advertiser, int64(day)).Scan(&spent)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: spend: %w", err)
	}
	return spent, nil
}

// SpentAllOn returns what each of advertisers' billable clicks cost on
// day, in one query.
func (r Rollups) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	if len(advertisers) == 0 {
		return map[string]int64{}, nil
	}
	var spent map[string]int64
	err := r.db.rerun(ctx, func() error {
		spent = map[string]int64{}
		rows, err := r.db.pool.Query(ctx, spentAllSQL, int64(day), advertisers)
		if err != nil {
			return err
		}
		var adv string
		var micros int64
		_, err = pgx.ForEachRow(rows, []any{&adv, &micros}, func() error {
			spent[adv] = micros
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: spend of the day: %w", err)
	}
	return spent, nil
}

// spentAllSQL is SpentAllOn's query: the spend of a day of each of the
// advertisers $2, the sum of its shards, read by the index on the day
// and the advertiser (spend_day), not every advertiser's of the day.
const spentAllSQL = `SELECT advertiser, sum(micros)::bigint FROM spend WHERE day = $1 AND advertiser = ANY($2) GROUP BY advertiser`
