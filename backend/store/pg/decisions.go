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

// forgetAfter is how long past its expiry an id is kept: servers' clocks
// differ, and one behind must still find the ids it could bill.
const forgetAfter = time.Hour

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
		if _, err := tx.Exec(ctx, `DELETE FROM decisions WHERE expires_ns < $1`, nanos(at.Add(-forgetAfter))); err != nil {
			return false, err
		}
	}
	return tag.RowsAffected() == 1, nil
}

// Windows are clicks.Windows in the window_claims table: a row per
// billable click of a network on an ad.
type Windows struct{ db *DB }

var _ clicks.Windows = Windows{}

// Windows returns the database's windows.
func (db *DB) Windows() Windows { return Windows{db} }

// Claim implements clicks.Windows.
func (w Windows) Claim(ctx context.Context, network, adID string, at time.Time, limit int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var reason string
	err := w.db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		reason, err = claim(ctx, tx, network, adID, at, limit)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("postgres: windows: %w", err)
	}
	return reason, nil
}

// windowLockClass is the first key of the advisory locks that serialize
// each network's claims; the second is a hash of the network.
const windowLockClass = 0x61646c6b // "adlk"

// claim judges and records one claim in tx. The network's advisory lock,
// held to the commit, makes its claims take turns, and each statement of
// a READ COMMITTED transaction sees what the turns before it committed.
// A network's claims more than three days old are forgotten with it.
func claim(ctx context.Context, tx pgx.Tx, network, adID string, at time.Time, limit int) (string, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(windowLockClass), network)
	var repeat bool
	var n int64
	b.Queue(`SELECT EXISTS (SELECT 1 FROM window_claims WHERE network = $1 AND ad_id = $2 AND at_ns > $3 AND at_ns < $4),
		(SELECT count(*) FROM window_claims WHERE network = $1 AND day = $5)`,
		network, adID, nanos(at)-int64(clicks.AdWindow), nanos(at)+int64(clicks.AdWindow), dayOf(at)).
		QueryRow(func(r pgx.Row) error { return r.Scan(&repeat, &n) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return "", err
	}
	if repeat {
		return clicks.ReasonRepeat, nil
	}
	if limit > 0 && n >= int64(limit) {
		return clicks.ReasonNetworkCap, nil
	}
	b = &pgx.Batch{}
	b.Queue(`INSERT INTO window_claims (network, ad_id, at_ns, day) VALUES ($1, $2, $3, $4)`, network, adID, nanos(at), dayOf(at))
	b.Queue(`DELETE FROM window_claims WHERE network = $1 AND at_ns < $2`, network, nanos(at.Add(-3*24*time.Hour)))
	return "", tx.SendBatch(ctx, b).Close()
}
