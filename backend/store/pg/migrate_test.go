package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
)

// Migration 00008 goes back cleanly: its function (adlink_record_clicks
// with the /48 arrays) and prefix_clicks are dropped, 00007's function
// stays for the servers of the version before, and going up again
// restores them.
func TestPrefixMigrationDownAndUp(t *testing.T) {
	functionMigrationDownAndUp(t, 8, 31, 29, "prefix_clicks")
}

// Migration 00014 goes back cleanly: its function (adlink_record_clicks
// with the caps per ad) and prefix_ad_clicks are dropped, 00008's function
// stays for the servers of the version before, and going up again
// restores them.
func TestPrefixAdMigrationDownAndUp(t *testing.T) {
	functionMigrationDownAndUp(t, 14, 32, 31, "prefix_ad_clicks")
}

// Migration 00019 goes back cleanly: its function (adlink_record_clicks
// with each click's budget day) is dropped, 00014's stays for the servers
// of the version before, and going up again restores it.
func TestBudgetDayMigrationDownAndUp(t *testing.T) {
	functionMigrationDownAndUp(t, 19, 33, 32, "")
}

// functionMigrationDownAndUp checks that migration version, which adds an
// adlink_record_clicks of args arguments beside the one of before
// arguments, and table (none for ""), goes down to the version before it dropping both
// and keeping the older function, and up again restoring them.
func functionMigrationDownAndUp(t *testing.T, version int64, args, before int, table string) {
	t.Helper()
	db, p := migrated(t)
	// state is the number of adlink_record_clicks functions of args and
	// of before arguments, and whether table exists.
	state := func() (added, kept int, exists bool) {
		t.Helper()
		if err := db.pool.QueryRow(t.Context(), `SELECT
			count(*) FILTER (WHERE pronargs = $1), count(*) FILTER (WHERE pronargs = $2),
			$3 = '' OR to_regclass($3) IS NOT NULL
			FROM pg_proc WHERE proname = 'adlink_record_clicks' AND pronamespace = current_schema()::regnamespace`,
			args, before, table).Scan(&added, &kept, &exists); err != nil {
			t.Fatal(err)
		}
		return added, kept, exists
	}
	check := func(step string, wantAdded bool) {
		t.Helper()
		want := 0
		if wantAdded {
			want = 1
		}
		if a, k, e := state(); a != want || k != 1 || e != (wantAdded || table == "") {
			t.Errorf("%s: %d functions of %d arguments, %d of %d, %s %v; want %d, 1, %v", step, a, args, k, before, table, e, want, wantAdded)
		}
	}
	check("migrated", true)
	if _, err := p.DownTo(t.Context(), version-1); err != nil {
		t.Fatalf("down to %05d: %v", version-1, err)
	}
	check(fmt.Sprintf("down to %05d", version-1), false)
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	check("up again", true)
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

// Migration 00012 goes back cleanly: the late files' records leave the
// table for exports_kept, the day's own record takes their highest seq
// so that the version before still counts their rows exported, and the
// key is (log, day) again; going up again brings the late files' records
// back, and the own record's seq with them.
func TestExportPartsMigrationDownAndUp(t *testing.T) {
	db, p := migrated(t)
	day := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	r := db.Retainer()
	for _, e := range []clicks.Export{
		{Log: clicks.ClickLog, Day: day, At: day, Host: "a", Path: "/x/clicks-2026-08-01.jsonl.zst", Rows: 4, Seq: 10},
		{Log: clicks.ClickLog, Day: day, At: day, Host: "a", Path: "/x/clicks-2026-08-01.late-10.jsonl.zst", Rows: 1, FromSeq: 10, Seq: 14},
		{Log: clicks.ClickLog, Day: day, At: day, Host: "b", Path: "/x/clicks-2026-08-01.late-14.jsonl.zst", Rows: 2, FromSeq: 14, Seq: 20},
		{Log: clicks.ImpressionLog, Day: day, At: day, Host: "a", Path: "/x/impressions-2026-08-01.jsonl.zst", Rows: 4, Seq: 12},
	} {
		if _, err := r.RecordExport(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.DownTo(t.Context(), 11); err != nil {
		t.Fatalf("down to 00011: %v", err)
	}
	type row struct {
		log  string
		seq  int64
		path string
	}
	var got []row
	rows, err := db.pool.Query(t.Context(), `SELECT log, seq, path FROM exports ORDER BY log`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var x row
		if err := rows.Scan(&x.log, &x.seq, &x.path); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []row{{"clicks", 20, "/x/clicks-2026-08-01.jsonl.zst"}, {"impressions", 12, "/x/impressions-2026-08-01.jsonl.zst"}}
	if !slices.Equal(got, want) {
		t.Errorf("down to 00011, the exports are %v, want %v", got, want)
	}
	if _, err := db.pool.Exec(t.Context(), `INSERT INTO exports (log, day, exported_at, host, path, rows, sha256, seq)
		VALUES ('clicks', $1, $1, 'c', '/y', 1, $2, 30)`, day, make([]byte, 32)); err == nil {
		t.Error("down to 00011, a second record of a day was kept")
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	recs, err := r.DayExports(t.Context(), clicks.ClickLog, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Seq != 10 || recs[1].FromSeq != 10 || recs[1].Seq != 14 || recs[1].Host != "a" || recs[1].Rows != 1 ||
		recs[2].FromSeq != 14 || recs[2].Seq != 20 || recs[2].Path != "/x/clicks-2026-08-01.late-14.jsonl.zst" || recs[2].Rows != 2 {
		t.Errorf("up again, the day's records are %+v; want its own up to 10 and its late files' back", recs)
	}
	if _, err := r.RecordExport(t.Context(), clicks.Export{Log: clicks.ClickLog, Day: day, At: day, Host: "a",
		Path: "/x/clicks-2026-08-01.late-20.jsonl.zst", Rows: 1, FromSeq: 20, Seq: 25}); err != nil {
		t.Fatalf("up again, a late file's record: %v", err)
	}
	if recs, err := r.DayExports(t.Context(), clicks.ClickLog, day); err != nil || len(recs) != 4 || recs[3].FromSeq != 20 {
		t.Errorf("up again, the day's records are %+v, %v; want its 3 and the new late one", recs, err)
	}
}

// A day whose records changed while migration 00012 was down (its own
// record made anew, its file moved aside) does not get back the late
// files' records the down migration kept: their rows are in its new
// export, and the records stay kept aside for the operator.
func TestExportPartsMigrationUpKeepsLateRecordsOfADayRecordedAnew(t *testing.T) {
	db, p := migrated(t)
	day := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	r := db.Retainer()
	for _, e := range []clicks.Export{
		{Log: clicks.ClickLog, Day: day, At: day, Host: "a", Path: "/x/clicks-2026-08-01.jsonl.zst", Rows: 4, Seq: 10},
		{Log: clicks.ClickLog, Day: day, At: day, Host: "a", Path: "/x/clicks-2026-08-01.late-10.jsonl.zst", Rows: 1, FromSeq: 10, Seq: 14},
	} {
		if _, err := r.RecordExport(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.DownTo(t.Context(), 11); err != nil {
		t.Fatalf("down to 00011: %v", err)
	}
	if _, err := db.pool.Exec(t.Context(), `UPDATE exports SET seq = 30, rows = 9, path = '/y/clicks-2026-08-01.jsonl.zst'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	recs, err := r.DayExports(t.Context(), clicks.ClickLog, day)
	if err != nil || len(recs) != 1 || recs[0].Seq != 30 {
		t.Errorf("up again, the day's records are %+v, %v; want its new own one alone", recs, err)
	}
	var kept int
	if err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM exports_kept WHERE from_seq = 10`).Scan(&kept); err != nil || kept != 1 {
		t.Errorf("up again, %d late records kept aside, %v; want the 1", kept, err)
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

// OpenReader reads a schema as new as its own and migrates none: it
// refuses one a migration behind, and leaves it there.
func TestOpenReaderMigratesNothing(t *testing.T) {
	url := testpg.New(t)
	db, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := OpenReader(t.Context(), url)
	if err != nil {
		t.Fatalf("OpenReader of a migrated database: %v", err)
	}
	r.Close()
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
	if _, err := p.Down(t.Context()); err != nil {
		t.Fatal(err)
	}
	before, _ := p.GetDBVersion(t.Context())
	if r, err := OpenReader(t.Context(), url); err == nil || !strings.Contains(err.Error(), "upgrade them first") {
		if r != nil {
			r.Close()
		}
		t.Errorf("OpenReader of a schema a migration behind = %v, want an error", err)
	}
	if after, _ := p.GetDBVersion(t.Context()); after != before {
		t.Errorf("OpenReader moved the schema from migration %d to %d", before, after)
	}
}

// Migration 00020 goes down dropping the account indexes of the
// rollups, and up again building them, valid, on their columns: also
// where a build cut off left an index of the name, which it builds anew.
func TestRollupAccountsMigrationDownAndUp(t *testing.T) {
	db, p := migrated(t)
	// indexes are the definitions of the valid account indexes.
	indexes := func() []string {
		t.Helper()
		rows, err := db.pool.Query(t.Context(), `SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
			WHERE i.indrelid = 'rollups'::regclass AND i.indisvalid
			AND i.indexrelid::regclass::text IN ('rollups_api_key', 'rollups_advertiser') ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return defs
	}
	check := func(step string) {
		t.Helper()
		defs := indexes()
		if len(defs) != 2 || !strings.Contains(defs[0], "(grain, advertiser, period)") || !strings.Contains(defs[1], "(grain, api_key, period)") {
			t.Errorf("%s: the account indexes are %q", step, defs)
		}
	}
	check("migrated")
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	if defs := indexes(); len(defs) != 0 {
		t.Errorf("down to 00019: %q left", defs)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	check("up again")
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	// What a build cut off leaves is an index of the name, not the one
	// asked for (an invalid one is not read, and IF NOT EXISTS would keep it).
	if _, err := db.pool.Exec(t.Context(), "CREATE INDEX rollups_api_key ON rollups (country)"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up over a left index: %v", err)
	}
	check("up over a left index")
}

// Open's bound on reaching the database does not bound its migrations:
// an index build of migration 00020 that outlasts it (here waiting for a
// transaction writing to rollups, as a large table's build takes minutes)
// ends, and Open with it. A build cut off at a bound would be started
// again from nothing at each start, and never end.
func TestOpenMigratesPastItsDeadline(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	defer func(d time.Duration) { connectWithin = d }(connectWithin)
	connectWithin = time.Second
	// A replica of the version before, in the middle of recording clicks.
	tx, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE rollups IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// The writer commits once the build has waited past Open's bound.
	committed := make(chan error, 1)
	go func() {
		<-time.After(3 * connectWithin)
		committed <- tx.Commit(context.Background())
	}()
	up, err := Open(ctx, db.pool.Config().ConnString())
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("Open with the build outlasting its bound on connecting: %v", err)
	}
	up.Close()
	var valid int
	if err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_index
		WHERE indrelid = 'rollups'::regclass AND indisvalid
		AND indexrelid::regclass::text IN ('rollups_api_key', 'rollups_advertiser')`).Scan(&valid); err != nil {
		t.Fatal(err)
	}
	if valid != 2 {
		t.Errorf("%d valid account indexes after Open, want 2", valid)
	}
}

// Cancelling Open's context stops a migration that waits, as its
// deadline does not.
func TestOpenCancelledStopsMigrating(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	tx, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE rollups IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancelled once the build waits for the writer; the writer commits
	// only after Open returns, or if it never would.
	released := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var waiting bool
			if err := db.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
				t.Error(err)
				return
			}
			if waiting {
				cancel()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-released:
		case <-time.After(time.Minute):
		}
		if err := tx.Commit(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	up, err := Open(ctx, db.pool.Config().ConnString())
	close(released)
	<-done
	if err == nil {
		up.Close()
		t.Fatal("Open ended its migrations after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Open cancelled: %v", err)
	}
}

// A migration's ALTER TABLE waiting behind a transaction that holds the
// table (an operator's open psql session) gives up after its lock
// timeout, so that the replicas' queries of the table, queued behind it,
// go on; it logs the session that held it up, tries again, and ends once
// that transaction does.
func TestMigrationGivesWayToQueries(t *testing.T) {
	db, p := migrated(t)
	// Migration 00016 adds a column to removed_ads.
	if _, err := p.DownTo(t.Context(), 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	holder, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), "LOCK TABLE removed_ads IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	var holderPID int32
	if err := holder.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&holderPID); err != nil {
		t.Fatal(err)
	}
	logs := logLines(t)
	opened := make(chan error, 1)
	go func() {
		up, err := OpenWith(t.Context(), db.pool.Config().ConnString(), Options{Logger: logs.logger, LockTimeout: 200 * time.Millisecond})
		if err == nil {
			// The servers' own statements have no lock timeout: a
			// click's commit waits for its locks as long as it takes.
			var timeout string
			if err := up.pool.QueryRow(context.Background(), "SHOW lock_timeout").Scan(&timeout); err != nil || timeout != "0" {
				t.Errorf("the serving pool's lock_timeout is %q, %v; want 0", timeout, err)
			}
			up.Close()
		}
		opened <- err
	}()
	// The migration's ALTER TABLE waits for the holder.
	for {
		var waiting bool
		if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE $1::int = ANY (pg_blocking_pids(pid)))`, holderPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The replicas' reads and writes of the table go on meanwhile. A
	// minute bounds each, so that one stuck behind the migration fails
	// the test rather than hangs it.
	for i := range 6 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		q := `SELECT count(*) FROM removed_ads`
		if i%2 == 1 {
			q = `UPDATE removed_ads SET ad = ad WHERE false`
		}
		_, err := db.pool.Exec(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("query %d of removed_ads while the holder holds it: %v", i, err)
		}
	}
	select {
	case err := <-opened:
		t.Fatalf("Open returned while the holder held removed_ads: %v", err)
	default:
	}
	// It logs the holder as what held it up.
	want := fmt.Sprintf("pid=%d", holderPID)
	for logged := false; !logged; {
		select {
		case line := <-logs.lines:
			logged = strings.Contains(line, "trying again") && strings.Contains(line, want)
		case <-time.After(time.Minute):
			t.Fatalf("no retry logged with the holder's %s", want)
		}
	}
	if err := holder.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the holder committed: %v", err)
	}
	var has bool
	if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'removed_ads' AND column_name = 'seq')`).Scan(&has); err != nil {
		t.Fatal(err)
	}
	if !has {
		t.Error("migrated once the holder committed, removed_ads has no seq column")
	}
}

// Cancelling Open's context (the server's SIGTERM) stops a migration
// that waits to try again after its lock timeout.
func TestOpenCancelledStopsRetrying(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	holder, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), "LOCK TABLE removed_ads IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	logs := logLines(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		defer cancel()
		for {
			select {
			case line := <-logs.lines:
				if strings.Contains(line, "trying again") {
					return
				}
			case <-time.After(time.Minute):
				t.Error("no retry logged")
				return
			}
		}
	}()
	up, err := OpenWith(ctx, db.pool.Config().ConnString(), Options{Logger: logs.logger, LockTimeout: 100 * time.Millisecond})
	if err == nil {
		up.Close()
		t.Fatal("Open ended its migrations while the holder held removed_ads")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Open cancelled: %v", err)
	}
}

// logs is a logger whose lines a test reads.
type logs struct {
	logger *slog.Logger
	lines  chan string
}

// logLines returns a logger that hands each line on, dropping those no
// one reads.
func logLines(t *testing.T) logs {
	ch := make(chan string, 1000)
	return logs{logger: slog.New(slog.NewTextHandler(lineWriter(ch), nil)), lines: ch}
}

type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	select {
	case w <- string(p):
	default:
	}
	return len(p), nil
}

// A start killed after Postgres finished building migration 00020's
// indexes, before the migration was recorded, leaves them valid: the
// next start keeps them rather than builds them again.
func TestRollupAccountsMigrationKeepsAFinishedBuild(t *testing.T) {
	db, p := migrated(t)
	before := accountIndexes(t, db)
	if len(before) != 2 {
		t.Fatalf("migrated: account indexes %v", before)
	}
	// The later migrations stepped down, and 00020's record lost: its
	// start killed after Postgres built the indexes.
	if _, err := p.DownTo(t.Context(), 20); err != nil {
		t.Fatalf("down to 00020: %v", err)
	}
	if _, err := db.pool.Exec(t.Context(), `DELETE FROM goose_db_version WHERE version_id = 20`); err != nil {
		t.Fatal(err)
	}
	up, err := Open(t.Context(), db.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	up.Close()
	if after := accountIndexes(t, db); !maps.Equal(after, before) {
		t.Errorf("the finished indexes %v were built again: %v", before, after)
	}
	var applied bool
	if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM goose_db_version WHERE version_id = 20 AND is_applied)`).Scan(&applied); err != nil || !applied {
		t.Errorf("migration 00020 recorded %v, %v", applied, err)
	}
}

// A start killed while Postgres built an index of migration 00020 leaves
// an invalid one: the next start drops it and builds it again, valid.
func TestRollupAccountsMigrationRebuildsACutBuild(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	invalid := cutBuild(t, db, "rollups", "rollups_api_key", "CREATE INDEX CONCURRENTLY rollups_api_key ON rollups (grain, api_key, period)")
	up, err := Open(t.Context(), db.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	up.Close()
	got := accountIndexes(t, db)
	if len(got) != 2 || got["rollups_api_key"] == invalid {
		t.Errorf("after Open, the valid account indexes are %v; the invalid one was %d", got, invalid)
	}
}

// accountIndexes returns the oids of migration 00020's valid indexes by
// name, those on their columns.
func accountIndexes(t *testing.T, db *DB) map[string]uint32 {
	t.Helper()
	rows, err := db.pool.Query(t.Context(), `SELECT c.relname::text, c.oid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
		WHERE x.indrelid = 'rollups'::regclass AND x.indisvalid
		AND (c.relname = 'rollups_api_key' AND pg_get_indexdef(c.oid) LIKE '%(grain, api_key, period)'
			OR c.relname = 'rollups_advertiser' AND pg_get_indexdef(c.oid) LIKE '%(grain, advertiser, period)')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]uint32{}
	for rows.Next() {
		var name string
		var oid uint32
		if err := rows.Scan(&name, &oid); err != nil {
			t.Fatal(err)
		}
		got[name] = oid
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// A server whose migrations give up on a lock timeout again and again,
// while another server's take their turns between its tries, goes on
// trying: goose's wait for the migration lock gives up after so many
// probes found it taken, and each try waits anew, not within what the
// tries before used up.
func TestMigrationRetriesWaitForTheLockAnew(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	// One probe of the migration lock may find it taken, a second in
	// the same wait gives up.
	defer func(o []lock.SessionLockerOption) { lockOptions = o }(lockOptions)
	lockOptions = []lock.SessionLockerOption{lock.WithLockTimeout(1, 1)}
	holder, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), "LOCK TABLE removed_ads IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	// other stands for another server, holding the migration lock.
	other, err := db.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if _, err := other.Exec(t.Context(), "SELECT pg_advisory_lock($1)", lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	logs := logLines(t)
	opened := make(chan error, 1)
	go func() {
		up, err := OpenWith(t.Context(), db.pool.Config().ConnString(), Options{Logger: logs.logger, LockTimeout: 100 * time.Millisecond})
		if err == nil {
			up.Close()
		}
		opened <- err
	}()
	for try := 1; try <= 2; try++ {
		// The try's probe found the lock taken: the other server lets
		// it go before the next probe.
		for probed := false; !probed; {
			select {
			case err := <-opened:
				t.Fatalf("try %d: Open returned while waiting for the migration lock: %v", try, err)
			default:
			}
			if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE state = 'idle' AND query LIKE 'SELECT pg_try_advisory_lock%')`).Scan(&probed); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := other.Exec(t.Context(), "SELECT pg_advisory_unlock($1)", lock.DefaultLockID); err != nil {
			t.Fatal(err)
		}
		// The try gives up on the holder; the other server takes the
		// lock back meanwhile.
		for retried := false; !retried; {
			select {
			case line := <-logs.lines:
				retried = strings.Contains(line, "trying again")
			case err := <-opened:
				t.Fatalf("try %d: Open returned while the holder held removed_ads: %v", try, err)
			case <-time.After(time.Minute):
				t.Fatalf("try %d: no retry logged", try)
			}
		}
		if _, err := other.Exec(t.Context(), "SELECT pg_advisory_lock($1)", lock.DefaultLockID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.Exec(t.Context(), "SELECT pg_advisory_unlock($1)", lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	if err := holder.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the holder committed: %v", err)
	}
}

// Migration 00020 drops an index of its name that is not the one it
// builds once the transactions using rollups end, as it builds its own:
// a drop CONCURRENTLY blocks no query while it waits, so it has no lock
// timeout to give up on and try again, as long as a report's
// transaction (here one left open) lasts.
func TestRollupAccountsMigrationDropWaitsForReaders(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	if _, err := db.pool.Exec(t.Context(), "CREATE INDEX rollups_api_key ON rollups (period)"); err != nil {
		t.Fatal(err)
	}
	reader, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(context.Background())
	if _, err := reader.Exec(t.Context(), "SELECT count(*) FROM rollups"); err != nil {
		t.Fatal(err)
	}
	logs := logLines(t)
	const lockTimeout = 10 * time.Millisecond
	opened := make(chan error, 1)
	go func() {
		up, err := OpenWith(t.Context(), db.pool.Config().ConnString(), Options{Logger: logs.logger, LockTimeout: lockTimeout})
		if err == nil {
			up.Close()
		}
		opened <- err
	}()
	retried := func() bool {
		for {
			select {
			case line := <-logs.lines:
				if strings.Contains(line, "trying again") {
					t.Logf("retried: %s", line)
					return true
				}
			default:
				return false
			}
		}
	}
	for waiting := false; !waiting; {
		if retried() {
			t.Fatal("the migration gave up waiting for the reader")
		}
		if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE query LIKE 'DROP INDEX CONCURRENTLY%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Many times its lock timeout later, it still waits.
	time.Sleep(50 * lockTimeout)
	if retried() {
		t.Error("the migration gave up waiting for the reader")
	}
	if err := reader.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the reader committed: %v", err)
	}
	if got := accountIndexes(t, db); len(got) != 2 {
		t.Errorf("after Open, the valid account indexes are %v", got)
	}
}

// A start whose migrations give up on their lock timeout at every try
// for Options.MigrateWait stops: OpenWith fails, naming the session that
// held up the last try, rather than wait unseen for as long as it is
// held.
func TestMigrationsGiveUpAfterTheirWait(t *testing.T) {
	db, p := migrated(t)
	// Migration 00016 adds a column to removed_ads.
	if _, err := p.DownTo(t.Context(), 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	holder, holderPID := lockRemovedAds(t, db)
	defer holder.Rollback(context.Background())
	logs := logLines(t)
	opened := make(chan error, 1)
	go func() {
		up, err := OpenWith(t.Context(), db.pool.Config().ConnString(),
			Options{Logger: logs.logger, LockTimeout: 100 * time.Millisecond, MigrateWait: 1500 * time.Millisecond})
		if err == nil {
			up.Close()
		}
		opened <- err
	}()
	var err error
	select {
	case err = <-opened:
	case <-time.After(time.Minute):
		t.Fatal("Open still migrates a minute past its wait while the holder holds removed_ads")
	}
	var lw *LockWaitError
	if !errors.As(err, &lw) {
		t.Fatalf("Open past its wait: %v, want a LockWaitError", err)
	}
	if lw.Tries < 2 || len(lw.Blockers) != 1 || lw.Blockers[0].PID != holderPID {
		t.Errorf("Open gave up after %d tries, blocked by %+v; want 2 or more, by the holder's pid %d", lw.Tries, lw.Blockers, holderPID)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("pid %d", holderPID)) || !strings.Contains(msg, "lock") {
		t.Errorf("Open's error %q does not name the holder's pid %d", msg, holderPID)
	}
	var logged bool
	for len(logs.lines) > 0 {
		line := <-logs.lines
		logged = logged || strings.Contains(line, "level=ERROR") && strings.Contains(line, "giving up") &&
			strings.Contains(line, fmt.Sprintf("pid=%d", holderPID))
	}
	if !logged {
		t.Error("no error logged with the holder's pid when Open gave up")
	}
	// Nothing of 00016 was applied.
	var has bool
	if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'removed_ads' AND column_name = 'seq')`).Scan(&has); err != nil {
		t.Fatal(err)
	}
	if has {
		t.Error("Open gave up, yet removed_ads has 00016's seq column")
	}
}

// Each try's blockers are its own: a session that held up an earlier
// try, and ended, is not named when a later one gives up.
func TestMigrationsNameTheLastTrysBlockers(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	first, firstPID := lockRemovedAds(t, db)
	defer first.Rollback(context.Background())
	logs := logLines(t)
	opened := make(chan error, 1)
	go func() {
		up, err := OpenWith(t.Context(), db.pool.Config().ConnString(),
			Options{Logger: logs.logger, LockTimeout: 100 * time.Millisecond, MigrateWait: 4 * time.Second})
		if err == nil {
			up.Close()
		}
		opened <- err
	}()
	// A try gives up on the first holder.
	for named := false; !named; {
		select {
		case line := <-logs.lines:
			named = strings.Contains(line, "trying again") && strings.Contains(line, fmt.Sprintf("pid=%d", firstPID))
		case err := <-opened:
			t.Fatalf("Open returned before a retry named the first holder: %v", err)
		}
	}
	// A second holder takes the table, then the first lets it go.
	second, secondPID := lockRemovedAds(t, db)
	defer second.Rollback(context.Background())
	if err := first.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-opened:
	case <-time.After(time.Minute):
		t.Fatal("Open still migrates a minute past its wait")
	}
	var lw *LockWaitError
	if !errors.As(err, &lw) {
		t.Fatalf("Open past its wait: %v, want a LockWaitError", err)
	}
	if len(lw.Blockers) != 1 || lw.Blockers[0].PID != secondPID {
		t.Errorf("the last try was blocked by %+v; want the second holder's pid %d alone (the first's was %d)", lw.Blockers, secondPID, firstPID)
	}
	if strings.Contains(err.Error(), fmt.Sprintf("pid %d ", firstPID)) {
		t.Errorf("Open's error %q names the first holder, gone before the last try", err)
	}
}

// lockRemovedAds begins a transaction that holds removed_ads, as an
// operator's open psql session would, and returns it with its backend's
// pid.
func lockRemovedAds(t *testing.T, db *DB) (pgx.Tx, int32) {
	t.Helper()
	tx, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Waits, while a migration's ALTER TABLE waits for the table, until
	// that statement gives up.
	if _, err := tx.Exec(t.Context(), "LOCK TABLE removed_ads IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	var pid int32
	if err := tx.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// The migrations' wait counts from the last migration a try applied: a
// try that spent the whole wait building 00020's indexes behind a
// reader, then gave up once on a lock of a later migration, is tried
// again, not the start given up. Before, the wait counted from the first
// try, and a start that had migrated all along failed at its first lock
// timeout past it.
func TestMigrationsWaitFromTheirLastProgress(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 19); err != nil {
		t.Fatalf("down to 00019: %v", err)
	}
	// An index of 00020's name on other columns, which it drops
	// concurrently, waiting for the reader of rollups.
	if _, err := db.pool.Exec(t.Context(), "CREATE INDEX rollups_api_key ON rollups (period)"); err != nil {
		t.Fatal(err)
	}
	reader, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(context.Background())
	if _, err := reader.Exec(t.Context(), "SELECT count(*) FROM rollups"); err != nil {
		t.Fatal(err)
	}
	// A session that holds clicks, which 00022 alters.
	holder, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), "LOCK TABLE clicks IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	logs := logLines(t)
	const wait = time.Second
	opened := make(chan error, 1)
	go func() {
		up, err := OpenWith(t.Context(), db.pool.Config().ConnString(),
			Options{Logger: logs.logger, LockTimeout: 100 * time.Millisecond, MigrateWait: wait})
		if err == nil {
			up.Close()
		}
		opened <- err
	}()
	for waiting := false; !waiting; {
		if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE query LIKE 'DROP INDEX CONCURRENTLY%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// 00020 waits past the whole wait, then is applied, and 00022 gives
	// up on the holder.
	time.Sleep(wait + wait/2)
	if err := reader.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	for retried := false; !retried; {
		select {
		case line := <-logs.lines:
			retried = strings.Contains(line, "trying again")
		case err := <-opened:
			t.Fatalf("Open gave up at its first lock timeout after migrating all along: %v", err)
		}
	}
	if err := holder.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the holder committed: %v", err)
	}
	if got := accountIndexes(t, db); len(got) != 2 {
		t.Errorf("after Open, the valid account indexes are %v", got)
	}
}

// cutBuild leaves index of table invalid, as a start killed while
// Postgres built it does: a writer holds up the build (create, a CREATE
// INDEX CONCURRENTLY), which is cancelled on the server while it waits.
// It returns the invalid index's oid.
func cutBuild(t *testing.T, db *DB, table, index, create string) uint32 {
	t.Helper()
	writer, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(context.Background())
	if _, err := writer.Exec(t.Context(), "LOCK TABLE "+table+" IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	built := make(chan error, 1)
	go func() {
		_, err := db.pool.Exec(t.Context(), create)
		built <- err
	}()
	// Cancelled on the server, as a client cancels its statement.
	for {
		var cancelled bool
		if err := db.pool.QueryRow(t.Context(), `SELECT coalesce(bool_or(pg_cancel_backend(pid)), false) FROM pg_stat_activity
			WHERE query = $1 AND wait_event_type = 'Lock'`, create).Scan(&cancelled); err != nil {
			t.Fatal(err)
		}
		if cancelled {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-built; err == nil {
		t.Fatal("the cancelled build ended")
	}
	if err := writer.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	var invalid uint32
	if err := db.pool.QueryRow(t.Context(), `SELECT indexrelid FROM pg_index
		WHERE indexrelid = to_regclass($1) AND NOT indisvalid`, index).Scan(&invalid); err != nil {
		t.Fatalf("the cancelled build left no invalid index: %v", err)
	}
	return invalid
}
