package clicks_test

import (
	"testing"

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
