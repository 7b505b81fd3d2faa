package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Exports runs the contract of clicks.Exports against the stores fresh
// opens. fresh returns an Opener over a new, empty backing.
func Exports(t *testing.T, fresh func(t *testing.T) Opener[clicks.Exports]) {
	t.Helper()
	day := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	rec := func(host string) clicks.Export {
		return clicks.Export{Log: clicks.ClickLog, Day: day, At: day.AddDate(0, 3, 0).Add(90*time.Minute + 1500*time.Microsecond),
			Host: host, Path: "/var/lib/adlink/" + host + "/export/" + "clicks-2026-08-01.jsonl.zst", Rows: 1234,
			SHA256: [32]byte{1, 2, 3, 31: 0xff}, Seq: 4321}
	}
	exported := func(t *testing.T, s clicks.Exports, log clicks.RawLog, day time.Time) (clicks.Export, bool) {
		t.Helper()
		e, ok, err := s.Exported(within(t, 10*time.Second), log, day)
		if err != nil {
			t.Fatalf("Exported %s %v: %v", log, day, err)
		}
		return e, ok
	}
	// same compares records, At to the microsecond a database keeps.
	same := func(t *testing.T, what string, got, want clicks.Export) {
		t.Helper()
		if d := got.At.Sub(want.At); d <= -time.Microsecond || d >= time.Microsecond {
			t.Errorf("%s: At %v, want %v", what, got.At, want.At)
		}
		if !got.Day.Equal(want.Day) {
			t.Errorf("%s: Day %v, want %v", what, got.Day, want.Day)
		}
		got.At, want.At, got.Day, want.Day = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}

	t.Run("RecordIsDurableAndFound", func(t *testing.T) {
		o := fresh(t)
		s, closeFn := open(t, o)
		for _, log := range clicks.RawLogs {
			if e, ok := exported(t, s, log, day); ok {
				t.Errorf("Exported of an empty store = %+v", e)
			}
		}
		want := rec("a")
		got, err := s.RecordExport(within(t, 10*time.Second), want)
		if err != nil {
			t.Fatalf("RecordExport: %v", err)
		}
		same(t, "RecordExport's answer", got, want)
		closeFn()
		s, _ = open(t, o)
		got, ok := exported(t, s, clicks.ClickLog, day)
		if !ok {
			t.Fatal("the record is gone after a restart")
		}
		same(t, "Exported after a restart", got, want)
		if !got.Day.Equal(day) || got.Day.Location() != time.UTC {
			t.Errorf("Exported's day %v, want %v in UTC", got.Day, day)
		}
		// Only that log's day.
		if e, ok := exported(t, s, clicks.ImpressionLog, day); ok {
			t.Errorf("the clicks' record is the impressions' too: %+v", e)
		}
		for _, other := range []time.Time{day.AddDate(0, 0, -1), day.AddDate(0, 0, 1)} {
			if e, ok := exported(t, s, clicks.ClickLog, other); ok {
				t.Errorf("day %v has the record of %v: %+v", other, day, e)
			}
		}
	})

	t.Run("FirstRecordStays", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		first := rec("a")
		if _, err := s.RecordExport(within(t, 10*time.Second), first); err != nil {
			t.Fatal(err)
		}
		second := rec("b")
		second.Rows, second.SHA256 = 1, [32]byte{9}
		got, err := s.RecordExport(within(t, 10*time.Second), second)
		if err != nil {
			t.Fatalf("RecordExport of a day recorded: %v", err)
		}
		same(t, "RecordExport of a day recorded", got, first)
		got, _ = exported(t, s, clicks.ClickLog, day)
		same(t, "Exported after a second record", got, first)
	})

	t.Run("ConcurrentRecordsAgree", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		const n = 8
		got := make([]clicks.Export, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], errs[i] = s.RecordExport(within(t, 10*time.Second), rec(string(rune('a'+i)))) })
		}
		wg.Wait()
		stored, _ := exported(t, s, clicks.ClickLog, day)
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("RecordExport %d: %v", i, errs[i])
			}
			same(t, "a concurrent RecordExport's answer", got[i], stored)
		}
	})

	t.Run("LateExportsAreTheirOwn", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		own := rec("a")
		late := rec("b")
		late.Path, late.Rows, late.SHA256, late.FromSeq, late.Seq = "/var/lib/adlink/b/export/clicks-2026-08-01.late-4321.jsonl.zst",
			2, [32]byte{7}, own.Seq, own.Seq+10
		later := rec("a")
		later.Path, later.Rows, later.FromSeq, later.Seq = "/var/lib/adlink/a/export/clicks-2026-08-01.late-4331.jsonl.zst",
			1, late.Seq, late.Seq+5
		// Recorded out of order, read back by FromSeq.
		for _, e := range []clicks.Export{later, own, late} {
			got, err := s.RecordExport(within(t, 10*time.Second), e)
			if err != nil {
				t.Fatalf("RecordExport from %d: %v", e.FromSeq, err)
			}
			same(t, "RecordExport's answer", got, e)
		}
		second := late
		second.Host, second.Seq = "c", late.Seq+1
		got, err := s.RecordExport(within(t, 10*time.Second), second)
		if err != nil {
			t.Fatalf("RecordExport of a late file recorded: %v", err)
		}
		same(t, "RecordExport of a late file recorded", got, late)
		e, ok := exported(t, s, clicks.ClickLog, day)
		if !ok {
			t.Fatal("no record of the day's own export")
		}
		same(t, "Exported beside late records", e, own)
		all, err := s.DayExports(within(t, 10*time.Second), clicks.ClickLog, day)
		if err != nil {
			t.Fatalf("DayExports: %v", err)
		}
		if len(all) != 3 {
			t.Fatalf("DayExports = %+v, want 3 records", all)
		}
		for i, want := range []clicks.Export{own, late, later} {
			same(t, "DayExports", all[i], want)
		}
		for _, other := range []time.Time{day.AddDate(0, 0, -1), day.AddDate(0, 0, 1)} {
			if es, err := s.DayExports(within(t, 10*time.Second), clicks.ClickLog, other); err != nil || len(es) != 0 {
				t.Errorf("DayExports of %v = %+v, %v; want none", other, es, err)
			}
		}
		if es, err := s.DayExports(within(t, 10*time.Second), clicks.ImpressionLog, day); err != nil || len(es) != 0 {
			t.Errorf("DayExports of the impressions = %+v, %v; want none", es, err)
		}
	})

	t.Run("Refuses", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		if _, _, err := s.Exported(t.Context(), clicks.ClickLog, day.Add(time.Hour)); err == nil {
			t.Error("Exported of a time that is no UTC midnight succeeded")
		}
		if _, _, err := s.Exported(t.Context(), "spend", day); err == nil {
			t.Error("Exported of no raw log succeeded")
		}
		bad := rec("a")
		bad.Day = day.Add(time.Minute)
		if _, err := s.RecordExport(t.Context(), bad); err == nil {
			t.Error("RecordExport of a time that is no UTC midnight succeeded")
		}
		bad = rec("a")
		bad.Log = "spend"
		if _, err := s.RecordExport(t.Context(), bad); err == nil {
			t.Error("RecordExport of no raw log succeeded")
		}
		bad = rec("a")
		bad.FromSeq = bad.Seq
		if _, err := s.RecordExport(t.Context(), bad); err == nil {
			t.Error("RecordExport of an export from its own seq succeeded")
		}
		bad.FromSeq = -1
		if _, err := s.RecordExport(t.Context(), bad); err == nil {
			t.Error("RecordExport from a negative seq succeeded")
		}
		if _, err := s.DayExports(t.Context(), clicks.ClickLog, day.Add(time.Hour)); err == nil {
			t.Error("DayExports of a time that is no UTC midnight succeeded")
		}
		for _, log := range clicks.RawLogs {
			if e, ok := exported(t, s, log, day); ok {
				t.Errorf("a refused record was kept: %+v", e)
			}
		}
	})
}
