package pgstore

import (
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/adlink/adlink/internal/testpg"
)

// Migration 00008 goes back cleanly: its function (adlink_record_clicks
// with the /48 arrays) and prefix_clicks are dropped, 00007's function
// stays for the servers of the version before, and going up again
// restores them.
func TestPrefixMigrationDownAndUp(t *testing.T) {
	db, p := migrated(t)
	// state is the number of adlink_record_clicks functions by their
	// argument count, and whether prefix_clicks exists.
	state := func() (withPrefix, without int, table bool) {
		t.Helper()
		if err := db.pool.QueryRow(t.Context(), `SELECT
			count(*) FILTER (WHERE pronargs = 31), count(*) FILTER (WHERE pronargs = 29),
			to_regclass('prefix_clicks') IS NOT NULL
			FROM pg_proc WHERE proname = 'adlink_record_clicks'`).Scan(&withPrefix, &without, &table); err != nil {
			t.Fatal(err)
		}
		return withPrefix, without, table
	}
	if w, o, tbl := state(); w != 1 || o != 1 || !tbl {
		t.Fatalf("migrated: %d functions with the /48 arrays, %d without, prefix_clicks %v; want 1, 1, true", w, o, tbl)
	}
	if _, err := p.DownTo(t.Context(), 7); err != nil {
		t.Fatalf("down to 00007: %v", err)
	}
	if w, o, tbl := state(); w != 0 || o != 1 || tbl {
		t.Errorf("down to 00007: %d functions with the /48 arrays, %d without, prefix_clicks %v; want 0, 1, false", w, o, tbl)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if w, o, tbl := state(); w != 1 || o != 1 || !tbl {
		t.Errorf("up again: %d functions with the /48 arrays, %d without, prefix_clicks %v; want 1, 1, true", w, o, tbl)
	}
}

// Migration 00010 goes back cleanly, its exports table dropped, and going
// up again makes it anew.
func TestExportsMigrationDownAndUp(t *testing.T) {
	db, p := migrated(t)
	exists := func() bool {
		t.Helper()
		var ok bool
		if err := db.pool.QueryRow(t.Context(), `SELECT to_regclass('exports') IS NOT NULL`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists() {
		t.Fatal("migrated: no exports table")
	}
	if _, err := p.DownTo(t.Context(), 9); err != nil {
		t.Fatalf("down to 00009: %v", err)
	}
	if exists() {
		t.Error("down to 00009: the exports table is still there")
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if !exists() {
		t.Error("up again: no exports table")
	}
}

// migrated opens a database migrated to the latest version and returns
// it with a goose provider over the migrations, to step them down and up.
func migrated(t *testing.T) (*DB, *goose.Provider) {
	t.Helper()
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	t.Cleanup(func() { sqlDB.Close() })
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, dir, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}
