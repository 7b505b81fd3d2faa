package pgstore_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
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

func TestWindowsKeepTheContract(t *testing.T) {
	storetest.Windows(t, func(t *testing.T) storetest.Opener[clicks.Windows] {
		return opener(t, func(db *pgstore.DB) clicks.Windows { return db.Windows() })
	})
}

func TestLedgerKeepsTheContract(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) storetest.Opener[storetest.LedgerParts] {
		return opener(t, func(db *pgstore.DB) storetest.LedgerParts {
			return storetest.LedgerParts{Ledger: db.Ledger(), Log: db.Clicks(), Rollups: db.Rollups(), Impressions: db.Impressions()}
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
