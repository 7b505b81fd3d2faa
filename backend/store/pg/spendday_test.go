package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// spendDayIndex returns the oid of migration 00023's index when it is
// valid and on spend's day, else 0.
func spendDayIndex(t *testing.T, db *DB) uint32 {
	t.Helper()
	var oid uint32
	if err := db.pool.QueryRow(t.Context(), `SELECT coalesce(max(x.indexrelid::oid::bigint), 0) FROM pg_index x
		WHERE x.indexrelid = to_regclass('spend_day') AND x.indrelid = 'spend'::regclass AND x.indisvalid
		AND pg_get_indexdef(x.indexrelid) LIKE '%USING btree (day, advertiser)'`).Scan(&oid); err != nil {
		t.Fatal(err)
	}
	return oid
}

// The day's read of the budgeted advertisers' spend (SpentAllOn) reads
// those advertisers' rows of that day by migration 00023's index, the
// day and the advertisers its condition, not every day kept nor every
// advertiser's rows of the day: the plan Postgres makes, its statistics
// gathered over many days of many advertisers, reads spend_day.
func TestSpendDayIndexServesTheDaysRead(t *testing.T) {
	db, _ := migrated(t)
	const day = 20_414
	if _, err := db.pool.Exec(t.Context(), `INSERT INTO spend (advertiser, day, shard, micros)
		SELECT format('adv%s.example', i), d, s, 25
		FROM generate_series(0, 1999) i, generate_series($1::bigint - 34, $1::bigint) d, generate_series(0, 3) s
		ORDER BY d, i, s`, day); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(t.Context(), `ANALYZE spend`); err != nil {
		t.Fatal(err)
	}
	advs := []string{"unknown.example"}
	for i := range 20 {
		advs = append(advs, fmt.Sprintf("adv%d.example", i*100+7))
	}
	var plan string
	if err := db.pool.QueryRow(t.Context(), `EXPLAIN (FORMAT JSON) `+spentAllSQL, int64(day), advs).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, `"Index Name": "spend_day"`) || strings.Contains(plan, `"Filter"`) ||
		!strings.Contains(plan, `advertiser = ANY`) {
		t.Errorf("the day's read of the spend does not read spend_day by the day and the advertisers:\n%s", plan)
	}
	spent, err := db.Rollups().SpentAllOn(t.Context(), day, advs)
	if err != nil || len(spent) != 20 || spent["adv7.example"] != 100 || spent["adv1907.example"] != 100 {
		t.Errorf("SpentAllOn: %d advertisers, adv7.example %d, adv1907.example %d, %v; want 20, 100, 100",
			len(spent), spent["adv7.example"], spent["adv1907.example"], err)
	}
	if _, ok := spent["unknown.example"]; ok {
		t.Error("SpentAllOn gives an advertiser without spend")
	}
}

// A click's read of one advertiser's day, where a few advertisers have
// spend over many days, finds that advertiser's rows by an index's
// condition: the planner, offered the index on the day, must not read
// the day's rows of every advertiser and filter them.
func TestSpendDayIndexLeavesOneAdvertisersReadNarrow(t *testing.T) {
	db, _ := migrated(t)
	const day = 20_414
	if _, err := db.pool.Exec(t.Context(), `INSERT INTO spend (advertiser, day, shard, micros)
		SELECT format('adv%s.example', i), d, s, 25
		FROM generate_series(0, 4) i, generate_series($1::bigint - 34, $1::bigint) d, generate_series(0, 3) s
		ORDER BY d, i, s`, day); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(t.Context(), `ANALYZE spend`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The generic plan, as the ledger's function and a prepared statement use.
	if _, err := conn.Exec(t.Context(), `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET plan_cache_mode`)
	var plan string
	if err := conn.QueryRow(t.Context(), `EXPLAIN (FORMAT JSON) SELECT coalesce(sum(micros), 0)::bigint FROM spend WHERE advertiser = 'adv3.example' AND day = $1`, int64(day)).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, `"Filter"`) || !strings.Contains(plan, `"Index Cond"`) {
		t.Errorf("one advertiser's day is read by filtering rows, not by an index's condition:\n%s", plan)
	}
}

// Migration 00023 goes down dropping the spend's index by day, and up
// again building it; over an index of its name on other columns, which a
// start of another version may have left, it builds its own.
func TestSpendDayMigrationDownAndUp(t *testing.T) {
	db, p := migrated(t)
	if spendDayIndex(t, db) == 0 {
		t.Fatal("migrated: no valid spend_day on (day, advertiser)")
	}
	if _, err := p.DownTo(t.Context(), 22); err != nil {
		t.Fatalf("down to 00022: %v", err)
	}
	var left bool
	if err := db.pool.QueryRow(t.Context(), `SELECT to_regclass('spend_day') IS NOT NULL`).Scan(&left); err != nil || left {
		t.Errorf("down to 00022: spend_day left %v, %v", left, err)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if spendDayIndex(t, db) == 0 {
		t.Error("up again: no valid spend_day on (day, advertiser)")
	}
	if _, err := p.DownTo(t.Context(), 22); err != nil {
		t.Fatalf("down to 00022: %v", err)
	}
	if _, err := db.pool.Exec(t.Context(), "CREATE INDEX spend_day ON spend (shard)"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(t.Context()); err != nil {
		t.Fatalf("up over a left index: %v", err)
	}
	if spendDayIndex(t, db) == 0 {
		t.Error("up over a left index: no valid spend_day on (day, advertiser)")
	}
}

// A start killed after Postgres finished building migration 00023's
// index, before the migration was recorded, leaves it valid: the next
// start keeps it rather than builds it again.
func TestSpendDayMigrationKeepsAFinishedBuild(t *testing.T) {
	db, _ := migrated(t)
	before := spendDayIndex(t, db)
	if before == 0 {
		t.Fatal("migrated: no valid spend_day on (day, advertiser)")
	}
	if _, err := db.pool.Exec(t.Context(), `DELETE FROM goose_db_version WHERE version_id = 23`); err != nil {
		t.Fatal(err)
	}
	up, err := Open(t.Context(), db.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	up.Close()
	if after := spendDayIndex(t, db); after != before {
		t.Errorf("the finished index %d was built again: %d", before, after)
	}
	var applied bool
	if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM goose_db_version WHERE version_id = 23 AND is_applied)`).Scan(&applied); err != nil || !applied {
		t.Errorf("migration 00023 recorded %v, %v", applied, err)
	}
}

// A start killed while Postgres built migration 00023's index leaves an
// invalid one: the next start drops it and builds it again, valid.
func TestSpendDayMigrationRebuildsACutBuild(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 22); err != nil {
		t.Fatalf("down to 00022: %v", err)
	}
	invalid := cutBuild(t, db, "spend", "spend_day", "CREATE INDEX CONCURRENTLY spend_day ON spend (day, advertiser)")
	up, err := Open(t.Context(), db.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	up.Close()
	if got := spendDayIndex(t, db); got == 0 || got == invalid {
		t.Errorf("after Open, the valid spend_day is %d; the invalid one was %d", got, invalid)
	}
}

// Migration 00023 builds its index once the transactions writing spend
// end: a build CONCURRENTLY blocks no click while it waits for them, so
// it has no lock timeout to give up on and try again, however long a
// click's transaction (here one left open) lasts.
func TestSpendDayMigrationBuildWaitsForWriters(t *testing.T) {
	db, p := migrated(t)
	if _, err := p.DownTo(t.Context(), 22); err != nil {
		t.Fatalf("down to 00022: %v", err)
	}
	writer, err := db.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(context.Background())
	if _, err := writer.Exec(t.Context(), `INSERT INTO spend (advertiser, day, shard, micros) VALUES ('shop.example', 20414, 0, 100)`); err != nil {
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
			t.Fatal("the migration gave up waiting for the writer")
		}
		if err := db.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE query LIKE 'CREATE INDEX CONCURRENTLY%spend_day%' AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Many times its lock timeout later, it still waits.
	time.Sleep(50 * lockTimeout)
	if retried() {
		t.Error("the migration gave up waiting for the writer")
	}
	if err := writer.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("Open once the writer committed: %v", err)
	}
	if spendDayIndex(t, db) == 0 {
		t.Error("after Open: no valid spend_day on (day, advertiser)")
	}
}
