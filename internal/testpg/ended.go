package testpg

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EndConnections fills pool with conns idle connections and has Postgres
// end every backend of the database at url but the one asking (57P01, as
// a restart of Postgres or an administrator's command does), from a
// connection of its own, and waits until they are gone: the pool learns
// it at each one's next use, which comes well before it would ping them.
func EndConnections(t testing.TB, ctx context.Context, pool *pgxpool.Pool, url string, conns int) {
	t.Helper()
	pool.Reset() // those ended before and not used since
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Go(func() {
			_, err := pool.Exec(ctx, `SELECT pg_sleep(0.05)`)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("filling the pool: %v", err)
		}
	}
	// Counted whole: the server's own work each second (the credits'
	// epoch, the budget flags) may hold one or two of them at this moment.
	if n := pool.Stat().TotalConns(); n < int32(conns) {
		t.Fatalf("the pool holds %d connections, want %d", n, conns)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	rows, _ := admin.Query(ctx, `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND datname = current_database()`)
	var pids []int32
	var pid int32
	var ended bool
	if _, err := pgx.ForEachRow(rows, []any{&pid, &ended}, func() error {
		if ended {
			pids = append(pids, pid)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(pids) < conns {
		t.Fatalf("ended %d backends, want at least %d", len(pids), conns)
	}
	for {
		var left bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1))`, pids).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if !left {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
