package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// Floor records clicks as the least Postgres can do for the ledger's
// durability: each batch of the ledger's group commit is one INSERT of
// plain rows into a table with only a primary key, committed with
// synchronous_commit on. No judging, no rollups, no spend.
type Floor struct {
	db *DB
	gc groupCommit
}

// NewFloor creates the floor's table in db.
func NewFloor(ctx context.Context, db *DB) (*Floor, error) {
	_, err := db.pool.Exec(ctx, `CREATE TABLE floor_clicks (
		click_id text PRIMARY KEY, at_ns bigint NOT NULL, ad_id text NOT NULL, ad_type text NOT NULL,
		context text NOT NULL, api_key text NOT NULL, site_id text NOT NULL, criterion text NOT NULL,
		yk_tag text NOT NULL, ip text NOT NULL, user_agent text NOT NULL, country text NOT NULL,
		advertiser text NOT NULL, bid_micros bigint NOT NULL, currency text NOT NULL)`)
	return &Floor{db: db}, err
}

// Record implements clicks.Ledger: c joins the next batch, and is
// billable once the batch committed.
func (f *Floor) Record(ctx context.Context, c *clicks.Click, u clicks.Use) error {
	if c.ID == "" {
		return errors.New("floor: click without id")
	}
	p := &pendingClick{network: clicks.Network(c.IP), click: c, use: u}
	f.gc.commit(f.insert, p)
	if p.err != nil {
		return p.err
	}
	c.Billable, c.Reason = true, ""
	return nil
}

// insert writes batch's rows in one statement and one transaction.
func (f *Floor) insert(batch []*pendingClick) {
	a := recordArgs(batch)
	err := f.db.inTx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO floor_clicks (click_id, at_ns, ad_id, ad_type, context, api_key,
			site_id, criterion, yk_tag, ip, user_agent, country, advertiser, bid_micros, currency)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::text[])`,
			a[23], a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13])
		return err
	})
	for _, p := range batch {
		p.err = err
	}
}

// ForgetDecisions runs the clean-ups of the decisions as a use at at runs
// them, now rather than once in forgetEvery uses: Decisions.Use's, and
// adlink_record_clicks' DELETE with the forget argument recordArgs gives
// a click at at.
func ForgetDecisions(ctx context.Context, db *DB, at time.Time) error {
	if err := db.inTx(ctx, func(tx pgx.Tx) error { return forgetDecisions(ctx, tx, at) }); err != nil {
		return err
	}
	c := clicks.Click{Time: at}
	forget := recordArgs([]*pendingClick{{click: &c}})[22]
	_, err := db.pool.Exec(ctx, `DELETE FROM decisions WHERE expires_ns < (SELECT min(x) FROM unnest($1::bigint[]) AS x)`, forget)
	return err
}

// InTx runs fn as the stores run their transactions.
func (db *DB) InTx(ctx context.Context, fn func(pgx.Tx) error) error { return db.inTx(ctx, fn) }

// RecordTogether records cs, each with its use of us, in one batch of
// the ledger's group commit, as concurrent Records that met in one batch
// are, and returns each click's error.
func (l Ledger) RecordTogether(cs []*clicks.Click, us []clicks.Use) []error {
	batch := make([]*pendingClick, len(cs))
	for i, c := range cs {
		batch[i] = &pendingClick{network: clicks.Network(c.IP), click: c, use: us[i]}
	}
	l.db.recordBatch(batch)
	errs := make([]error, len(cs))
	for i, p := range batch {
		if errs[i] = p.err; p.err == nil {
			p.click.Billable, p.click.Reason = p.reason == "", p.reason
		}
	}
	return errs
}

// ListPlan is Postgres's plan of the query List runs for q, as EXPLAIN
// gives it with sorts put last: a plan that still sorts has no index
// that gives the rows in the listing's order. (On a small table a sort
// of the few rows is cheaper, and would be chosen.)
func ListPlan(ctx context.Context, db *DB, q clicks.Query) (string, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL enable_sort = off"); err != nil {
		return "", err
	}
	query, args := listSQL(q)
	rows, err := tx.Query(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// RollupPlans are Postgres's plans of the queries ScanAccountRollups
// and SumHours run for one account's rows of grain g in [from, to): the
// scan's, then the sums' of the hours into their UTC days; each the plan
// Postgres makes for any argument.
func RollupPlans(ctx context.Context, db *DB, g clicks.Grain, from, to time.Time, kind clicks.Dimension, id string) (scan, sums string, err error) {
	size := int64(86400)
	if g.Hourly() {
		size = 3600
	}
	query, args := scanSQL(g, ceilDiv(from.Unix(), size), ceilDiv(to.Unix(), size), rollupDims[kind], id)
	if scan, err = genericPlan(ctx, db, query, args); err != nil {
		return "", "", err
	}
	q := clicks.HourSums{End: to, Dims: []clicks.Dimension{clicks.DimAPIKey, clicks.DimAdvertiser, clicks.DimCurrency}}
	for d := from; d.Before(to); d = d.Add(24 * time.Hour) {
		q.Starts = append(q.Starts, d)
	}
	if kind == clicks.DimAPIKey {
		q.APIKey = id
	} else {
		q.Advertiser = id
	}
	query, args = sumHoursSQL(&q)
	sums, err = genericPlan(ctx, db, query, args)
	return scan, sums, err
}

// SumHoursAnalyzed is Postgres's plan of the query SumHours runs for q,
// run, as EXPLAIN ANALYZE gives it: the rows each step gave.
func SumHoursAnalyzed(ctx context.Context, db *DB, q clicks.HourSums) (string, error) {
	query, args := sumHoursSQL(&q)
	rows, err := db.pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+query, args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// genericPlan is Postgres's plan of query made for any argument, as a
// statement prepared once and run many times may come to use: a plan
// for the argument itself could read an index the generic one does not.
func genericPlan(ctx context.Context, db *DB, query string, args []any) (plan string, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		// EXPLAIN of the query itself would plan it for args.
		if _, err := tx.Exec(ctx, "PREPARE rollup_plan AS "+query); err != nil {
			return err
		}
		defer tx.Exec(ctx, "DEALLOCATE rollup_plan")
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		// EXECUTE takes its arguments as literals.
		params := make([]string, len(args))
		for i, a := range args {
			switch a := a.(type) {
			case int16:
				params[i] = strconv.Itoa(int(a))
			case int64:
				params[i] = strconv.FormatInt(a, 10)
			case []int64:
				params[i] = "'{" + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(a)), ","), "[]") + "}'"
			case string:
				params[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
			default:
				return fmt.Errorf("argument %d: %T", i+1, a)
			}
		}
		rows, err := tx.Query(ctx, "EXPLAIN EXECUTE rollup_plan("+strings.Join(params, ", ")+")")
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		plan = strings.Join(lines, "\n")
		return err
	})
	return plan, err
}

// SumHoursPlan is Postgres's plan of the query SumHours runs for q, the
// plan it makes for any argument.
func SumHoursPlan(ctx context.Context, db *DB, q clicks.HourSums) (string, error) {
	query, args := sumHoursSQL(&q)
	return genericPlan(ctx, db, query, args)
}
