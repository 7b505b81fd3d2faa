package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/pages"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/backend/store/storetest"
	"github.com/adlink/adlink/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// opener opens the database of a new, empty Postgres database each time
// it is called again, as a restarted server would.
func opener[S any](t *testing.T, of func(*pgstore.DB) S) storetest.Opener[S] {
	url := testpg.New(t)
	return func() (S, func() error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return of(db), func() error { db.Close(); return nil }
	}
}

func TestClicksKeepTheStoreContract(t *testing.T) {
	storetest.Clicks(t, func(t *testing.T) storetest.Opener[clicks.Store] {
		return opener(t, func(db *pgstore.DB) clicks.Store { return db.Clicks() })
	})
}

func TestClicksKeepTheListerContract(t *testing.T) {
	storetest.Lister(t, func(t *testing.T) storetest.Opener[storetest.ListedStore] {
		return opener(t, func(db *pgstore.DB) storetest.ListedStore { return db.Clicks() })
	})
}

func TestImpressionsKeepTheContract(t *testing.T) {
	storetest.Impressions(t, func(t *testing.T) storetest.Opener[clicks.Impressions] {
		return opener(t, func(db *pgstore.DB) clicks.Impressions { return db.Impressions() })
	})
}

func TestDecisionsKeepTheContract(t *testing.T) {
	storetest.Decisions(t, func(t *testing.T) storetest.Opener[clicks.Decisions] {
		return opener(t, func(db *pgstore.DB) clicks.Decisions { return db.Decisions() })
	})
}

func TestTagsKeepTheContract(t *testing.T) {
	storetest.Tags(t, func(t *testing.T) storetest.Opener[clicks.Tags] {
		return opener(t, func(db *pgstore.DB) clicks.Tags { return db.Tags() })
	})
}

func TestWindowsKeepTheContract(t *testing.T) {
	storetest.Windows(t, func(t *testing.T) storetest.Opener[clicks.Windows] {
		return opener(t, func(db *pgstore.DB) clicks.Windows { return db.Windows() })
	})
}

func TestLedgerKeepsTheContract(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) storetest.Opener[storetest.LedgerParts] {
		return opener(t, func(db *pgstore.DB) storetest.LedgerParts {
			return storetest.LedgerParts{Ledger: db.Ledger(), Log: db.Clicks(), Rollups: db.Rollups(), Impressions: db.Impressions(), Spend: db.Rollups()}
		})
	})
}

// Servers starting at once on one database migrate it once, in turn.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	url := testpg.New(t)
	const n = 4
	var wg sync.WaitGroup
	dbs := make([]*pgstore.DB, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = pgstore.Open(t.Context(), url) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("open %d: %v", i, errs[i])
			continue
		}
		defer dbs[i].Close()
	}
	if t.Failed() {
		return
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var applied, distinct int
	if err := dbs[0].Pool().QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version
		WHERE version_id > 0`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied != len(files) || distinct != len(files) {
		t.Errorf("%d migrations recorded, %d distinct, want each of the %d once", applied, distinct, len(files))
	}
}

// A client's bytes that Postgres cannot keep as text (NUL, invalid UTF-8)
// in a click or an impression are kept as U+FFFD, as the bbolt store's
// JSON keeps them, rather than failing the click.
func TestBytesPostgresRefusesAreReplaced(t *testing.T) {
	db, err := pgstore.Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c := clicks.Click{Time: at, AdID: "a\x00b", Type: "search", APIKey: "k", SiteID: "s\xff", IP: "192.0.2.1",
		UserAgent: "Mozilla/5.0 \x00\xc3(", YkTag: "t\x00"}
	if err := db.Ledger().Record(t.Context(), &c, clicks.Use{D: "d", Expires: at.Add(time.Hour)}); err != nil || !c.Billable {
		t.Fatalf("Record: %v, billable %v %q", err, c.Billable, c.Reason)
	}
	imp := clicks.Impression{Time: at, AdID: "a\x00b", Type: "search", APIKey: "k", Page: "https://blog.example/\xff", UserAgent: "\x00"}
	if _, err := db.Impressions().Append(t.Context(), []clicks.Impression{imp}); err != nil {
		t.Fatalf("Append impression: %v", err)
	}
	var got []clicks.Click
	db.Clicks().Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error { got = append(got, c); return nil })
	if len(got) != 1 || got[0].AdID != "a\uFFFDb" || got[0].SiteID != "s\uFFFD" || got[0].UserAgent != "Mozilla/5.0 \uFFFD\uFFFD(" {
		t.Errorf("logged %+v", got)
	}
	n := 0
	db.Rollups().ScanRollups(t.Context(), clicks.DayAd, at.Truncate(24*time.Hour), at.Add(24*time.Hour), func(r *clicks.Rollup) error {
		if r.AdID == "a\uFFFDb" && r.Clicks == 1 && r.Impressions == 1 {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Errorf("the click and the impression are not counted in one row of their ad")
	}
}

func TestRetainerKeepsTheContract(t *testing.T) {
	storetest.Retainer(t, func(t *testing.T) storetest.Opener[storetest.RetainerParts] {
		return opener(t, func(db *pgstore.DB) storetest.RetainerParts {
			return storetest.RetainerParts{Retainer: db.Retainer(), Log: db.Clicks(), Impressions: db.Impressions(), Rollups: db.Rollups()}
		})
	})
}

// Two servers' ledgers on one database (each its own pool and batches)
// judge as one: of concurrent clicks of one decision, one bills; and an
// advertiser's budget holds over the clicks of both.
func TestTwoServersShareOneLedger(t *testing.T) {
	url := testpg.New(t)
	var servers [2]*pgstore.DB
	for i := range servers {
		db, err := pgstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		servers[i] = db
	}
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	const bid, budget, n = 300_000, 7 * 300_000, 40
	var wg sync.WaitGroup
	var sameBilled, budgetBilled atomic.Int32
	for i := range n {
		wg.Go(func() {
			c := clicks.Click{Time: at, AdID: "a", Type: "search", APIKey: "k", SiteID: "s", IP: fmt.Sprintf("198.51.100.%d", i+1)}
			if err := servers[i%2].Ledger().Record(t.Context(), &c, clicks.Use{D: "same", Expires: at.Add(time.Hour)}); err != nil {
				t.Error(err)
			}
			if c.Billable {
				sameBilled.Add(1)
			}
			b := clicks.Click{Time: at, AdID: "b", Type: "search", APIKey: "k", SiteID: "s", IP: fmt.Sprintf("203.0.113.%d", i+1),
				Advertiser: "shop.example", BidMicros: bid, Currency: "EUR"}
			if err := servers[(i+1)%2].Ledger().Record(t.Context(), &b, clicks.Use{D: fmt.Sprint("b", i), Expires: at.Add(time.Hour),
				Budget: budget}); err != nil {
				t.Error(err)
			}
			if b.Billable {
				budgetBilled.Add(1)
			}
		})
	}
	wg.Wait()
	if got := sameBilled.Load(); got != 1 {
		t.Errorf("%d of %d clicks of one decision over two servers billed, want 1", got, n)
	}
	if got := budgetBilled.Load(); got != budget/bid {
		t.Errorf("%d clicks billed over two servers against a budget of %d bids", got, budget/bid)
	}
	for i, db := range servers {
		if spent, err := db.Rollups().Spent(t.Context(), "shop.example", at); err != nil || spent != budget {
			t.Errorf("server %d reads the spend as %d %v, want %d", i, spent, err, budget)
		}
	}
}

func TestPagesKeepTheStoreContract(t *testing.T) {
	storetest.Pages(t, func(t *testing.T, b storetest.QueueBounds) storetest.Opener[pages.Store] {
		return opener(t, func(db *pgstore.DB) pages.Store { return db.Pages(b.Max, b.PerSite) })
	})
}

func TestVersionsKeepTheContract(t *testing.T) {
	storetest.Versions(t, func(t *testing.T) func() catalog.Versions {
		url := testpg.New(t)
		return func() catalog.Versions {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			db, err := pgstore.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			return db.Versions(nil)
		}
	})
}

func TestExportsKeepTheContract(t *testing.T) {
	storetest.Exports(t, func(t *testing.T) storetest.Opener[clicks.Exports] {
		return opener(t, func(db *pgstore.DB) clicks.Exports { return db.Retainer() })
	})
}

func TestRemovalsKeepTheContract(t *testing.T) {
	storetest.Removals(t, func(t *testing.T) storetest.Opener[catalog.Removals] {
		return opener(t, func(db *pgstore.DB) catalog.Removals { return db.Removals(nil) })
	})
}

func TestInvalidatorKeepsTheContract(t *testing.T) {
	storetest.Invalidator(t, func(t *testing.T) storetest.Opener[storetest.InvalidatorParts] {
		return opener(t, func(db *pgstore.DB) storetest.InvalidatorParts {
			return storetest.InvalidatorParts{Invalidator: db.Invalidator(), Ledger: db.Ledger(), Log: db.Clicks(),
				Rollups: db.Rollups(), Spend: db.Rollups(), Retainer: db.Retainer()}
		})
	})
}
