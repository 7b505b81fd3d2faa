package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
)

// Decisions are clicks.Decisions in the decisions table: one row per id
// used, which a second insert of the id finds.
type Decisions struct{ db *DB }

var _ clicks.Decisions = Decisions{}

// Decisions returns the database's decisions.
func (db *DB) Decisions() Decisions { return Decisions{db} }

// Use implements clicks.Decisions.
func (d Decisions) Use(ctx context.Context, id string, at, expires time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !at.Before(expires) {
		return false, nil
	}
	var first bool
	err := d.db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		first, err = useDecision(ctx, tx, id, at, expires)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: decisions: %w", err)
	}
	return first, nil
}

// forgetEvery is how many uses, on average, one forgets the ids long
// expired.
const forgetEvery = 1024

// forgetAfter is how long past its expiry an id is kept: as long as a
// click made before the expiry may be shipped from a server's spool and
// still bill (clicks.ShipHorizon), so that a replay spooled elsewhere
// finds the id used live, and an hour more, as servers' clocks differ.
const forgetAfter = clicks.ShipHorizon + time.Hour

// useDecision records a use of id in tx and reports whether it was the
// first. A concurrent insert of the same id waits for this one's
// transaction and then finds the row; one after a rollback inserts it.
func useDecision(ctx context.Context, tx pgx.Tx, id string, at, expires time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO decisions (id, expires_ns) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		id, nanos(expires))
	if err != nil {
		return false, err
	}
	if rand.IntN(forgetEvery) == 0 {
		if err := forgetDecisions(ctx, tx, at); err != nil {
			return false, err
		}
	}
	return tag.RowsAffected() == 1, nil
}

// forgetBefore is the expiry, in nanoseconds, of the ids a use at at
// forgets: those that expired before it.
func forgetBefore(at time.Time) int64 { return nanos(at.Add(-forgetAfter)) }

// forgetDecisions forgets in tx the ids a use at at forgets.
func forgetDecisions(ctx context.Context, tx pgx.Tx, at time.Time) error {
	_, err := tx.Exec(ctx, `DELETE FROM decisions WHERE expires_ns < $1`, forgetBefore(at))
	return err
}

// Windows are clicks.Windows in the window_claims table: a row per
// billable click of a network on an ad.
type Windows struct{ db *DB }

var _ clicks.Windows = Windows{}

// Windows returns the database's windows.
func (db *DB) Windows() Windows { return Windows{db} }

// Claim implements clicks.Windows.
func (w Windows) Claim(ctx context.Context, c clicks.Claim) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var reason string
	err := w.db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		reason, err = claim(ctx, tx, c)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("postgres: windows: %w", err)
	}
	return reason, nil
}

// claim judges and records one claim in tx. The prefix's and the network's
// advisory locks, held to the commit, make their claims take turns, and
// each statement of a READ COMMITTED transaction sees what the turns
// before it committed. The prefix's lock covers its counts on all ads and
// on each. A network's claims more than three days old are forgotten with
// it.
func claim(ctx context.Context, tx pgx.Tx, c clicks.Claim) (string, error) {
	counted := c.Prefix != "" && c.PrefixLimit > 0
	adCounted := c.Prefix != "" && c.PrefixAdLimit > 0
	b := &pgx.Batch{}
	if counted || adCounted {
		b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(prefixLockClass), c.Prefix)
	}
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(windowLockClass), c.Network)
	var repeat bool
	var n, p, pa int64
	at, day := nanos(c.At), dayOf(c.At)
	b.Queue(`SELECT EXISTS (SELECT 1 FROM window_claims WHERE network = $1 AND ad_id = $2 AND at_ns > $3 AND at_ns < $4),
		(SELECT count(*) FROM window_claims WHERE network = $1 AND day = $5),
		coalesce((SELECT clicks FROM prefix_clicks WHERE prefix = $6 AND day = $5), 0),
		coalesce((SELECT clicks FROM prefix_ad_clicks WHERE prefix = $6 AND ad_id = $2 AND day = $5), 0)`,
		c.Network, c.AdID, at-int64(clicks.AdWindow), at+int64(clicks.AdWindow), day, c.Prefix).
		QueryRow(func(r pgx.Row) error { return r.Scan(&repeat, &n, &p, &pa) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return "", err
	}
	switch {
	case repeat:
		return clicks.ReasonRepeat, nil
	case c.Limit > 0 && n >= int64(c.Limit):
		return clicks.ReasonNetworkCap, nil
	case adCounted && pa >= int64(c.PrefixAdLimit):
		return clicks.ReasonPrefixAdCap, nil
	case counted && p >= int64(c.PrefixLimit):
		return clicks.ReasonPrefixCap, nil
	}
	b = &pgx.Batch{}
	b.Queue(`INSERT INTO window_claims (network, ad_id, at_ns, day) VALUES ($1, $2, $3, $4)`, c.Network, c.AdID, at, day)
	b.Queue(`DELETE FROM window_claims WHERE network = $1 AND at_ns < $2`, c.Network, nanos(c.At.Add(-3*24*time.Hour)))
	if counted {
		b.Queue(`INSERT INTO prefix_clicks (prefix, day, clicks) VALUES ($1, $2, 1)
			ON CONFLICT (prefix, day) DO UPDATE SET clicks = prefix_clicks.clicks + 1`, c.Prefix, day)
	}
	if adCounted {
		b.Queue(`INSERT INTO prefix_ad_clicks (prefix, ad_id, day, clicks) VALUES ($1, $2, $3, 1)
			ON CONFLICT (prefix, ad_id, day) DO UPDATE SET clicks = prefix_ad_clicks.clicks + 1`, c.Prefix, c.AdID, day)
	}
	if (counted || adCounted) && rand.IntN(forgetEvery) == 0 {
		b.Queue(`DELETE FROM prefix_clicks WHERE day < $1`, day-2)
		b.Queue(`DELETE FROM prefix_ad_clicks WHERE day < $1`, day-2)
	}
	return "", tx.SendBatch(ctx, b).Close()
}
