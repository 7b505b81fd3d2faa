package pgstore

import (
	"context"
	"fmt"
	"time"
)

// TryReviewTurn takes the site review's lock, a session advisory lock, on
// a connection it holds from the pool until release, and returns false
// at once when another session holds it, so that reviews run one at a
// time, one of them reading. A command that dies or loses its connection
// loses the lock with its session.
func (db *DB) TryReviewTurn(ctx context.Context) (release func(), ok bool, err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: site review lock: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`,
		int32(reviewLockClass)).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("postgres: site review lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var held bool
		err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, int32(reviewLockClass)).Scan(&held)
		if err != nil || !held {
			// Its session's end lets the lock go.
			c := conn.Hijack()
			_ = c.Close(ctx)
			return
		}
		conn.Release()
	}, true, nil
}
