package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/retention"
	"github.com/adlink/adlink/backend/store"
)

// TestRetentionRunsAtStart: a server started over clicks older than the
// retention exports them to <data>/export and removes them at once, in
// the background; reports keep counting them.
func TestRetentionRunsAtStart(t *testing.T) {
	cfg := testConfig(t)
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	old := now.Add(-cfg.Retention - 48*time.Hour)
	db, err := store.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := clicks.NewLedger(db)
	if err != nil {
		t.Fatal(err)
	}
	c := clicks.Click{Time: old, AdID: "handy-bestkauf.de", APIKey: "demo", SiteID: "demo", IP: "192.0.2.1", Reason: clicks.ReasonBot}
	if err := ledger.Record(t.Context(), &c, clicks.Use{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
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
	file := filepath.Join(cfg.DataDir, "export", retention.FileName(clicks.ClickLog, old.Truncate(24*time.Hour)))
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the old day's export: %v", err)
	}
	n := 0
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(clicks.Click) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d old clicks still in the state file", n)
	}
	var counted int64
	if err := a.Rollups.ScanRollups(context.Background(), clicks.Day, old.AddDate(0, 0, -1), now, func(r *clicks.Rollup) error {
		counted += r.Clicks
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if counted != 1 {
		t.Errorf("the rollups count %d clicks, want the 1 exported", counted)
	}
}
