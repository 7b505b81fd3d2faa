package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/match"
)

// TestEndedConnectionsFailNothing: once Postgres ended every pooled
// connection, each operation of the store succeeds at once, on new
// connections: the transactions whose BEGIN met an ended connection, and
// the statements that read or that may run twice.
func TestEndedConnectionsFailNothing(t *testing.T) {
	srv := testpg.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Now().UTC()
	ledger, rollups, removals := db.Ledger(), db.Rollups(), db.Removals(nil)
	n := 0
	click := func() *clicks.Click {
		n++
		return &clicks.Click{ID: "ended-" + string(rune('a'+n)), Time: at, AdID: "SHOP.1.A", AdType: "advertiser", Type: "search",
			APIKey: "k", SiteID: "s", IP: "198.51.100." + string(rune('0'+n)), Advertiser: "shop.example", BidMicros: 100,
			Currency: "EUR", Billable: true}
	}
	removed := catalog.RemovedAd{Ad: match.Ad{ID: "SHOP.1.R", Landing: "https://shop.example/r"}, Until: at.Add(time.Hour)}
	ops := []struct {
		name string
		run  func() error
	}{
		{"Ledger.Record", func() error {
			c := click()
			if err := ledger.Record(ctx, c, clicks.Use{}); err != nil {
				return err
			}
			if !c.Billable {
				t.Errorf("click %s not billed: %s", c.ID, c.Reason)
			}
			return nil
		}},
		{"Ledger.Ship", func() error {
			return ledger.Ship(ctx, []clicks.Spooled{{Click: *click()}})
		}},
		{"Rollups.ScanRollups", func() error {
			rows := 0
			err := rollups.ScanRollups(ctx, clicks.Day, at.Add(-48*time.Hour), at.Add(48*time.Hour), func(*clicks.Rollup) error {
				rows++
				return nil
			})
			if err == nil && rows == 0 {
				t.Error("ScanRollups read no rows after clicks were recorded")
			}
			return err
		}},
		{"Rollups.Spent", func() error {
			spent, err := rollups.Spent(ctx, "shop.example", at)
			if err == nil && spent == 0 {
				t.Error("Spent is 0 after billed clicks")
			}
			return err
		}},
		{"Removals.Share", func() error {
			got, err := removals.Share(ctx, []catalog.RemovedAd{removed}, at)
			if err == nil && len(got) != 1 {
				t.Errorf("Share returned %d ads, want 1", len(got))
			}
			return err
		}},
		{"Decisions.Use", func() error {
			_, err := db.Decisions().Use(ctx, "ended-decision", at, at.Add(time.Hour))
			return err
		}},
		{"Windows.Claim", func() error {
			_, err := db.Windows().Claim(ctx, clicks.Claim{Network: "198.51.100.0", AdID: "SHOP.1.A", At: at})
			return err
		}},
		{"Clicks.Scan", func() error {
			return db.Clicks().Scan(ctx, time.Time{}, time.Time{}, func(clicks.Click) error { return nil })
		}},
		{"Impressions.Scan", func() error {
			return db.Impressions().Scan(ctx, time.Time{}, time.Time{}, func(clicks.Impression) error { return nil })
		}},
		{"Pages.Len", func() error {
			_, err := db.Pages(0, 0).Len(ctx)
			return err
		}},
		{"Pages.Get", func() error {
			_, err := db.Pages(0, 0).Get(ctx, "https://pub.example/a")
			return err
		}},
	}
	for _, op := range ops {
		testpg.EndConnections(t, ctx, db.Pool(), srv.URL(), 8)
		if err := op.run(); err != nil {
			t.Errorf("%s after Postgres ended the pool's connections: %v", op.name, err)
		}
	}
}

// TestEndedTransactionRunsOnce: a transaction whose connection Postgres
// ends once its work began is not run again (not every one may run
// twice): the caller gets the error, and the pool serves the next one.
func TestEndedTransactionRunsOnce(t *testing.T) {
	srv := testpg.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs := 0
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		runs++
		_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return err
	})
	if err == nil || runs != 1 {
		t.Fatalf("a transaction ended as it ran: %d runs, %v; want 1 and its error", runs, err)
	}
	if err := db.InTx(ctx, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, `SELECT 1`); return err }); err != nil {
		t.Errorf("the next transaction: %v", err)
	}
}

// listErr is an error whose values Go cannot compare with ==.
type listErr []string

func (e listErr) Error() string { return strings.Join(e, "; ") }

// TestScansReturnTheCallersError: a scan whose fn fails returns fn's
// error as it is, unwrapped, an error type that == cannot compare
// included.
func TestScansReturnTheCallersError(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Now().UTC()
	c := &clicks.Click{ID: "scan-1", Time: at, AdID: "SHOP.1.A", AdType: "advertiser", Type: "search", APIKey: "k",
		SiteID: "s", IP: "198.51.100.1", Advertiser: "shop.example", BidMicros: 100, Currency: "EUR", Billable: true}
	if err := db.Ledger().Record(t.Context(), c, clicks.Use{}); err != nil {
		t.Fatal(err)
	}
	from, to := at.Add(-48*time.Hour), at.Add(48*time.Hour)
	for name, scan := range map[string]func(fail error) error{
		"Clicks.Scan": func(fail error) error {
			return db.Clicks().Scan(t.Context(), from, to, func(clicks.Click) error { return fail })
		},
		"Rollups.ScanRollups": func(fail error) error {
			return db.Rollups().ScanRollups(t.Context(), clicks.Day, from, to, func(*clicks.Rollup) error { return fail })
		},
	} {
		fail := listErr{"stop", name}
		got := scan(fail)
		if e, ok := got.(listErr); !ok || e.Error() != fail.Error() {
			t.Errorf("%s: %v (%T), want fn's error as it is", name, got, got)
		}
	}
}
