package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adlink/adlink/backend/clicks"
)

var _ clicks.Exports = Retainer{}

// Exported implements clicks.Exports.
func (r Retainer) Exported(ctx context.Context, log clicks.RawLog, day time.Time) (clicks.Export, bool, error) {
	if _, err := table(log); err != nil {
		return clicks.Export{}, false, err
	}
	if _, _, err := dayRange(day); err != nil {
		return clicks.Export{}, false, err
	}
	var e clicks.Export
	err := r.db.rerun(ctx, func() (err error) {
		e, err = scanExport(r.db.pool.QueryRow(ctx, `SELECT `+exportColumns+` FROM exports WHERE log = $1 AND day = $2 AND from_seq = 0`,
			string(log), day))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return clicks.Export{}, false, nil
	}
	if err != nil {
		return clicks.Export{}, false, fmt.Errorf("postgres: exported: %w", err)
	}
	return e, true, nil
}

// DayExports implements clicks.Exports.
func (r Retainer) DayExports(ctx context.Context, log clicks.RawLog, day time.Time) ([]clicks.Export, error) {
	if _, err := table(log); err != nil {
		return nil, err
	}
	if _, _, err := dayRange(day); err != nil {
		return nil, err
	}
	var es []clicks.Export
	err := r.db.query(ctx, func(rows pgx.Rows) error {
		e, err := scanExport(rows)
		es = append(es, e)
		return err
	}, `SELECT `+exportColumns+` FROM exports WHERE log = $1 AND day = $2 ORDER BY from_seq`, string(log), day)
	if err != nil {
		return nil, fmt.Errorf("postgres: day exports: %w", err)
	}
	return es, nil
}

// RecordExport implements clicks.Exports: the insert that finds the day
// recorded from e.FromSeq inserts nothing, and the record it found is
// read back; so it runs again (rerun) on a connection the server ended.
func (r Retainer) RecordExport(ctx context.Context, e clicks.Export) (clicks.Export, error) {
	if _, err := table(e.Log); err != nil {
		return clicks.Export{}, err
	}
	if _, _, err := dayRange(e.Day); err != nil {
		return clicks.Export{}, err
	}
	if e.Seq <= 0 {
		return clicks.Export{}, fmt.Errorf("postgres: record export: seq %d: want the export's mark", e.Seq)
	}
	if e.FromSeq < 0 || e.FromSeq >= e.Seq {
		return clicks.Export{}, fmt.Errorf("postgres: record export: from seq %d: want 0 up to below seq %d", e.FromSeq, e.Seq)
	}
	var first clicks.Export
	err := r.db.rerun(ctx, func() error {
		tag, err := r.db.pool.Exec(ctx, `INSERT INTO exports (log, day, exported_at, host, path, rows, sha256, seq, from_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (log, day, from_seq) DO NOTHING`,
			string(e.Log), e.Day, e.At, e.Host, e.Path, int64(e.Rows), e.SHA256[:], e.Seq, e.FromSeq)
		if err != nil || tag.RowsAffected() == 1 {
			first = e
			return err
		}
		first, err = scanExport(r.db.pool.QueryRow(ctx, `SELECT `+exportColumns+` FROM exports
			WHERE log = $1 AND day = $2 AND from_seq = $3`, string(e.Log), e.Day, e.FromSeq))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		err = errors.New("the day's record is gone")
	}
	if err != nil {
		return clicks.Export{}, fmt.Errorf("postgres: record export: %w", err)
	}
	return first, nil
}

const exportColumns = `log, day, exported_at, host, path, rows, sha256, seq, from_seq`

func scanExport(row pgx.Row) (clicks.Export, error) {
	var (
		e    clicks.Export
		log  string
		rows int64
		sum  []byte
		seq  *int64
	)
	if err := row.Scan(&log, &e.Day, &e.At, &e.Host, &e.Path, &rows, &sum, &seq, &e.FromSeq); err != nil {
		return clicks.Export{}, err
	}
	// A record made before seq was kept: its export held every row.
	e.Seq = math.MaxInt64
	if seq != nil {
		e.Seq = *seq
	}
	if len(sum) != len(e.SHA256) {
		return clicks.Export{}, fmt.Errorf("a digest of %d bytes", len(sum))
	}
	e.Log, e.Rows = clicks.RawLog(log), int(rows)
	e.Day, e.At = e.Day.UTC(), e.At.UTC()
	copy(e.SHA256[:], sum)
	return e, nil
}

// markLockTimeout bounds how long Mark waits for the inserts in flight,
// during which new ones wait behind it.
const markLockTimeout = "2s"

// Mark implements clicks.Exports: the table's highest seq, read under a
// lock that lets every insert in flight end and holds new ones back, so
// that no row at or below it commits later. A seq is drawn inside the
// insert, which holds the lock Mark waits for.
func (r Retainer) Mark(ctx context.Context, log clicks.RawLog) (int64, error) {
	t, err := table(log)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = pgx.BeginFunc(ctx, beginner{r.db}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+markLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+t+` IN SHARE MODE`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM `+t).Scan(&seq)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: mark %s: %w", t, err)
	}
	return seq, nil
}

// TryTurn takes the retention lock, a session advisory lock, on a
// connection it holds from the pool until the turn's Release, and returns
// false at once when another session holds it. A server that dies or
// loses its connection loses the lock with its session, and another
// server's next pass takes it; Held asks on that connection, which also
// keeps it from idling out (idle_session_timeout, a proxy's) in a long
// pass.
func (r Retainer) TryTurn(ctx context.Context) (clicks.Turn, bool, error) {
	conn, err := r.db.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: retention lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`,
		int32(retainLockClass)).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("postgres: retention lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return turn{conn}, true, nil
}

// turn is the retention lock held on conn.
type turn struct{ conn *pgxpool.Conn }

// Held implements clicks.Turn: a session's advisory lock is its own until
// it lets go, so the session answering is the lock held.
func (t turn) Held(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var held bool
	if err := t.conn.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory'
		AND pid = pg_backend_pid() AND classid = $1 AND objsubid = 2 AND granted`, int64(retainLockClass)).Scan(&held); err != nil {
		return fmt.Errorf("postgres: retention lock: %w", err)
	}
	if !held {
		return errors.New("postgres: retention lock: no longer held")
	}
	return nil
}

// Release implements clicks.Turn: it releases the retention lock and the
// connection; a connection that could not say so is closed, which ends
// its session and the lock with it.
func (t turn) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var held bool
	err := t.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, int32(retainLockClass)).Scan(&held)
	if err != nil || !held {
		c := t.conn.Hijack()
		_ = c.Close(ctx)
		return
	}
	t.conn.Release()
}
