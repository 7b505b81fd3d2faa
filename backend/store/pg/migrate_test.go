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
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	defer sqlDB.Close()
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, dir, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
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
