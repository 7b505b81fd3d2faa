package app

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3/lock"

	"github.com/adlink/adlink/internal/testpg"
)

// Cancelling Options.Start (the server's SIGTERM) ends a start whose
// Postgres migrations wait: here for the lock of another server
// migrating the same database, which it holds as long as it likes.
func TestStartCancelledWhileMigrating(t *testing.T) {
	url := testpg.New(t) + "&application_name=adlink_start_cancelled"
	other, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	if _, err := other.Exec(t.Context(), "SELECT pg_advisory_lock($1)", lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	start, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancelled once the start has tried the lock; the other server
	// lets it go only after New returns, or if it never would.
	released := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var tried bool
			if err := other.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE application_name = 'adlink_start_cancelled' AND pid <> pg_backend_pid()
				AND query LIKE '%pg_try_advisory_lock%')`).Scan(&tried); err != nil {
				t.Error(err)
				return
			}
			if tried {
				cancel()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-released:
		case <-time.After(time.Minute):
		}
		if _, err := other.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", lock.DefaultLockID); err != nil {
			t.Error(err)
		}
	}()
	cfg := testConfig(t)
	cfg.PostgresURL = url
	a, err := New(cfg, Options{Start: start})
	close(released)
	<-done
	if err == nil {
		a.Close()
		t.Fatal("the start went on migrating after it was cancelled")
	}
}
