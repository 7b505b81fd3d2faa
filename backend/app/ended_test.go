package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
)

// endBackends fills pool with idle connections and has Postgres end
// every backend of the database but the one asking (57P01, as a restart
// of Postgres or an administrator's command does), waiting until they are
// gone: well before the pool would ping its idle connections.
func endBackends(t *testing.T, pool *pgxpool.Pool, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const conns = 8
	pool.Reset() // those ended before and not used since
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			if _, err := pool.Exec(ctx, `SELECT pg_sleep(0.05)`); err != nil {
				t.Errorf("filling the pool: %v", err)
			}
		})
	}
	wg.Wait()
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

// TestEndedConnectionsFailNoRequest: once Postgres ended the server's
// connections (its restart, an administrator's command), a click is
// billed in Postgres at once, not spooled, and a report answers 200, not
// 503: the pool's ended connections are replaced, not reported.
func TestEndedConnectionsFailNoRequest(t *testing.T) {
	pg := testpg.Start(t)
	cfg := testConfig(t)
	cfg.PostgresURL = pg.URL()
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	logs := &syncLog{}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	report := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/v2/report?group_by=day", nil)
		req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
		rec := httptest.NewRecorder()
		a.Handler.ServeHTTP(rec, req)
		return rec
	}
	clickFrom(t, a.Handler, adURL(t, a.Handler), 0)
	spooled := metric(t, a, "adlink_clicks_spooled_total")

	for n := 1; n <= 3; n++ {
		u := adURL(t, a.Handler)
		endBackends(t, a.pg.Pool(), pg.URL())
		id := clickFrom(t, a.Handler, u, n)
		if v := recorded(t, pg.URL())[id]; len(v) != 1 || v[0] != "billable" {
			t.Errorf("click %d, after Postgres ended the connections: recorded %v, want once billable", n, v)
		}
		endBackends(t, a.pg.Pool(), pg.URL())
		if rec := report(); rec.Code != http.StatusOK {
			t.Errorf("a report after Postgres ended the connections: %d %s", rec.Code, rec.Body)
		}
	}
	if got := metric(t, a, "adlink_clicks_spooled_total"); got != spooled {
		t.Errorf("adlink_clicks_spooled_total %s, was %s: a click was spooled\n%s", got, spooled, grep(logs.String(), "postgres"))
	}
	if rec := report(); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"clicks":4,"billable_clicks":4,`) {
		t.Errorf("the report after 4 clicks: %d %s", rec.Code, rec.Body)
	}
}
