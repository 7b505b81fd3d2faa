package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/retention"
	"github.com/adlink/adlink/backend/store"
)

// stores are the stores of one state file.
type stores struct {
	db          *bolt.DB
	ledger      *clicks.BoltLedger
	log         *clicks.Log
	impressions *clicks.BoltImpressions
	rollups     clicks.BoltRollups
	retainer    *clicks.BoltRetainer
}

func openStores(t testing.TB, db *bolt.DB) *stores {
	t.Helper()
	s := &stores{db: db}
	var err error
	if s.ledger, err = clicks.NewLedger(db); err != nil {
		t.Fatal(err)
	}
	if s.log, err = clicks.New(db); err != nil {
		t.Fatal(err)
	}
	if s.impressions, err = clicks.NewImpressions(db); err != nil {
		t.Fatal(err)
	}
	if s.rollups, err = clicks.NewRollups(db); err != nil {
		t.Fatal(err)
	}
	if s.retainer, err = clicks.NewRetainer(db); err != nil {
		t.Fatal(err)
	}
	return s
}

// openDir opens the state file in dir; the test closes it at its end
// unless it did first.
func openDir(t *testing.T, dir string) *stores {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return openStores(t, db)
}

var now = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

const ninety = 90 * 24 * time.Hour

func click(at time.Time, i int) clicks.Click {
	return clicks.Click{Time: at, AdID: fmt.Sprintf("ad%d.example", i%7), AdType: "advertiser", Type: "search", APIKey: "k",
		SiteID: fmt.Sprintf("s%d", i%3), Criterion: "handy", YkTag: fmt.Sprintf("t%d", i%5), IP: fmt.Sprintf("198.51.%d.%d", i/250%250, i%250),
		UserAgent: "Mozilla/5.0", Country: "de", Advertiser: fmt.Sprintf("ad%d.example", i%7), BidMicros: 120000, Currency: "EUR"}
}

func impression(at time.Time, i int) clicks.Impression {
	return clicks.Impression{Time: at, AdID: fmt.Sprintf("ad%d.example", i%7), AdType: "advertiser", Type: "intext", APIKey: "k",
		SiteID: fmt.Sprintf("s%d", i%3), Criterion: "handy", Page: "https://blog.example/" + fmt.Sprint(i%11), IP: "192.0.2.1",
		Advertiser: fmt.Sprintf("ad%d.example", i%7), Currency: "EUR"}
}

// record writes clicks through the ledger (every third one already judged
// not billable, the others settled there) and an impression beside each.
func (s *stores) record(t testing.TB, times ...time.Time) {
	t.Helper()
	var imps []clicks.Impression
	// Clicks recorded together share commits.
	var wg sync.WaitGroup
	const workers = 16
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(times); i += workers {
				c := click(times[i], i)
				if i%3 == 0 {
					c.Reason = clicks.ReasonBot
				}
				if err := s.ledger.Record(context.Background(), &c, clicks.Use{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, at := range times {
		imps = append(imps, impression(at, i))
	}
	if _, err := s.impressions.Append(context.Background(), imps); err != nil {
		t.Fatal(err)
	}
}

// rows returns every row of log in the store, each as its JSON.
func (s *stores) rows(t *testing.T, log clicks.RawLog) []string {
	t.Helper()
	var out []string
	add := func(v any) error {
		b, err := json.Marshal(v)
		out = append(out, string(b))
		return err
	}
	var err error
	if log == clicks.ClickLog {
		err = s.log.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error { return add(c) })
	} else {
		err = s.impressions.Scan(t.Context(), time.Time{}, time.Time{}, func(i clicks.Impression) error { return add(i) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *stores) allRollups(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range []clicks.Grain{clicks.Hour, clicks.Day} {
		if err := s.rollups.ScanRollups(t.Context(), g, time.Unix(0, 0), now.AddDate(1, 0, 0), func(r *clicks.Rollup) error {
			out = append(out, fmt.Sprintf("%d %+v", g, *r))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// exported returns the rows of the export files of log in dir, oldest day
// first, each as it decodes and encodes again.
func exported(t *testing.T, dir string, log clicks.RawLog) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, string(log)+"-*.jsonl.zst"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var out []string
	for _, f := range files {
		if err := retention.ReadFile(f, func(line []byte) error {
			var v any = &clicks.Click{}
			if log == clicks.ImpressionLog {
				v = &clicks.Impression{}
			}
			if err := json.Unmarshal(line, v); err != nil {
				return fmt.Errorf("%s: %w", line, err)
			}
			b, err := json.Marshal(v)
			out = append(out, string(b))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func exportNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// TestExportThenDelete: a pass exports every whole day older than the
// retention, files and store together hold exactly the rows that were
// there, the day at the boundary stays, the rollups stay, and a second
// pass changes nothing.
func TestExportThenDelete(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, filepath.Join(dir, "data"))
	// now - 90 days is 2026-08-26 10:00: the 25th is the last whole day
	// older than that; the 26th has not ended 90 days ago.
	times := []time.Time{
		day(2026, 8, 23).Add(time.Hour), day(2026, 8, 23).Add(2 * time.Hour), day(2026, 8, 24),
		day(2026, 8, 26).Add(-time.Nanosecond), // the 25th's last instant
		day(2026, 8, 26), day(2026, 8, 26).Add(9 * time.Hour), now.Add(-time.Hour),
	}
	s.record(t, times...)
	wantClicks, wantImps, wantRollups := s.rows(t, clicks.ClickLog), s.rows(t, clicks.ImpressionLog), s.allRollups(t)

	var logs bytes.Buffer
	exports := filepath.Join(dir, "export")
	job := retention.New(s.retainer, retention.Options{Retention: ninety, Dir: exports, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"clicks-2026-08-23.jsonl.zst", "clicks-2026-08-24.jsonl.zst", "clicks-2026-08-25.jsonl.zst",
		"impressions-2026-08-23.jsonl.zst", "impressions-2026-08-24.jsonl.zst", "impressions-2026-08-25.jsonl.zst"}
	if got := exportNames(t, exports); !slices.Equal(got, want) {
		t.Fatalf("exports %q, want %q", got, want)
	}
	for _, log := range clicks.RawLogs {
		left := s.rows(t, log)
		if len(left) != 3 {
			t.Errorf("%d %s left, want the 3 of the 26th and later", len(left), log)
		}
		got := append(exported(t, exports, log), left...)
		wantRows := wantClicks
		if log == clicks.ImpressionLog {
			wantRows = wantImps
		}
		if !slices.Equal(got, wantRows) {
			t.Errorf("%s exported and left:\n%s\nwant\n%s", log, strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
		}
	}
	if got := s.allRollups(t); !slices.Equal(got, wantRollups) {
		t.Errorf("the rollups changed")
	}
	if n := strings.Count(logs.String(), `msg="exported day"`); n != 6 {
		t.Errorf("%d lines of days exported, want 6:\n%s", n, logs.String())
	}

	before := map[string][]byte{}
	for _, name := range want {
		before[name], _ = os.ReadFile(filepath.Join(exports, name))
	}
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if b, _ := os.ReadFile(filepath.Join(exports, name)); !bytes.Equal(b, before[name]) {
			t.Errorf("a second pass rewrote %s", name)
		}
	}
	if got := exportNames(t, exports); !slices.Equal(got, want) {
		t.Errorf("exports after a second pass %q", got)
	}
}

// TestRetentionZeroKeepsEverything: with no retention a pass touches
// nothing and Start starts nothing.
func TestRetentionZeroKeepsEverything(t *testing.T) {
	s := openDir(t, t.TempDir())
	s.record(t, day(2020, 1, 1))
	exports := filepath.Join(t.TempDir(), "export")
	job := retention.New(s.retainer, retention.Options{Dir: exports, Now: func() time.Time { return now },
		Passed: func(error) { t.Error("a pass ran with no retention") }})
	job.Start()
	job.Stop()
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(s.rows(t, clicks.ClickLog)) != 1 || len(exportNames(t, exports)) != 0 {
		t.Error("retention 0 exported or removed rows")
	}
}

// failing is a Retainer that fails where a crash would stop a pass.
type failing struct {
	clicks.Retainer
	exportAfter int // ExportDay writes this many bytes, then fails
	deleteFails bool
}

var errCrash = errors.New("crash")

func (f failing) ExportDay(ctx context.Context, log clicks.RawLog, day time.Time, w io.Writer) (int, error) {
	if f.exportAfter < 0 {
		return f.Retainer.ExportDay(ctx, log, day, w)
	}
	var buf bytes.Buffer
	if _, err := f.Retainer.ExportDay(ctx, log, day, &buf); err != nil {
		return 0, err
	}
	w.Write(buf.Bytes()[:min(buf.Len(), f.exportAfter)])
	return 0, errCrash
}

func (f failing) DeleteDay(ctx context.Context, log clicks.RawLog, day time.Time) (int, error) {
	if f.deleteFails {
		return 0, errCrash
	}
	return f.Retainer.DeleteDay(ctx, log, day)
}

// TestCrashesLoseNothing stops passes where a crash could: while a day is
// written, after its file is in place but before any row is deleted, and
// with the day's rows part deleted; each time the process restarts. In the
// end the files hold every row once and the store none of the day.
func TestCrashesLoseNothing(t *testing.T) {
	dir := t.TempDir()
	data, exports := filepath.Join(dir, "data"), filepath.Join(dir, "export")
	s := openDir(t, data)
	old := day(2026, 8, 20)
	var times []time.Time
	for i := range 5000 { // more than one transaction's worth of rows
		times = append(times, old.Add(time.Duration(i)*time.Second))
	}
	s.record(t, times...)
	want := s.rows(t, clicks.ClickLog)
	opts := retention.Options{Retention: ninety, Dir: exports, Now: func() time.Time { return now }}

	// A crash while the export is written leaves a temporary file and no
	// export.
	if err := retention.New(failing{Retainer: s.retainer, exportAfter: 1000}, opts).Run(t.Context()); !errors.Is(err, errCrash) {
		t.Fatalf("pass = %v, want the crash", err)
	}
	if names := exportNames(t, exports); len(names) != 0 {
		t.Errorf("a failed export left %q", names)
	}
	// A hard crash leaves the temporary file behind.
	stray := filepath.Join(exports, ".export-clicks-2026-08-20.jsonl.zst-4711")
	if err := os.WriteFile(stray, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The export completes, then the process dies before deleting.
	if err := retention.New(failing{Retainer: s.retainer, exportAfter: -1, deleteFails: true}, opts).Run(t.Context()); !errors.Is(err, errCrash) {
		t.Fatalf("pass = %v, want the crash", err)
	}
	file := filepath.Join(exports, "clicks-2026-08-20.jsonl.zst")
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the export is not in place: %v", err)
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the half-written export of an earlier crash is still there: %v", err)
	}
	if got := s.rows(t, clicks.ClickLog); !slices.Equal(got, want) {
		t.Fatalf("rows went before they were deleted: %d of %d left", len(got), len(want))
	}

	// The process dies again with part of the day deleted: the oldest
	// rows, as DeleteDay goes.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("clicks"))
		for _, k := range s.rowsIn(tx)[:2500] {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}

	// Restarted, the pass finds the file complete and only deletes.
	s = openDir(t, data)
	if left := s.rows(t, clicks.ClickLog); len(left) != 2500 {
		t.Fatalf("%d rows before the restarted pass, want 2500", len(left))
	}
	if err := retention.New(s.retainer, opts).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, written) {
		t.Error("the restarted pass wrote the export again")
	}
	if left := s.rows(t, clicks.ClickLog); len(left) != 0 {
		t.Errorf("%d rows of the day left", len(left))
	}
	if got := exported(t, exports, clicks.ClickLog); !slices.Equal(got, want) {
		t.Errorf("the export holds %d rows, want the %d there were, once each", len(got), len(want))
	}
	if got := exported(t, exports, clicks.ImpressionLog); len(got) != len(times) {
		t.Errorf("%d impressions exported, want %d", len(got), len(times))
	}
}

// rowsIn returns the keys of the click log in tx.
func (s *stores) rowsIn(tx *bolt.Tx) [][]byte {
	var keys [][]byte
	tx.Bucket([]byte("clicks")).ForEach(func(k, _ []byte) error {
		keys = append(keys, bytes.Clone(k))
		return nil
	})
	return keys
}

// TestRowsAfterExportAreKept: a row recorded for a day after its export
// (a clock stepped back) is not deleted unexported; the pass says why, and
// once the file is moved aside the next pass exports it.
func TestRowsAfterExportAreKept(t *testing.T) {
	dir := t.TempDir()
	exports := filepath.Join(dir, "export")
	s := openDir(t, filepath.Join(dir, "data"))
	s.record(t, day(2026, 8, 1).Add(time.Hour), day(2026, 8, 1).Add(2*time.Hour))
	job := retention.New(s.retainer, retention.Options{Retention: ninety, Dir: exports, Now: func() time.Time { return now }})
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.record(t, day(2026, 8, 1).Add(90*time.Minute))
	err := job.Run(t.Context())
	if !errors.Is(err, retention.ErrRowsAfterExport) {
		t.Fatalf("pass over a row recorded after its day's export = %v, want ErrRowsAfterExport", err)
	}
	if n := len(s.rows(t, clicks.ClickLog)); n != 1 {
		t.Fatalf("%d rows left, want the late one", n)
	}
	for _, log := range clicks.RawLogs {
		name := retention.FileName(log, day(2026, 8, 1))
		if err := os.Rename(filepath.Join(exports, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := exported(t, exports, clicks.ClickLog); len(got) != 1 || !strings.Contains(got[0], "T01:30:00Z") {
		t.Errorf("the late row's export: %q", got)
	}
}

// TestStartRunsAtOnce: Start runs a pass at once, in the background, and
// Stop waits for it.
func TestStartRunsAtOnce(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, filepath.Join(dir, "data"))
	s.record(t, day(2026, 8, 1))
	passed := make(chan error, 1)
	job := retention.New(s.retainer, retention.Options{Retention: ninety, Dir: filepath.Join(dir, "export"), Every: time.Hour,
		Now: func() time.Time { return now }, Passed: func(err error) { passed <- err }})
	job.Start()
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	job.Stop()
	if n := len(s.rows(t, clicks.ClickLog)); n != 0 {
		t.Errorf("%d rows left after the first pass", n)
	}
}

// forgetful is a Retainer whose DeleteDay deletes nothing.
type forgetful struct{ clicks.Retainer }

func (forgetful) DeleteDay(context.Context, clicks.RawLog, time.Time) (int, error) { return 0, nil }

// TestStoreThatKeepsADayStopsThePass: a day still there after its
// deletion ends the pass with an error instead of going round forever.
func TestStoreThatKeepsADayStopsThePass(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, filepath.Join(dir, "data"))
	s.record(t, day(2026, 8, 1))
	job := retention.New(forgetful{s.retainer}, retention.Options{Retention: ninety, Dir: filepath.Join(dir, "export"),
		Now: func() time.Time { return now }})
	if err := job.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "rows left") {
		t.Errorf("pass over a store that keeps its days = %v", err)
	}
}

// TestSpendOfZonesBehindUTCIsKept: at 05:00 UTC an advertiser at UTC-8
// is still on the day before UTC's, whose spend holds its budget: a pass
// that keeps one day of spend keeps that one too, and forgets the day
// before it.
func TestSpendOfZonesBehindUTCIsKept(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, filepath.Join(dir, "data"))
	at := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	for i, when := range []time.Time{at, at.Add(-24 * time.Hour)} {
		c := click(when, 0)
		c.IP = fmt.Sprintf("192.0.2.%d", i+1)
		if err := s.ledger.Record(t.Context(), &c, clicks.Use{Budget: 1_000_000, Zone: "America/Los_Angeles"}); err != nil || !c.Billable {
			t.Fatalf("Record: %v, billable %v %q", err, c.Billable, c.Reason)
		}
	}
	job := retention.New(s.retainer, retention.Options{Retention: ninety, Dir: filepath.Join(dir, "export"), SpendDays: 1,
		Now: func() time.Time { return at }})
	if err := job.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	today := clicks.BudgetDayIn(at, la)
	for _, tt := range []struct {
		day  clicks.BudgetDay
		want int64
	}{{today, 120000}, {today - 1, 0}} {
		if got, err := s.rollups.SpentOn(t.Context(), "ad0.example", tt.day); err != nil || got != tt.want {
			t.Errorf("the spend of Los Angeles' day %d after the pass: %d (%v), want %d", tt.day, got, err, tt.want)
		}
	}
}
