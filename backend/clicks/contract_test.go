package clicks_test

import (
	"errors"
	"testing"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/backend/store/storetest"
)

// stores are every store of one bbolt file, as a contract test opens them.
type stores struct {
	log         *clicks.Log
	windows     *clicks.BoltWindows
	decisions   *clicks.BoltDecisions
	ledger      *clicks.BoltLedger
	rollups     clicks.BoltRollups
	imps        *clicks.BoltImpressions
	retainer    *clicks.BoltRetainer
	tags        *clicks.BoltTags
	invalidator *clicks.BoltInvalidator
}

// openStores opens every store of the bbolt file in dir and returns them
// with the function that closes the file.
func openStores(t *testing.T, dir string) (stores, func() error) {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s stores
	var errs [9]error
	s.log, errs[0] = clicks.New(db)
	s.windows, errs[1] = clicks.NewWindows(db)
	s.decisions, errs[2] = clicks.NewDecisions(db)
	s.ledger, errs[3] = clicks.NewLedger(db)
	s.rollups, errs[4] = clicks.NewRollups(db)
	s.imps, errs[5] = clicks.NewImpressions(db)
	s.retainer, errs[6] = clicks.NewRetainer(db)
	s.tags, errs[7] = clicks.NewTags(db)
	s.invalidator, errs[8] = clicks.NewInvalidator(db)
	if err := errors.Join(errs[:]...); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return s, db.Close
}

// opener is the storetest.Opener of one part of the stores in a directory
// of their own.
func opener[S any](t *testing.T, part func(stores) S) storetest.Opener[S] {
	dir := t.TempDir()
	return func() (S, func() error) {
		s, closeFn := openStores(t, dir)
		return part(s), closeFn
	}
}

func TestLogKeepsTheStoreContract(t *testing.T) {
	storetest.Clicks(t, func(t *testing.T) storetest.Opener[clicks.Store] {
		return opener(t, func(s stores) clicks.Store { return s.log })
	})
}

func TestBoltWindowsKeepTheContract(t *testing.T) {
	storetest.Windows(t, func(t *testing.T) storetest.Opener[clicks.Windows] {
		return opener(t, func(s stores) clicks.Windows { return s.windows })
	})
}

func TestBoltTagsKeepTheContract(t *testing.T) {
	storetest.Tags(t, func(t *testing.T) storetest.Opener[clicks.Tags] {
		return opener(t, func(s stores) clicks.Tags { return s.tags })
	})
}

func TestBoltDecisionsKeepTheContract(t *testing.T) {
	storetest.Decisions(t, func(t *testing.T) storetest.Opener[clicks.Decisions] {
		return opener(t, func(s stores) clicks.Decisions { return s.decisions })
	})
}

func TestBoltLedgerKeepsTheContract(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) storetest.Opener[storetest.LedgerParts] {
		return opener(t, func(s stores) storetest.LedgerParts {
			return storetest.LedgerParts{Ledger: s.ledger, Log: s.log, Rollups: s.rollups, Impressions: s.imps, Spend: s.rollups}
		})
	})
}

func TestSequentialLedgerKeepsTheContract(t *testing.T) {
	storetest.Ledger(t, func(t *testing.T) storetest.Opener[storetest.LedgerParts] {
		return opener(t, func(s stores) storetest.LedgerParts {
			return storetest.LedgerParts{Ledger: clicks.Sequential{Decisions: s.decisions, Windows: s.windows, Store: s.log}, Log: s.log}
		})
	})
}

func TestBoltImpressionsKeepTheContract(t *testing.T) {
	storetest.Impressions(t, func(t *testing.T) storetest.Opener[clicks.Impressions] {
		return opener(t, func(s stores) clicks.Impressions { return s.imps })
	})
}

func TestLogKeepsTheListerContract(t *testing.T) {
	storetest.Lister(t, func(t *testing.T) storetest.Opener[storetest.ListedStore] {
		return opener(t, func(s stores) storetest.ListedStore { return s.log })
	})
}

func TestBoltInvalidatorKeepsTheContract(t *testing.T) {
	storetest.Invalidator(t, func(t *testing.T) storetest.Opener[storetest.InvalidatorParts] {
		return opener(t, func(s stores) storetest.InvalidatorParts {
			return storetest.InvalidatorParts{Invalidator: s.invalidator, Ledger: s.ledger, Log: s.log, Rollups: s.rollups,
				Spend: s.rollups, Retainer: s.retainer}
		})
	})
}
