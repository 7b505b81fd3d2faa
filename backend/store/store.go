// Package store opens the embedded state of one adlink server: a single
// bbolt file in the data directory. Each package that keeps state (clicks,
// pages) uses its own buckets in it, so one fsync'd file holds everything
// and a restart loses nothing.
//
// Each state-keeping job is an interface in its own package, its contract
// in its doc comment: pages.Store, clicks.Store, clicks.Windows,
// clicks.Decisions, clicks.Retainer, ratelimit.Limiter.
// storetest runs those contracts against any implementation.
package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileName is the name of the state file in the data directory.
const FileName = "adlink.db"

// Open creates dir if needed and opens (or creates) dir/adlink.db. It fails
// after a second rather than wait forever when another process holds the
// file. The caller closes the DB.
func Open(dir string) (*bolt.DB, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		// The lock is held: an operator reads "timeout" as a slow disk.
		return nil, fmt.Errorf("store: %s is in use by another server: give each server a -data directory of its own", path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

// OpenReadOnly opens the state file in dir for reading, as a tool does
// beside a stopped server: it fails at once when the file is missing, and
// after a second when a running server holds it.
func OpenReadOnly(dir string) (*bolt.DB, error) {
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store: %s is in use by a running server; ask it for the report (GET /v2/report)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

// Backup copies db, as it was when one read transaction began, to a file
// beside it at the disk's speed, and returns that file open at its start
// and already removed from the directory: the caller reads it at its own
// pace and closes it. The server keeps serving and committing meanwhile;
// the copy opens as the state file of a server stopped at that moment.
// The read transaction ends with the copy, not with the caller's reading:
// one held open while a slow client read would stop the file from
// growing, and so every commit that needs it to.
func Backup(db *bolt.DB) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(db.Path()), FileName+".backup-*")
	if err != nil {
		return nil, fmt.Errorf("store: backup: %w", err)
	}
	os.Remove(f.Name()) // the open file stays readable
	err = db.View(func(tx *bolt.Tx) error {
		_, err := tx.WriteTo(f)
		return err
	})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: backup: %w", err)
	}
	return f, nil
}
