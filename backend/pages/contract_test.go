package pages_test

import (
	"testing"

	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/backend/store/storetest"
)

func TestBoltKeepsTheStoreContract(t *testing.T) {
	storetest.Pages(t, func(t *testing.T, b storetest.QueueBounds) storetest.Opener[pages.Store] {
		dir := t.TempDir()
		return func() (pages.Store, func() error) {
			db, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			s, err := pages.OpenBolt(db, b.Max, pages.WithPerSite(b.PerSite))
			if err != nil {
				db.Close()
				t.Fatal(err)
			}
			return s, db.Close
		}
	})
}
