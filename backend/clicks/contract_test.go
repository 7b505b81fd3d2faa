package clicks_test

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/backend/store/storetest"
)

func TestLogKeepsTheStoreContract(t *testing.T) {
	storetest.Clicks(t, func(t *testing.T) storetest.Opener[clicks.Store] {
		dir := t.TempDir()
		return func() (clicks.Store, func() error) {
			db, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			l, err := clicks.New(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return l, db.Close
		}
	})
}

func TestBoltWindowsKeepTheContract(t *testing.T) {
	storetest.Windows(t, func(t *testing.T) storetest.Opener[clicks.Windows] {
		dir := t.TempDir()
		return func() (clicks.Windows, func() error) {
			db, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			w, err := clicks.NewWindows(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return w, db.Close
		}
	})
}

func TestBoltDecisionsKeepTheContract(t *testing.T) {
	storetest.Decisions(t, func(t *testing.T) storetest.Opener[clicks.Decisions] {
		dir := t.TempDir()
		return func() (clicks.Decisions, func() error) {
			db, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			d, err := clicks.NewDecisions(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return d, db.Close
		}
	})
}

// openFile opens the bbolt file in dir for a contract test.
func openFile(t *testing.T, dir string) *bolt.DB {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestBoltLedgerKeepsTheContract(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) storetest.Opener[storetest.LedgerParts] {
		dir := t.TempDir()
		return func() (storetest.LedgerParts, func() error) {
			db := openFile(t, dir)
			l, err := clicks.NewLedger(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			log, err := clicks.New(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			r, err := clicks.NewRollups(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			imps, err := clicks.NewImpressions(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return storetest.LedgerParts{Ledger: l, Log: log, Rollups: r, Impressions: imps}, db.Close
		}
	})
}

func TestSequentialLedgerKeepsTheContract(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) storetest.Opener[storetest.LedgerParts] {
		dir := t.TempDir()
		return func() (storetest.LedgerParts, func() error) {
			db := openFile(t, dir)
			log, err := clicks.New(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			w, err := clicks.NewWindows(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			d, err := clicks.NewDecisions(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return storetest.LedgerParts{Ledger: clicks.Sequential{Decisions: d, Windows: w, Store: log}, Log: log}, db.Close
		}
	})
}

func TestBoltImpressionsKeepTheContract(t *testing.T) {
	storetest.Impressions(t, func(t *testing.T) storetest.Opener[clicks.Impressions] {
		dir := t.TempDir()
		return func() (clicks.Impressions, func() error) {
			db := openFile(t, dir)
			s, err := clicks.NewImpressions(db)
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return s, db.Close
		}
	})
}
