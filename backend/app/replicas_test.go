package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
)

// replica builds a server with a data directory of its own on the
// Postgres database at url, signing with the replicas' shared key.
func replica(t *testing.T, url string) *App {
	t.Helper()
	cfg := testConfig(t)
	cfg.PostgresURL = url
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// click follows the ad URL u on h as a browser navigating to it, and
// returns the status.
func click(h http.Handler, u string) int {
	req := httptest.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestReplicasShareOneClickRecord: two servers on one Postgres database
// judge a click URL once between them: clicked on one it bills, on the
// other it is a repeat; and both report the same numbers, which are the
// click table's.
func TestReplicasShareOneClickRecord(t *testing.T) {
	url := testpg.New(t)
	a, b := replica(t, url), replica(t, url)

	status, body := get(t, a.Handler, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo")
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil || len(resp.Link) == 0 {
		t.Fatalf("search on A: %d %v %.200s", status, err, body)
	}
	ad := resp.Link[0].Ad
	ad = ad[strings.Index(ad, "/v1/redirect?"):]
	if got := click(a.Handler, ad); got != http.StatusFound {
		t.Fatalf("click on A: %d", got)
	}
	if got := click(b.Handler, ad); got != http.StatusFound {
		t.Fatalf("the same click on B: %d", got)
	}

	var logged []clicks.Click
	if err := b.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		logged = append(logged, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 2 || !logged[0].Billable || logged[1].Billable || logged[1].Reason != clicks.ReasonRepeat {
		t.Fatalf("the click table read on B: %+v, want the click billable then a repeat", logged)
	}

	now := time.Now()
	rollups := func(a *App) map[clicks.Rollup]clicks.Measures {
		out := map[clicks.Rollup]clicks.Measures{}
		if err := a.Rollups.ScanRollups(t.Context(), clicks.Day, now.AddDate(0, 0, -2), now.AddDate(0, 0, 1), func(r *clicks.Rollup) error {
			k := *r
			k.Measures = clicks.Measures{}
			out[k] = r.Measures
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	onA, onB := rollups(a), rollups(b)
	if len(onA) != 1 || len(onB) != 1 {
		t.Fatalf("rollup rows: %d on A, %d on B, want 1", len(onA), len(onB))
	}
	for k, m := range onA {
		if onB[k] != m {
			t.Errorf("A reports %+v, B %+v", m, onB[k])
		}
		if m.Clicks != 2 || m.Billable != 1 || m.SpendMicros != logged[0].BidMicros {
			t.Errorf("the report counts %+v; the click table holds 2 clicks, 1 billable at %d", m, logged[0].BidMicros)
		}
	}
	spentA, errA := a.Rollups.SpentOn(t.Context(), logged[0].Advertiser, clicks.BudgetDayIn(logged[0].Time, time.UTC))
	spentB, errB := b.Rollups.SpentOn(t.Context(), logged[0].Advertiser, clicks.BudgetDayIn(logged[0].Time, time.UTC))
	if errA != nil || errB != nil || spentA != spentB || spentA != logged[0].BidMicros {
		t.Errorf("spend: A %d %v, B %d %v, want %d", spentA, errA, spentB, errB, logged[0].BidMicros)
	}
	for _, r := range []*App{a, b} {
		if status, body := get(t, r.Handler, "/readyz"); status != http.StatusOK {
			t.Errorf("/readyz: %d %s", status, body)
		}
	}
}

// A Postgres URL that reaches no server fails New, before the server
// answers anything from a record it cannot keep.
func TestNewNeedsItsPostgres(t *testing.T) {
	cfg := testConfig(t)
	cfg.PostgresURL = "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "postgres") {
		t.Errorf("New = %v, want a postgres error", err)
	}
}

// /readyz says degraded, still 200, while the server cannot reach the
// Postgres that keeps its clicks: its clicks spool, and visitors land.
func TestReadyzDegradedWithoutPostgres(t *testing.T) {
	a := replica(t, testpg.New(t))
	if status, body := get(t, a.Handler, "/readyz"); status != http.StatusOK || strings.Contains(body, "degraded") {
		t.Fatalf("/readyz: %d %s", status, body)
	}
	a.pg.Close()
	if status, body := get(t, a.Handler, "/readyz"); status != http.StatusOK || !strings.Contains(body, `"status":"degraded"`) ||
		!strings.Contains(body, "postgres does not answer") {
		t.Errorf("/readyz without Postgres: %d %s, want 200 degraded", status, body)
	}
}
