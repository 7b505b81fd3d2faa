package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/retention"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// reportedDay is the demo partner's clicks and impressions of day in the
// report h answers.
func reportedDay(t *testing.T, h http.Handler, day time.Time) (cs, is int64) {
	t.Helper()
	d := day.UTC().Format(time.DateOnly)
	req := httptest.NewRequest(http.MethodGet, "/v2/report?from="+d+"&to="+d+"&group_by=day", nil)
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct {
		Rows []struct{ Clicks, Impressions int64 }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("report: %d %v %s", rec.Code, err, rec.Body)
	}
	for _, r := range resp.Rows {
		cs += r.Clicks
		is += r.Impressions
	}
	return cs, is
}

// seedRaw records perDay clicks and twice as many impressions on each of
// days for the demo partner, and 2 clicks and 4 impressions at recent.
func seedRaw(t *testing.T, db *pgstore.DB, recent time.Time, days []time.Time, perDay int) {
	t.Helper()
	for i, day := range append([]time.Time{recent.Truncate(24 * time.Hour)}, days...) {
		n := perDay
		if i == 0 {
			n = 2 // the recent day's
		}
		for j := range n {
			at := day.Add(time.Duration(j) * 17 * time.Minute)
			if i == 0 {
				at = recent
			}
			c := clicks.Click{Time: at, AdID: "handy-bestkauf.de", APIKey: "demo", SiteID: "demo", IP: "192.0.2.1", Reason: clicks.ReasonBot}
			if err := db.Ledger().Record(t.Context(), &c, clicks.Use{}); err != nil {
				t.Fatal(err)
			}
			m := clicks.Impression{Time: at, AdID: "handy-bestkauf.de", AdType: "advertiser", Type: "intext", APIKey: "demo",
				SiteID: "demo", Page: "https://blog.example/a", IP: "192.0.2.1"}
			if _, err := db.Impressions().Append(t.Context(), []clicks.Impression{m, m}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPostgresRetentionExportsEachDayOnce: two replicas on one Postgres,
// over three days of clicks and impressions older than the retention,
// run their passes at once, again and again. Each old day is exported
// once, to one replica's directory, and recorded with its host and file;
// its raw rows are gone from Postgres, the recent ones stay, and both
// replicas' reports count the old days as before.
func TestPostgresRetentionExportsEachDayOnce(t *testing.T) {
	url := testpg.New(t)
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	keep := testConfig(t).Retention
	var days []time.Time
	for i := range 3 {
		days = append(days, now.Add(-keep).Truncate(24*time.Hour).AddDate(0, 0, -1-i))
	}
	recent := now.Add(-time.Hour)
	const perDay = 40 // clicks; twice as many impressions

	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedRaw(t, db, recent, days, perDay)

	replicas := make([]*App, 2)
	passed := make([]chan error, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range replicas {
		passed[i] = make(chan error, 16)
		cfg := testConfig(t)
		cfg.PostgresURL = url
		wg.Go(func() {
			replicas[i], errs[i] = New(cfg, Options{Now: func() time.Time { return now }, RetentionPassed: func(err error) { passed[i] <- err }})
		})
	}
	wg.Wait()
	for i, a := range replicas {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { a.Close() })
	}
	for i := range replicas {
		if err := <-passed[i]; err != nil {
			t.Fatalf("replica %d's first pass: %v", i, err)
		}
	}
	// More passes at once, on both.
	runErrs := make(chan error, 8)
	for range 4 {
		for _, a := range replicas {
			wg.Go(func() { runErrs <- a.retention.Run(t.Context()) })
		}
	}
	wg.Wait()
	close(runErrs)
	for err := range runErrs {
		if err != nil {
			t.Fatalf("a pass: %v", err)
		}
	}

	// Every old day's two files, once across both directories.
	where := map[string]string{}
	for _, a := range replicas {
		dir := filepath.Join(filepath.Dir(a.DataFile), "export")
		es, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) { // a replica whose passes all found the lock taken
			t.Fatal(err)
		}
		for _, e := range es {
			if other, ok := where[e.Name()]; ok {
				t.Errorf("%s exported twice: in %s and %s", e.Name(), other, dir)
			}
			where[e.Name()] = dir
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	r := db.Retainer()
	for _, day := range days {
		for _, log := range clicks.RawLogs {
			dir, ok := where[retention.FileName(log, day)]
			if !ok {
				t.Errorf("%s of %v exported nowhere", log, day)
				continue
			}
			rec, ok, err := r.Exported(t.Context(), log, day)
			if err != nil || !ok {
				t.Errorf("%s of %v has no record: %v", log, day, err)
				continue
			}
			want := perDay
			if log == clicks.ImpressionLog {
				want = 2 * perDay
			}
			if rec.Host != host || rec.Path != filepath.Join(dir, retention.FileName(log, day)) || rec.Rows != want {
				t.Errorf("%s of %v is recorded at %s:%s with %d rows, want %s:%s with %d", log, day, rec.Host, rec.Path, rec.Rows,
					host, filepath.Join(dir, retention.FileName(log, day)), want)
			}
		}
	}
	if len(where) != 2*len(days) {
		t.Errorf("%d export files, want %d: %v", len(where), 2*len(days), where)
	}

	var cs, is int
	if err := db.Pool().QueryRow(t.Context(), `SELECT (SELECT count(*) FROM clicks), (SELECT count(*) FROM impressions)`).Scan(&cs, &is); err != nil {
		t.Fatal(err)
	}
	if cs != 2 || is != 4 {
		t.Errorf("%d clicks and %d impressions left in Postgres, want the recent 2 and 4", cs, is)
	}
	for _, a := range replicas {
		for _, day := range days {
			if c, i := reportedDay(t, a.Handler, day); c != perDay || i != 2*perDay {
				t.Errorf("the report of %v counts %d clicks and %d impressions, want %d and %d", day, c, i, perDay, 2*perDay)
			}
		}
	}
}

// dyingExports are the records of a replica that dies between an export's
// rename and its record.
type dyingExports struct{ clicks.Exports }

var errDied = errors.New("the replica died")

func (dyingExports) RecordExport(context.Context, clicks.Export) (clicks.Export, error) {
	return clicks.Export{}, errDied
}

// TestPostgresRetentionAfterAReplicaDied: a replica died after writing a
// day's file and before recording it; the other replica's first pass
// exports the day again, records its own copy and deletes the day. The
// two copies hold the same rows, every row of the day.
func TestPostgresRetentionAfterAReplicaDied(t *testing.T) {
	url := testpg.New(t)
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	cfg := testConfig(t)
	cfg.PostgresURL = url
	cfg.RetentionHost = "adlink-b"
	day := now.Add(-cfg.Retention).Truncate(24*time.Hour).AddDate(0, 0, -1)
	const perDay = 30
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedRaw(t, db, now.Add(-time.Hour), []time.Time{day}, perDay)

	dead := filepath.Join(t.TempDir(), "export")
	r := db.Retainer()
	died := retention.New(r, retention.Options{Retention: cfg.Retention, Dir: dead, Now: func() time.Time { return now },
		Exports: dyingExports{r}, Host: "dead", Turn: r.TryTurn})
	if err := died.Run(t.Context()); !errors.Is(err, errDied) {
		t.Fatalf("the dying replica's pass = %v, want it to die at the record", err)
	}
	name := retention.FileName(clicks.ClickLog, day)
	if _, err := os.Stat(filepath.Join(dead, name)); err != nil {
		t.Fatalf("the dying replica's file: %v", err)
	}

	passed := make(chan error, 4)
	a, err := New(cfg, Options{Now: func() time.Time { return now }, RetentionPassed: func(err error) { passed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := <-passed; err != nil {
		t.Fatalf("the other replica's first pass: %v", err)
	}
	mine := filepath.Join(cfg.DataDir, "export", name)
	rec, ok, err := r.Exported(t.Context(), clicks.ClickLog, day)
	if err != nil || !ok || rec.Path != mine || rec.Rows != perDay || rec.Host != cfg.RetentionHost {
		t.Fatalf("the day's record %+v %v %v, want %s on %s with %d rows", rec, ok, err, mine, cfg.RetentionHost, perDay)
	}
	lines := func(path string) []string {
		var out []string
		if err := retention.ReadFile(path, func(l []byte) error { out = append(out, string(l)); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if first, second := lines(filepath.Join(dead, name)), lines(mine); len(second) != perDay || !slices.Equal(first, second) {
		t.Errorf("the copies hold %d and %d rows, want the same %d", len(first), len(second), perDay)
	}
	var cs int
	if err := db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM clicks`).Scan(&cs); err != nil {
		t.Fatal(err)
	}
	if cs != 2 {
		t.Errorf("%d clicks left in Postgres, want the recent 2", cs)
	}
	if c, _ := reportedDay(t, a.Handler, day); c != perDay {
		t.Errorf("the report of the day counts %d clicks, want %d", c, perDay)
	}
}

// TestPostgresRetentionExportsALateClick: a click a replica spooled in an
// outage is shipped after its day was exported. The next pass exports it
// to a late file beside the day's, deletes it, and still exports the
// later days; the report of its day counts it before and after.
func TestPostgresRetentionExportsALateClick(t *testing.T) {
	url := testpg.New(t)
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	cfg := testConfig(t)
	cfg.PostgresURL = url
	day := now.Add(-cfg.Retention).Truncate(24*time.Hour).AddDate(0, 0, -2)
	const perDay = 10
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seedRaw(t, db, now.Add(-time.Hour), []time.Time{day}, perDay)
	passed := make(chan error, 4)
	a, err := New(cfg, Options{Now: func() time.Time { return now }, RetentionPassed: func(err error) { passed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := <-passed; err != nil {
		t.Fatalf("the first pass: %v", err)
	}

	late := clicks.Click{ID: "spooled-1", Time: day.Add(20 * time.Hour), AdID: "handy-bestkauf.de", APIKey: "demo", SiteID: "demo",
		IP: "192.0.2.7", Reason: clicks.ReasonBot}
	if err := db.Ledger().Ship(t.Context(), []clicks.Spooled{{Click: late}}); err != nil {
		t.Fatal(err)
	}
	next := day.AddDate(0, 0, 1)
	seedRaw(t, db, now.Add(-time.Hour), []time.Time{next}, perDay)
	if c, _ := reportedDay(t, a.Handler, day); c != perDay+1 {
		t.Fatalf("the report of the day counts %d clicks, want %d with the late one", c, perDay+1)
	}
	if err := a.retention.Run(t.Context()); err != nil {
		t.Fatalf("the pass after the late click: %v", err)
	}
	dir := filepath.Join(cfg.DataDir, "export")
	var ids []string
	if err := retention.ReadDay(dir, clicks.ClickLog, day, func(l []byte) error {
		var c clicks.Click
		if err := json.Unmarshal(l, &c); err != nil {
			return err
		}
		ids = append(ids, c.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != perDay+1 || ids[perDay] != "spooled-1" {
		t.Errorf("the day's files hold %d clicks, the last %q; want %d, the late one last", len(ids), ids[len(ids)-1], perDay+1)
	}
	if _, err := os.Stat(filepath.Join(dir, retention.FileName(clicks.ImpressionLog, next))); err != nil {
		t.Errorf("the later day's impressions: %v", err)
	}
	var cs int
	if err := db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM clicks`).Scan(&cs); err != nil {
		t.Fatal(err)
	}
	if cs != 4 {
		t.Errorf("%d clicks left in Postgres, want the recent 4", cs)
	}
	if c, i := reportedDay(t, a.Handler, day); c != perDay+1 || i != 2*perDay {
		t.Errorf("the report of the day counts %d clicks and %d impressions, want %d and %d", c, i, perDay+1, 2*perDay)
	}
}
