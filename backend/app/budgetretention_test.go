package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// TestBudgetPastDayOutlivesRetention: GET /v2/budget reads a day up to
// api.BudgetDays back, and the retention pass, which forgets old spend,
// keeps that day's: an advertiser in Pago Pago (UTC-11, whose date is
// UTC's day before) reads the bid its click cost on the oldest day it may
// ask for, not 0.00, after the pass that runs at start. So with the
// bbolt file and with Postgres.
func TestBudgetPastDayOutlivesRetention(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testBudgetPastDayOutlivesRetention(t, nil) })
	t.Run("postgres", func(t *testing.T) { testBudgetPastDayOutlivesRetention(t, testpg.Start(t)) })
}

func testBudgetPastDayOutlivesRetention(t *testing.T, pg *testpg.Server) {
	const (
		token = "shop-report-token-0123"
		zone  = "Pacific/Pago_Pago"
		bid   = 150_000
	)
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.AdvertisersFile = filepath.Join(t.TempDir(), "advertisers.json")
	writeFile(t, cfg.AdvertisersFile, []byte(`{"advertisers":[{"id":"shop.example","report_token":"`+token+
		`","daily_budget":"1.00","currency":"EUR","timezone":"`+zone+`"}]}`))
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) // 23:00 on the 23rd in Pago Pago
	oldest := clicks.BudgetDayIn(now, loc) - api.BudgetDays
	at := oldest.Start(loc).Add(12 * time.Hour)

	c := clicks.Click{ID: clicks.NewID(), Time: at, AdID: "SHOP.1", Advertiser: "shop.example", APIKey: "demo", SiteID: "demo",
		IP: "192.0.2.1", BidMicros: bid, Currency: "EUR"}
	u := clicks.Use{Budget: 1_000_000, Currency: "EUR", Zone: zone}
	if pg != nil {
		cfg.PostgresURL = pg.URL()
		db, err := pgstore.Open(t.Context(), cfg.PostgresURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Ledger().Record(t.Context(), &c, u); err != nil {
			t.Fatal(err)
		}
	} else {
		db, err := store.Open(cfg.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		ledger, err := clicks.NewLedger(db)
		if err != nil {
			t.Fatal(err)
		}
		if err := ledger.Record(t.Context(), &c, u); err != nil {
			t.Fatal(err)
		}
		// The server opens the file itself.
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Billable {
		t.Fatalf("the click: %q, want billed", c.Reason)
	}

	passed := make(chan error, 1)
	a, err := New(cfg, Options{Now: func() time.Time { return now }, RetentionPassed: func(err error) {
		select {
		case passed <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	day := at.In(loc).Format(time.DateOnly)
	req, err := http.NewRequest(http.MethodGet, "http://localhost/v2/budget?day="+day, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	status, body := rec.Code, rec.Body.String()
	var got struct{ Day, Spent string }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.Day != day || got.Spent != "0.15" {
		t.Errorf("/v2/budget?day=%s after the retention pass: %d %.300s, want 0.15 spent", day, status, body)
	}
}
