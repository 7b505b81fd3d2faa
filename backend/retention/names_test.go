package retention

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

var namesDay = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)

// A late file's name says the seq its rows are above, and nothing else
// is read as one: not the day's own file, another day's or log's, a
// temporary file, or a seq spelled two ways.
func TestLateFrom(t *testing.T) {
	if got := LateFileName(clicks.ClickLog, namesDay, 81723); got != "clicks-2026-08-01.late-81723.jsonl.zst" {
		t.Errorf("LateFileName = %s", got)
	}
	for name, want := range map[string]int64{
		"clicks-2026-08-01.late-81723.jsonl.zst":               81723,
		"clicks-2026-08-01.late-1.jsonl.zst":                   1,
		"clicks-2026-08-01.late-9223372036854775807.jsonl.zst": 9223372036854775807,
		"clicks-2026-08-01.jsonl.zst":                          0,
		"clicks-2026-08-02.late-5.jsonl.zst":                   0,
		"impressions-2026-08-01.late-5.jsonl.zst":              0,
		".export-clicks-2026-08-01.late-5.jsonl.zst-123":       0,
		"clicks-2026-08-01.late-05.jsonl.zst":                  0,
		"clicks-2026-08-01.late-+5.jsonl.zst":                  0,
		"clicks-2026-08-01.late--5.jsonl.zst":                  0,
		"clicks-2026-08-01.late-0.jsonl.zst":                   0,
		"clicks-2026-08-01.late-.jsonl.zst":                    0,
		"clicks-2026-08-01.late-5.jsonl":                       0,
		"clicks-2026-08-01.late-9223372036854775808.jsonl.zst": 0,
	} {
		got, ok := lateFrom(name, clicks.ClickLog, namesDay)
		if ok != (want != 0) || got != want {
			t.Errorf("lateFrom(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}

// Whatever name lateFrom reads as a late file is the one LateFileName
// gives its seq.
func FuzzLateFrom(f *testing.F) {
	f.Add("clicks-2026-08-01.late-81723.jsonl.zst")
	f.Add("clicks-2026-08-01.jsonl.zst")
	f.Add("clicks-2026-08-01.late-007.jsonl.zst")
	f.Fuzz(func(t *testing.T, name string) {
		from, ok := lateFrom(name, clicks.ClickLog, namesDay)
		if !ok {
			return
		}
		if from <= 0 || LateFileName(clicks.ClickLog, namesDay, from) != name {
			t.Errorf("lateFrom(%q) = %d, whose name is %s", name, from, LateFileName(clicks.ClickLog, namesDay, from))
		}
	})
}

// DayFiles lists the day's own file, then its late files by seq, as
// numbers and not as text, and none of another day's or log's.
func TestDayFiles(t *testing.T) {
	dir := t.TempDir()
	if got, err := DayFiles(filepath.Join(dir, "missing"), clicks.ClickLog, namesDay); err != nil || got != nil {
		t.Errorf("DayFiles of a missing directory = %v, %v", got, err)
	}
	for _, name := range []string{
		LateFileName(clicks.ClickLog, namesDay, 100), LateFileName(clicks.ClickLog, namesDay, 9),
		FileName(clicks.ClickLog, namesDay), FileName(clicks.ImpressionLog, namesDay),
		LateFileName(clicks.ImpressionLog, namesDay, 50), LateFileName(clicks.ClickLog, namesDay.AddDate(0, 0, 1), 50),
		tempPrefix + LateFileName(clicks.ClickLog, namesDay, 70) + "-1",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := DayFiles(dir, clicks.ClickLog, namesDay)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, FileName(clicks.ClickLog, namesDay)),
		filepath.Join(dir, LateFileName(clicks.ClickLog, namesDay, 9)), filepath.Join(dir, LateFileName(clicks.ClickLog, namesDay, 100))}
	if !slices.Equal(got, want) {
		t.Errorf("DayFiles = %v, want %v", got, want)
	}
}
