package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/retention"
	"github.com/adlink/adlink/internal/testpg"
)

// retainDay is the old day the retention tests export; retainNow is
// their clock, a week later.
var (
	retainDay = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	retainNow = retainDay.AddDate(0, 0, 7).Add(10 * time.Hour)
)

// fillRetained records n clicks and n impressions on retainDay and one
// of each on the day before retainNow, which a week's retention keeps.
func fillRetained(t *testing.T, db *DB, n int) {
	t.Helper()
	at := func(i int) time.Time { return retainDay.Add(time.Duration(i) * 30 * time.Second) } // n up to 2,880
	recent := retainNow.Add(-24 * time.Hour)
	for i := range n + 1 {
		when := at(i)
		if i == n {
			when = recent
		}
		c := clicks.Click{Time: when, AdID: "a.example", AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
			IP: "192.0.2.1", Advertiser: "a.example", BidMicros: 1000, Currency: "EUR", Billable: true}
		if err := db.Clicks().Append(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		m := clicks.Impression{Time: when, AdID: "a.example", AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s",
			Page: "https://blog.example/a", IP: "192.0.2.1", Advertiser: "a.example", Currency: "EUR"}
		if _, err := db.Impressions().Append(t.Context(), []clicks.Impression{m}); err != nil {
			t.Fatal(err)
		}
	}
}

// rawRows is how many clicks and impressions the tables hold.
func rawRows(t *testing.T, db *DB) (cs, is int) {
	t.Helper()
	if err := db.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM clicks), (SELECT count(*) FROM impressions)`).Scan(&cs, &is); err != nil {
		t.Fatal(err)
	}
	return cs, is
}

// retentionJob is the job a replica named host runs over db, exporting to
// dir, its days recorded in exports.
func retentionJob(db *DB, exports clicks.Exports, host, dir string) *retention.Job {
	return countedJob(db, exports, host, dir, nil)
}

// countedJob is retentionJob counting in m.
func countedJob(db *DB, exports clicks.Exports, host, dir string, m *metrics.Metrics) *retention.Job {
	r := db.Retainer()
	return retention.New(r, retention.Options{Retention: 24 * time.Hour, Dir: dir, Now: func() time.Time { return retainNow },
		Exports: exports, Host: host, Turn: r.TryTurn, Metrics: m})
}

// counts checks that m's /metrics has each of lines.
func counts(t *testing.T, m *metrics.Metrics, lines ...string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, l := range lines {
		if !strings.Contains(rec.Body.String(), "\n"+l+"\n") {
			t.Errorf("/metrics lacks %s", l)
		}
	}
}

// files are the names of the files in dir, none when it is missing.
func files(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// exportLines are the lines of the export at path.
func exportLines(t *testing.T, path string) []string {
	t.Helper()
	var lines []string
	if err := retention.ReadFile(path, func(l []byte) error { lines = append(lines, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	return lines
}

// While another session holds the retention lock, a pass exports and
// deletes nothing; once it lets go, the next pass does both.
func TestRetentionWaitsForTheLock(t *testing.T) {
	url := testpg.New(t)
	db, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 5)
	holder, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, int32(retainLockClass)); err != nil {
		t.Fatal(err)
	}
	if release, ok, err := db.Retainer().TryTurn(t.Context()); err != nil || ok {
		if ok {
			release.Release()
		}
		t.Fatalf("TryTurn while another session holds the lock = %v, %v; want false", ok, err)
	}
	dir := filepath.Join(t.TempDir(), "export")
	var logged bytes.Buffer
	r := db.Retainer()
	job := retention.New(r, retention.Options{Retention: 24 * time.Hour, Dir: dir, Now: func() time.Time { return retainNow },
		Exports: r, Host: "a", Turn: r.TryTurn,
		Logger: slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err := job.Run(t.Context()); err != nil {
		t.Fatalf("a pass while the lock is held: %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(logged.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"level":"DEBUG"`) {
		t.Errorf("a skipped pass logged %q, want one debug line", lines)
	}
	logged.Reset()
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("a pass while the lock is held wrote %v", got)
	}
	if cs, is := rawRows(t, db); cs != 6 || is != 6 {
		t.Errorf("%d clicks and %d impressions after a pass while the lock is held, want 6 and 6", cs, is)
	}
	if _, ok, err := db.Retainer().Exported(t.Context(), clicks.ClickLog, retainDay); err != nil || ok {
		t.Errorf("a pass while the lock is held recorded the day: %v %v", ok, err)
	}

	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, int32(retainLockClass)); err != nil {
		t.Fatal(err)
	}
	if err := job.Run(t.Context()); err != nil {
		t.Fatalf("a pass once the lock is free: %v", err)
	}
	if got := files(t, dir); len(got) != 2 {
		t.Errorf("a pass once the lock is free wrote %v, want the day's two files", got)
	}
	for _, log := range clicks.RawLogs {
		path, _ := filepath.Abs(filepath.Join(dir, retention.FileName(log, retainDay)))
		want := `"msg":"exported day","log":"` + string(log) + `","day":"2026-08-01","rows":5,"host":"a","file":` + strconv.Quote(path)
		if !strings.Contains(logged.String(), want) {
			t.Errorf("no line %s in the pass's log:\n%s", want, logged.String())
		}
	}
	if cs, is := rawRows(t, db); cs != 1 || is != 1 {
		t.Errorf("%d clicks and %d impressions left, want the recent 1 and 1", cs, is)
	}
	// The pass let the lock go.
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, int32(retainLockClass)); err != nil {
		t.Fatal(err)
	}
}

// A replica's turn is its own: a second replica does not get it until
// the first lets go, or its connection ends.
func TestRetentionTurnsAreExclusive(t *testing.T) {
	url := testpg.New(t)
	a, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	releaseA, ok, err := a.Retainer().TryTurn(t.Context())
	if err != nil || !ok {
		t.Fatalf("the first TryTurn = %v, %v", ok, err)
	}
	if _, ok, err := b.Retainer().TryTurn(t.Context()); err != nil || ok {
		t.Fatalf("another replica's TryTurn while the first holds it = %v, %v; want false", ok, err)
	}
	releaseA.Release()
	releaseB, ok, err := b.Retainer().TryTurn(t.Context())
	if err != nil || !ok {
		t.Fatalf("TryTurn once the first let go = %v, %v", ok, err)
	}
	released := false
	defer func() {
		if !released {
			releaseB.Release()
		}
	}()
	// The replica holding it loses its connection: its session ends, and
	// the lock with it.
	var killed int
	if err := a.pool.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1 AND granted`, int64(retainLockClass)).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("ending the holder's session: %d ended, %v", killed, err)
	}
	release, ok, err := a.Retainer().TryTurn(t.Context())
	if err != nil || !ok {
		t.Fatalf("TryTurn once the holder's session ended = %v, %v", ok, err)
	}
	releaseB.Release() // says so on a dead connection, which goes
	released = true
	if _, ok, err := b.Retainer().TryTurn(t.Context()); err != nil || ok {
		t.Fatalf("TryTurn while the other holds it after a session ended = %v, %v; want false", ok, err)
	}
	release.Release()
}

// dyingExports are a replica's records that die before any is written:
// the replica stops between an export's rename and its record.
type dyingExports struct{ clicks.Exports }

var errDied = errors.New("the replica died")

func (dyingExports) RecordExport(context.Context, clicks.Export) (clicks.Export, error) {
	return clicks.Export{}, errDied
}

// A replica that dies after writing a day's file but before its record
// leaves the file and every row; the other replica's next pass exports
// the day again, to its own directory, records it and deletes it: two
// complete copies, no row lost.
func TestRetentionExportsAgainADayLeftWithoutItsRecord(t *testing.T) {
	url := testpg.New(t)
	dbA, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer dbA.Close()
	dbB, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer dbB.Close()
	const n = 2500 // more than a page of export and a transaction of deletion
	fillRetained(t, dbA, n)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")

	m := metrics.New() // the fleet's, as one
	if err := countedJob(dbA, dyingExports{dbA.Retainer()}, "a", dirA, m).Run(t.Context()); !errors.Is(err, errDied) {
		t.Fatalf("the dying replica's pass = %v, want it to die at the record", err)
	}
	name := retention.FileName(clicks.ClickLog, retainDay)
	if got := files(t, dirA); !slices.Equal(got, []string{name}) {
		t.Fatalf("the dying replica left %v, want %s", got, name)
	}
	if cs, is := rawRows(t, dbA); cs != n+1 || is != n+1 {
		t.Fatalf("%d clicks and %d impressions after the replica died, want %d of each", cs, is, n+1)
	}
	if _, ok, err := dbA.Retainer().Exported(t.Context(), clicks.ClickLog, retainDay); err != nil || ok {
		t.Fatalf("a record of the day the replica died exporting: %v %v", ok, err)
	}

	if err := countedJob(dbB, dbB.Retainer(), "b", dirB, m).Run(t.Context()); err != nil {
		t.Fatalf("the other replica's pass: %v", err)
	}
	counts(t, m, `adlink_retention_days_exported_total{log="clicks"} 1`, `adlink_retention_rows_exported_total{log="clicks"} 2500`)
	if got := files(t, dirB); len(got) != 2 {
		t.Errorf("the other replica wrote %v, want the day's two files", got)
	}
	if cs, is := rawRows(t, dbB); cs != 1 || is != 1 {
		t.Errorf("%d clicks and %d impressions left, want the recent 1 and 1", cs, is)
	}
	rec, ok, err := dbB.Retainer().Exported(t.Context(), clicks.ClickLog, retainDay)
	if err != nil || !ok {
		t.Fatalf("the day's record: %v %v", ok, err)
	}
	pathB, _ := filepath.Abs(filepath.Join(dirB, name))
	if rec.Host != "b" || rec.Path != pathB || rec.Rows != n {
		t.Errorf("the record names %s:%s with %d rows, want b:%s with %d", rec.Host, rec.Path, rec.Rows, pathB, n)
	}
	a, b := exportLines(t, filepath.Join(dirA, name)), exportLines(t, pathB)
	if len(b) != n || !slices.Equal(a, b) {
		t.Errorf("the two copies hold %d and %d rows, want the same %d", len(a), len(b), n)
	}

	// The record stands for the day on every replica: the first one,
	// back, exports nothing more.
	if err := retentionJob(dbA, dbA.Retainer(), "a", dirA).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dirA); len(got) != 1 {
		t.Errorf("the first replica, back, has %v, want only its first copy", got)
	}
}

// A day recorded exported is only deleted, wherever its file is: what a
// pass that stopped mid-deletion left goes, and none of it is written
// again. A day that holds more rows than its record says is left alone.
func TestRetentionOnlyDeletesADayRecorded(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 4)
	r := db.Retainer()
	elsewhere := clicks.Export{Day: retainDay, At: retainNow, Host: "other", Path: "/srv/export/day", Rows: 4}
	for _, log := range clicks.RawLogs {
		e := elsewhere
		e.Log = log
		if e.Seq, err = r.Mark(t.Context(), log); err != nil {
			t.Fatal(err)
		}
		if log == clicks.ImpressionLog {
			e.Rows = 3 // fewer than the day holds
		}
		if _, err := r.RecordExport(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := retentionJob(db, r, "a", dir).Run(t.Context()); !errors.Is(err, retention.ErrRowsAfterExport) {
		t.Errorf("a pass over a day with more rows than its record = %v, want ErrRowsAfterExport", err)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("a pass over recorded days wrote %v", got)
	}
	if cs, is := rawRows(t, db); cs != 1 || is != 5 {
		t.Errorf("%d clicks and %d impressions left, want the recorded day's clicks gone (1) and its impressions kept (5)", cs, is)
	}
}

// lateClick ships a click of retainDay now, as a replica's spool does
// after an outage, rolled up as every click is.
func lateClick(t *testing.T, db *DB, id string) {
	t.Helper()
	c := clicks.Click{ID: id, Time: retainDay.Add(13 * time.Hour), AdID: "late.example", AdType: "advertiser", Type: "search",
		APIKey: "k", SiteID: "s", IP: "192.0.2.9", Advertiser: "late.example", BidMicros: 1000, Currency: "EUR", Billable: true}
	if err := db.Ledger().Ship(t.Context(), []clicks.Spooled{{Click: c}}); err != nil {
		t.Fatal(err)
	}
}

// lateClicks are how many clicks of late.example the table holds.
func lateClicks(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM clicks WHERE ad_id = 'late.example'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// reported is what the daily rollups, which reports read, count of day.
func reported(t *testing.T, db *DB, day time.Time) clicks.Measures {
	t.Helper()
	var m clicks.Measures
	if err := db.Rollups().ScanRollups(t.Context(), clicks.Day, day, day.Add(24*time.Hour), func(r *clicks.Rollup) error {
		m.Add(&r.Measures)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// dayLines are the lines of log's export of day in dir, its late files'
// after its own, and the files they are in.
func dayLines(t *testing.T, dir string, log clicks.RawLog, day time.Time) (lines []string, paths []string) {
	t.Helper()
	paths, err := retention.DayFiles(dir, log, day)
	if err != nil {
		t.Fatal(err)
	}
	if err := retention.ReadDay(dir, log, day, func(l []byte) error { lines = append(lines, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	return lines, paths
}

// lateRecords are records that check, as each late file's record is
// made, that its file is in place and its rows are still in the store.
type lateRecords struct {
	Retainer
	t    *testing.T
	made *int
}

func (l lateRecords) RecordExport(ctx context.Context, e clicks.Export) (clicks.Export, error) {
	if e.FromSeq > 0 {
		*l.made++
		if _, err := os.Stat(e.Path); err != nil {
			l.t.Errorf("a late file recorded before it is in place: %v", err)
		}
		if n := lateClicks(l.t, l.db); n != 1 {
			l.t.Errorf("%d late clicks in the store as their file is recorded, want the 1 not yet deleted", n)
		}
	}
	return l.Retainer.RecordExport(ctx, e)
}

// A click shipped late into a day already exported goes, at the next
// pass, to a late file beside the day's, is recorded, and only then
// deleted; the pass goes on to the later days and the other log, and the
// reports count what they counted.
func TestRetentionExportsARowThatCameAfterItsDaysExport(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 4)
	dir := t.TempDir()
	if err := retentionJob(db, db.Retainer(), "a", dir).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	dayRec, ok, err := db.Retainer().Exported(t.Context(), clicks.ClickLog, retainDay)
	if err != nil || !ok {
		t.Fatalf("the day's record: %v %v", ok, err)
	}
	lateClick(t, db, "late-1")
	// A later day, old enough, that no pass has seen yet, in both logs.
	next := retainDay.AddDate(0, 0, 1)
	c := clicks.Click{Time: next.Add(time.Hour), AdID: "a.example", AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
		IP: "192.0.2.1", Advertiser: "a.example", Currency: "EUR"}
	if err := db.Clicks().Append(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	m := clicks.Impression{Time: next.Add(time.Hour), AdID: "a.example", AdType: "advertiser", Type: "intext", APIKey: "k",
		SiteID: "s", Page: "https://blog.example/a", IP: "192.0.2.1", Advertiser: "a.example", Currency: "EUR"}
	if _, err := db.Impressions().Append(t.Context(), []clicks.Impression{m}); err != nil {
		t.Fatal(err)
	}
	before := reported(t, db, retainDay)
	if before.Clicks != 1 { // fillRetained's rows are raw alone
		t.Fatalf("the rollups count %d clicks of the day, want the late 1", before.Clicks)
	}

	made := 0
	var logged bytes.Buffer
	r := db.Retainer()
	job := retention.New(r, retention.Options{Retention: 24 * time.Hour, Dir: dir, Now: func() time.Time { return retainNow },
		Exports: lateRecords{r, t, &made}, Host: "a", Turn: r.TryTurn, Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	if err := job.Run(t.Context()); err != nil {
		t.Fatalf("a pass over a day with a click shipped after its export: %v", err)
	}
	if made != 1 {
		t.Errorf("%d late files recorded, want 1", made)
	}
	if n := lateClicks(t, db); n != 0 {
		t.Errorf("%d late clicks left, want the exported one gone", n)
	}
	if cs, is := rawRows(t, db); cs != 1 || is != 1 {
		t.Errorf("%d clicks and %d impressions left, want the recent 1 and 1: the later day exported too", cs, is)
	}
	lines, paths := dayLines(t, dir, clicks.ClickLog, retainDay)
	late := retention.LateFileName(clicks.ClickLog, retainDay, dayRec.Seq)
	if len(paths) != 2 || filepath.Base(paths[0]) != retention.FileName(clicks.ClickLog, retainDay) || filepath.Base(paths[1]) != late {
		t.Fatalf("the day's files are %v, want its own and %s", paths, late)
	}
	if len(lines) != 5 || !strings.Contains(lines[4], `"id":"late-1"`) {
		t.Errorf("the day's files hold %d rows, the last %q; want 5, the late click last", len(lines), lines[len(lines)-1])
	}
	recs, err := r.DayExports(t.Context(), clicks.ClickLog, retainDay)
	if err != nil {
		t.Fatal(err)
	}
	latePath, _ := filepath.Abs(paths[1])
	if len(recs) != 2 || recs[0] != dayRec || recs[1].FromSeq != dayRec.Seq || recs[1].Seq <= dayRec.Seq ||
		recs[1].Rows != 1 || recs[1].Path != latePath || recs[1].Host != "a" {
		t.Errorf("the day's records are %+v, want its own %+v and one of 1 row in %s above its seq", recs, dayRec, latePath)
	}
	if !strings.Contains(logged.String(), `"msg":"exported late rows","log":"clicks","day":"2026-08-01","rows":1`) {
		t.Errorf("no line for the late file in the pass's log:\n%s", logged.String())
	}
	for _, log := range clicks.RawLogs {
		if lines, paths := dayLines(t, dir, log, next); len(lines) != 1 || len(paths) != 1 {
			t.Errorf("%s of the later day: %d rows in %v, want 1 in its own file", log, len(lines), paths)
		}
	}
	if impr, _ := dayLines(t, dir, clicks.ImpressionLog, retainDay); len(impr) != 4 {
		t.Errorf("the day's impressions are %d rows, want its 4 and no late file", len(impr))
	}
	if after := reported(t, db, retainDay); after != before {
		t.Errorf("the rollups count %+v of the day after the pass, want %+v as before", after, before)
	}

	// A pass over a day recorded with its late file deletes nothing more
	// and writes nothing.
	if err := retentionJob(db, r, "a", dir).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 5 {
		t.Errorf("the export directory holds %v after another pass, want the same 5 files", got)
	}
}

// A replica that dies between a late file and its record leaves the file
// and the late rows; the next pass, on another replica, exports them
// again: two copies, none lost.
func TestRetentionExportsAgainLateRowsLeftWithoutTheirRecord(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 4)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	m := metrics.New() // the fleet's, as one
	if err := countedJob(db, db.Retainer(), "a", dirA, m).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	lateClick(t, db, "late-1")
	lateClick(t, db, "late-2")
	if err := countedJob(db, dyingLateExports{db.Retainer()}, "a", dirA, m).Run(t.Context()); !errors.Is(err, errDied) {
		t.Fatalf("the dying replica's pass = %v, want it to die at the late file's record", err)
	}
	linesA, pathsA := dayLines(t, dirA, clicks.ClickLog, retainDay)
	if len(pathsA) != 2 || len(linesA) != 6 {
		t.Fatalf("the dying replica left %v with %d rows, want the day's file and a late one, 6 rows", pathsA, len(linesA))
	}
	if n := lateClicks(t, db); n != 2 {
		t.Fatalf("%d late clicks after the replica died, want both kept", n)
	}
	if recs, err := db.Retainer().DayExports(t.Context(), clicks.ClickLog, retainDay); err != nil || len(recs) != 1 {
		t.Fatalf("the day's records after the replica died: %+v %v, want its own only", recs, err)
	}

	if err := countedJob(db, db.Retainer(), "b", dirB, m).Run(t.Context()); err != nil {
		t.Fatalf("the other replica's pass: %v", err)
	}
	if n := lateClicks(t, db); n != 0 {
		t.Errorf("%d late clicks left, want both exported and gone", n)
	}
	counts(t, m, `adlink_retention_late_rows_total{log="clicks"} 2`, `adlink_retention_days_exported_total{log="clicks"} 1`,
		`adlink_retention_rows_exported_total{log="clicks"} 6`, `adlink_retention_rows_deleted_total{log="clicks"} 6`)
	linesB, pathsB := dayLines(t, dirB, clicks.ClickLog, retainDay)
	if len(pathsB) != 1 || filepath.Base(pathsB[0]) != filepath.Base(pathsA[1]) {
		t.Fatalf("the other replica wrote %v, want the late file %s only", pathsB, filepath.Base(pathsA[1]))
	}
	if !slices.Equal(linesB, linesA[4:]) {
		t.Errorf("the two copies of the late rows differ: %q and %q", linesA[4:], linesB)
	}
	recs, err := db.Retainer().DayExports(t.Context(), clicks.ClickLog, retainDay)
	if err != nil || len(recs) != 2 || recs[1].Host != "b" || recs[1].Rows != 2 {
		t.Errorf("the day's records: %+v %v, want its own and b's late file of 2 rows", recs, err)
	}
}

// dyingLateExports are a replica's records that die before any late
// file's is written.
type dyingLateExports struct{ Retainer }

func (d dyingLateExports) RecordExport(ctx context.Context, e clicks.Export) (clicks.Export, error) {
	if e.FromSeq > 0 {
		return clicks.Export{}, errDied
	}
	return d.Retainer.RecordExport(ctx, e)
}

// A pass stopped mid-deletion leaves the record and a remainder of the
// day, among which a late click would hide by count: the next pass
// deletes the remainder and exports the late click.
func TestRetentionExportsALateRowOfAHalfDeletedDay(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 4)
	dir := t.TempDir()
	died := retention.New(db.Retainer(), retention.Options{Retention: 24 * time.Hour, Dir: dir,
		Now: func() time.Time { return retainNow }, Exports: deletingDies{db.Retainer()}, Host: "b"})
	_ = died.Run(t.Context())
	if _, err := db.pool.Exec(t.Context(), `DELETE FROM clicks WHERE seq IN (SELECT seq FROM clicks ORDER BY at_ns, seq LIMIT 2)`); err != nil {
		t.Fatal(err)
	}
	lateClick(t, db, "late-2")
	if err := retentionJob(db, db.Retainer(), "b", dir).Run(t.Context()); err != nil {
		t.Fatalf("a pass over a half-deleted day with a late row: %v", err)
	}
	if cs, _ := rawRows(t, db); cs != 1 {
		t.Errorf("%d clicks left, want the recent one", cs)
	}
	lines, paths := dayLines(t, dir, clicks.ClickLog, retainDay)
	if len(paths) != 2 || len(lines) != 5 || !strings.Contains(lines[4], `"id":"late-2"`) {
		t.Errorf("the day's files %v hold %d rows, want 5 in 2 files, the late click last", paths, len(lines))
	}
}

// deletingDies are records whose replica dies once the day is recorded,
// before any of its rows is deleted.
type deletingDies struct{ Retainer }

func (d deletingDies) RecordExport(ctx context.Context, e clicks.Export) (clicks.Export, error) {
	if _, err := d.Retainer.RecordExport(ctx, e); err != nil {
		return clicks.Export{}, err
	}
	return clicks.Export{}, errDied
}

// A Mark taken while a click is being inserted waits for its commit and
// is at or above it: a row below the mark never commits after it, so an
// export read up to the mark holds every row its deletion takes.
func TestRetentionMarkWaitsForAnInsertInFlight(t *testing.T) {
	url := testpg.New(t)
	db, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 1)
	inserter, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer inserter.Close(context.Background())
	tx, err := inserter.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := tx.QueryRow(t.Context(), `INSERT INTO clicks (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag,
		ip, user_agent, country, advertiser, bid_micros, currency, billable, reason)
		SELECT at_ns, 'late.example', ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
		advertiser, bid_micros, currency, billable, reason FROM clicks ORDER BY seq LIMIT 1 RETURNING seq`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	marked := make(chan error, 1)
	var mark int64
	go func() {
		var err error
		mark, err = db.Retainer().Mark(context.Background(), clicks.ClickLog)
		marked <- err
	}()
	// The mark waits for the insert's lock.
	for waiting := false; !waiting; {
		if err := db.pool.QueryRow(t.Context(), `SELECT count(*) > 0 FROM pg_locks
			WHERE relation = 'clicks'::regclass AND mode = 'ShareLock' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-marked:
			t.Fatalf("Mark returned %d, %v while an insert was in flight", mark, err)
		default:
		}
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	if mark < seq {
		t.Errorf("Mark = %d, below the row %d that committed after it was asked", mark, seq)
	}
}

// turnKiller are records whose replica's lock connection ends once the
// day is recorded: the turn goes, the pass would go on.
type turnKiller struct {
	Retainer
	t *testing.T
}

func (k turnKiller) RecordExport(ctx context.Context, e clicks.Export) (clicks.Export, error) {
	rec, err := k.Retainer.RecordExport(ctx, e)
	var killed int
	if kerr := k.db.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1 AND granted`, int64(retainLockClass)).Scan(&killed); kerr != nil || killed != 1 {
		k.t.Errorf("ending the turn's session: %d ended, %v", killed, kerr)
	}
	return rec, err
}

// A pass whose lock connection ended, so that another replica's pass may
// be running, deletes nothing more; the next pass, with the turn, does.
func TestRetentionStopsWhenItsTurnIsLost(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 5
	fillRetained(t, db, n)
	dir := t.TempDir()
	err = retentionJob(db, turnKiller{db.Retainer(), t}, "a", dir).Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the turn is lost") {
		t.Errorf("a pass that lost its turn = %v, want it stopped", err)
	}
	if cs, is := rawRows(t, db); cs != n+1 || is != n+1 {
		t.Errorf("%d clicks and %d impressions left after the turn was lost, want all %d of each", cs, is, n+1)
	}
	if err := retentionJob(db, db.Retainer(), "a", dir).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if cs, is := rawRows(t, db); cs != 1 || is != 1 {
		t.Errorf("%d clicks and %d impressions left by the next pass, want the recent 1 and 1", cs, is)
	}
}

// A record made before exports kept their seq stands for every row of
// its day, as it did: the rest of the day goes.
func TestRetentionDeletesADayRecordedWithoutSeq(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 3)
	for _, log := range clicks.RawLogs {
		if _, err := db.pool.Exec(t.Context(), `INSERT INTO exports (log, day, exported_at, host, path, rows, sha256)
			VALUES ($1, $2, $3, 'old', '/srv/export/day', 3, $4)`, string(log), retainDay, retainNow, make([]byte, 32)); err != nil {
			t.Fatal(err)
		}
	}
	rec, ok, err := db.Retainer().Exported(t.Context(), clicks.ClickLog, retainDay)
	if err != nil || !ok || rec.Seq != math.MaxInt64 {
		t.Fatalf("a record without seq reads %+v, %v, %v; want every row's seq", rec, ok, err)
	}
	dir := t.TempDir()
	if err := retentionJob(db, db.Retainer(), "a", dir).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("a pass over days recorded before wrote %v", got)
	}
	if cs, is := rawRows(t, db); cs != 1 || is != 1 {
		t.Errorf("%d clicks and %d impressions left, want the recent 1 and 1", cs, is)
	}
}

// shippingDeletes are records over a store that gets a late click of the
// day after each of the pass's deletions, as a replica shipping its spool
// through the pass does.
type shippingDeletes struct {
	Retainer
	t *testing.T
	n *int
}

func (s shippingDeletes) DeleteDayTo(ctx context.Context, log clicks.RawLog, day time.Time, seq int64) (int, error) {
	deleted, err := s.Retainer.DeleteDayTo(ctx, log, day, seq)
	if log == clicks.ClickLog {
		*s.n++
		lateClick(s.t, s.db, "late-"+strconv.Itoa(*s.n))
	}
	return deleted, err
}

// Clicks that keep coming to a day while a pass exports its late ones
// hold it a few rounds, not for ever: the pass goes on to the other log
// and the spend without an error, and the next pass exports the rest.
func TestRetentionLeavesRowsThatKeepComingToTheNextPass(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 3)
	dir := t.TempDir()
	n := 0
	var logged bytes.Buffer
	r := db.Retainer()
	job := retention.New(r, retention.Options{Retention: 24 * time.Hour, Dir: dir, Now: func() time.Time { return retainNow },
		Exports: shippingDeletes{r, t, &n}, Host: "a", Turn: r.TryTurn, Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	if err := job.Run(t.Context()); err != nil {
		t.Fatalf("a pass while clicks keep coming to its day: %v", err)
	}
	if !strings.Contains(logged.String(), "rows keep coming to an exported day") {
		t.Errorf("the pass logged no warning of the rows it left:\n%s", logged.String())
	}
	if _, is := rawRows(t, db); is != 1 {
		t.Errorf("%d impressions left, want the recent 1: the other log exported in the same pass", is)
	}
	if left := lateClicks(t, db); left != 1 {
		t.Errorf("%d late clicks left after the pass, want the last one shipped", left)
	}
	lines, paths := dayLines(t, dir, clicks.ClickLog, retainDay)
	if len(lines) != 3+n-1 || len(paths) != n {
		t.Errorf("the day's %d files hold %d rows, want %d files holding %d", len(paths), len(lines), n, 3+n-1)
	}
	if err := retentionJob(db, r, "a", dir).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if lines, _ := dayLines(t, dir, clicks.ClickLog, retainDay); len(lines) != 3+n || lateClicks(t, db) != 0 {
		t.Errorf("after the next pass the day's files hold %d rows, want %d, and %d late clicks are left",
			len(lines), 3+n, lateClicks(t, db))
	}
}

// forgetful are records over a store whose deletion deletes nothing.
type forgetful struct{ Retainer }

func (forgetful) DeleteDayTo(context.Context, clicks.RawLog, time.Time, int64) (int, error) {
	return 0, nil
}

// A day still there after its deletion ends the pass with an error
// instead of going round, or leaving it as rows that came late.
func TestRetentionStopsAtAStoreThatKeepsADay(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 2)
	err = retentionJob(db, forgetful{db.Retainer()}, "a", t.TempDir()).Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "rows left after the day was deleted") {
		t.Errorf("a pass over a store that keeps its days = %v", err)
	}
}

// overtaken are records whose replica loses its turn once it has marked
// the late rows it is to write, to another replica's pass that exports,
// records and deletes the same late rows in the same directory before
// the first one's file is in place.
type overtaken struct {
	Retainer
	t     *testing.T
	other func()
	done  *bool
}

func (o overtaken) Mark(ctx context.Context, log clicks.RawLog) (int64, error) {
	seq, err := o.Retainer.Mark(ctx, log)
	if log == clicks.ClickLog && !*o.done {
		*o.done = true
		var killed int
		if err := o.db.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_locks
			WHERE locktype = 'advisory' AND classid = $1 AND granted`, int64(retainLockClass)).Scan(&killed); err != nil || killed != 1 {
			o.t.Errorf("ending the turn's session: %d ended, %v", killed, err)
		}
		o.other()
	}
	return seq, err
}

// A replica that lost its turn as it was to write a late file, overtaken by
// another replica's pass over the same rows in a shared directory, does
// not put its file over the one recorded: the recorded file holds the
// late click its record says, and the click is in the day's export.
func TestRetentionLeavesTheRecordedLateFileOfAPassThatOvertookIt(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 4)
	dir := t.TempDir()
	if err := retentionJob(db, db.Retainer(), "a", dir).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	lateClick(t, db, "late-1")
	done := false
	other := func() {
		if err := retentionJob(db, db.Retainer(), "b", dir).Run(t.Context()); err != nil {
			t.Errorf("the other replica's pass: %v", err)
		}
	}
	err = retentionJob(db, overtaken{db.Retainer(), t, other, &done}, "a", dir).Run(t.Context())
	if !done {
		t.Fatal("the pass wrote no late file")
	}
	if err == nil || !strings.Contains(err.Error(), "the turn is lost") {
		t.Errorf("a pass that lost its turn while writing a late file = %v, want it stopped", err)
	}
	if n := lateClicks(t, db); n != 0 {
		t.Errorf("%d late clicks left, want the other replica's pass to have deleted it", n)
	}
	recs, err := db.Retainer().DayExports(t.Context(), clicks.ClickLog, retainDay)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Host != "b" || recs[1].Rows != 1 {
		t.Fatalf("the day's records are %+v, want its own and the other replica's late file of 1 row", recs)
	}
	b, err := os.ReadFile(recs[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(b) != recs[1].SHA256 {
		t.Errorf("%s is not the file its record names: another file was put over it", recs[1].Path)
	}
	if lines := exportLines(t, recs[1].Path); len(lines) != 1 || !strings.Contains(lines[0], `"id":"late-1"`) {
		t.Errorf("the recorded late file holds %q, want the late click", lines)
	}
	if lines, _ := dayLines(t, dir, clicks.ClickLog, retainDay); len(lines) != 5 {
		t.Errorf("the day's files hold %d rows, want its 4 and the late click", len(lines))
	}
}

// The same holds of a day's own file: a replica overtaken as it was to
// write it leaves the other's recorded file in place, which holds the
// day.
func TestRetentionLeavesTheRecordedDayFileOfAPassThatOvertookIt(t *testing.T) {
	db, err := Open(t.Context(), testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillRetained(t, db, 4)
	dir := t.TempDir()
	done := false
	other := func() {
		if err := retentionJob(db, db.Retainer(), "b", dir).Run(t.Context()); err != nil {
			t.Errorf("the other replica's pass: %v", err)
		}
	}
	err = retentionJob(db, overtaken{db.Retainer(), t, other, &done}, "a", dir).Run(t.Context())
	if !done {
		t.Fatal("the pass marked no clicks")
	}
	if err == nil || !strings.Contains(err.Error(), "the turn is lost") {
		t.Errorf("a pass that lost its turn as it was to write a day = %v, want it stopped", err)
	}
	rec, ok, err := db.Retainer().Exported(t.Context(), clicks.ClickLog, retainDay)
	if err != nil || !ok || rec.Host != "b" || rec.Rows != 4 {
		t.Fatalf("the day's record is %+v, %v, %v; want the other replica's of 4 rows", rec, ok, err)
	}
	b, err := os.ReadFile(rec.Path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(b) != rec.SHA256 {
		t.Errorf("%s is not the file its record names: another file was put over it", rec.Path)
	}
	if lines, _ := dayLines(t, dir, clicks.ClickLog, retainDay); len(lines) != 4 {
		t.Errorf("the day's files hold %d rows, want its 4", len(lines))
	}
}
