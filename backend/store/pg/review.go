package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TryReviewTurn takes the site review's lock, a session advisory lock, on
// a connection of its own, opened with the pool's settings and held
// until release, and returns false at once when another session holds
// it, so that reviews run one at a time, one of them reading. The pool's
// connections are left to the review's reads: a pool of one
// (pool_max_conns=1) would otherwise wait for the connection the lock
// holds. A command that dies or loses its connection loses the lock with
// its session.
func (db *DB) TryReviewTurn(ctx context.Context) (release func(), ok bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, false, fmt.Errorf("postgres: site review lock: %w", err)
	}
	closeConn := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`,
		int32(reviewLockClass)).Scan(&ok); err != nil {
		closeConn()
		return nil, false, fmt.Errorf("postgres: site review lock: %w", err)
	}
	if !ok {
		closeConn()
		return nil, false, nil
	}
	return func() {
		// Unlocked before the close, should a pooler keep the server's
		// session; the close alone lets it go otherwise.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, int32(reviewLockClass))
		_ = conn.Close(ctx)
	}, true, nil
}
