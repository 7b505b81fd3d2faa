package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
)

// endBackends has Postgres end every connection of pool, filled first
// with idle ones (testpg.EndConnections).
func endBackends(t *testing.T, pool *pgxpool.Pool, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testpg.EndConnections(t, ctx, pool, url, 8)
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
