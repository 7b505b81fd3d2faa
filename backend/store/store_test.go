package store

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestOpenCreatesDirAndKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("t"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if db.Path() != filepath.Join(dir, FileName) {
		t.Errorf("Path = %s", db.Path())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if got := string(tx.Bucket([]byte("t")).Get([]byte("k"))); got != "v" {
			t.Errorf("after reopen k = %q, want v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenHeldFileFails(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db2, err := Open(dir); err == nil {
		db2.Close()
		t.Fatal("second Open of a held file succeeded")
	}
}
