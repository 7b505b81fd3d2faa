package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// RetainerParts are a clicks.Retainer and the logs whose rows it lets go.
// Rollups, when not nil, are the rollups those logs add to; the suite then
// checks that retention leaves them as they were.
type RetainerParts struct {
	Retainer    clicks.Retainer
	Log         clicks.Store
	Impressions clicks.Impressions
	Rollups     clicks.RollupReader
}

// Retainer runs the contract of clicks.Retainer against the stores fresh
// opens. fresh returns an Opener over a new, empty backing.
func Retainer(t *testing.T, fresh func(t *testing.T) Opener[RetainerParts]) {
	t.Helper()
	day0 := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	day1, day2 := day0.AddDate(0, 0, 1), day0.AddDate(0, 0, 2)
	click := func(ad string, at time.Time) clicks.Click {
		return clicks.Click{Time: at, AdID: ad, AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
			Criterion: "handy", YkTag: "t", IP: "192.0.2.1", UserAgent: "Mozilla/5.0", Country: "de",
			Advertiser: ad, BidMicros: 250000, Currency: "EUR", Billable: true}
	}
	imp := func(ad string, at time.Time) clicks.Impression {
		return clicks.Impression{Time: at, AdID: ad, AdType: "advertiser", Type: "intext", APIKey: "k", SiteID: "s",
			Criterion: "handy", Page: "https://blog.example/a", IP: "192.0.2.1", Advertiser: ad, Currency: "EUR"}
	}
	// Three days of each log, the first and last rows on the days' edges.
	fill := func(t *testing.T, p RetainerParts) (cs []clicks.Click, is []clicks.Impression) {
		t.Helper()
		for _, at := range []time.Time{day0, day0.Add(time.Hour), day1.Add(-time.Nanosecond), day1, day1.Add(12 * time.Hour),
			day2.Add(23*time.Hour + 59*time.Minute)} {
			c := click("a.example", at)
			cs = append(cs, c)
			appendClicks(t, p.Log, c)
			i := imp("b.example", at)
			is = append(is, i)
			if _, err := p.Impressions.Append(t.Context(), []clicks.Impression{i, i}); err != nil {
				t.Fatalf("Append impressions: %v", err)
			}
			is = append(is, i)
		}
		return cs, is
	}
	export := func(t *testing.T, r clicks.Retainer, log clicks.RawLog, day time.Time) [][]byte {
		t.Helper()
		var buf bytes.Buffer
		n, err := r.ExportDay(within(t, 10*time.Second), log, day, &buf)
		if err != nil {
			t.Fatalf("ExportDay %s %v: %v", log, day, err)
		}
		lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) != n {
			t.Fatalf("ExportDay %s %v says %d rows, wrote %d lines", log, day, n, len(lines))
		}
		for i, l := range lines {
			if !bytes.HasSuffix(l, []byte("\n")) || bytes.Count(l, []byte("\n")) != 1 {
				t.Fatalf("ExportDay line %d is not one line: %q", i, l)
			}
		}
		return lines
	}
	decodeClicks := func(t *testing.T, lines [][]byte) []clicks.Click {
		t.Helper()
		var out []clicks.Click
		for _, l := range lines {
			var c clicks.Click
			if err := json.Unmarshal(l, &c); err != nil {
				t.Fatalf("an exported click is not JSON: %v: %s", err, l)
			}
			out = append(out, c)
		}
		return out
	}
	oldest := func(t *testing.T, r clicks.Retainer, log clicks.RawLog) (time.Time, bool) {
		t.Helper()
		d, ok, err := r.OldestDay(within(t, 10*time.Second), log)
		if err != nil {
			t.Fatalf("OldestDay: %v", err)
		}
		return d, ok
	}

	t.Run("OldestDay", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		for _, log := range clicks.RawLogs {
			if d, ok := oldest(t, p.Retainer, log); ok {
				t.Errorf("OldestDay of an empty %s log = %v", log, d)
			}
		}
		fill(t, p)
		for _, log := range clicks.RawLogs {
			if d, ok := oldest(t, p.Retainer, log); !ok || !d.Equal(day0) {
				t.Errorf("OldestDay %s = %v %v, want %v", log, d, ok, day0)
			}
		}
	})

	t.Run("ExportDayIsTheDaysRows", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		cs, is := fill(t, p)
		got := decodeClicks(t, export(t, p.Retainer, clicks.ClickLog, day0))
		if len(got) != 3 {
			t.Fatalf("%d clicks exported of day 0, want 3", len(got))
		}
		for i := range got {
			checkClick(t, got[i], cs[i])
		}
		got = decodeClicks(t, export(t, p.Retainer, clicks.ClickLog, day1))
		if len(got) != 2 || !got[0].Time.Equal(day1) {
			t.Errorf("day 1's clicks: %+v", got)
		}
		lines := export(t, p.Retainer, clicks.ImpressionLog, day2)
		if len(lines) != 2 {
			t.Fatalf("%d impressions of day 2, want 2", len(lines))
		}
		var i clicks.Impression
		if err := json.Unmarshal(lines[1], &i); err != nil || !i.Time.Equal(is[len(is)-1].Time) {
			t.Errorf("exported impression %s: %v", lines[1], err)
		}
		i.Time = is[len(is)-1].Time
		if i != is[len(is)-1] {
			t.Errorf("exported impression %+v, want %+v", i, is[len(is)-1])
		}
		if n := len(export(t, p.Retainer, clicks.ClickLog, day2.AddDate(0, 0, 1))); n != 0 {
			t.Errorf("%d rows exported of a day without any", n)
		}
		// Export changes nothing.
		if n := len(scan(t, p.Log, time.Time{}, time.Time{})); n != len(cs) {
			t.Errorf("%d clicks after exports, want %d", n, len(cs))
		}
	})

	t.Run("ExportDayRefuses", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		fill(t, p)
		if _, err := p.Retainer.ExportDay(t.Context(), clicks.ClickLog, day0.Add(time.Hour), &bytes.Buffer{}); err == nil {
			t.Error("ExportDay of a time that is no UTC midnight succeeded")
		}
		broken := errors.New("disk full")
		if _, err := p.Retainer.ExportDay(t.Context(), clicks.ClickLog, day0, failingWriter{broken}); !errors.Is(err, broken) {
			t.Errorf("ExportDay to a failing writer = %v, want its error", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := p.Retainer.ExportDay(ctx, clicks.ClickLog, day0, &bytes.Buffer{}); err == nil {
			t.Error("ExportDay with a done context succeeded")
		}
	})

	t.Run("DeleteDayIsDurableAndIdempotent", func(t *testing.T) {
		o := fresh(t)
		p, closeFn := open(t, o)
		cs, is := fill(t, p)
		before := allRollups(t, p.Rollups)
		n, err := p.Retainer.DeleteDay(within(t, 10*time.Second), clicks.ClickLog, day0)
		if err != nil || n != 3 {
			t.Fatalf("DeleteDay of day 0's clicks = %d, %v; want 3", n, err)
		}
		if n, err := p.Retainer.DeleteDay(within(t, 10*time.Second), clicks.ImpressionLog, day1); err != nil || n != 4 {
			t.Fatalf("DeleteDay of day 1's impressions = %d, %v; want 4", n, err)
		}
		closeFn()
		p, _ = open(t, o)
		if n, err := p.Retainer.DeleteDay(within(t, 10*time.Second), clicks.ClickLog, day0); err != nil || n != 0 {
			t.Errorf("DeleteDay again after a restart = %d, %v; want 0", n, err)
		}
		got := scan(t, p.Log, time.Time{}, time.Time{})
		if len(got) != 3 {
			t.Fatalf("%d clicks left, want 3 (days 1 and 2)", len(got))
		}
		for i := range got {
			checkClick(t, got[i], cs[3+i])
		}
		var imps []clicks.Impression
		if err := p.Impressions.Scan(t.Context(), time.Time{}, time.Time{}, func(i clicks.Impression) error {
			imps = append(imps, i)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(imps) != len(is)-4 || !imps[len(imps)-1].Time.Equal(is[len(is)-1].Time) {
			t.Errorf("%d impressions left, want %d, day 1's gone", len(imps), len(is)-4)
		}
		if d, ok := oldest(t, p.Retainer, clicks.ClickLog); !ok || !d.Equal(day1) {
			t.Errorf("OldestDay of clicks after day 0 went = %v %v, want %v", d, ok, day1)
		}
		if after := allRollups(t, p.Rollups); !equalRollups(before, after) {
			t.Errorf("rollups changed with the raw rows:\nbefore %+v\nafter  %+v", before, after)
		}
	})

	t.Run("DeleteDayRefuses", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		fill(t, p)
		if _, err := p.Retainer.DeleteDay(t.Context(), clicks.ClickLog, day0.Add(time.Minute)); err == nil {
			t.Error("DeleteDay of a time that is no UTC midnight succeeded")
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := p.Retainer.DeleteDay(ctx, clicks.ClickLog, day0); err == nil {
			t.Error("DeleteDay with a done context succeeded")
		}
		if n := len(scan(t, p.Log, time.Time{}, time.Time{})); n != 6 {
			t.Errorf("%d clicks after refused deletes, want 6", n)
		}
	})

	t.Run("ForgetSpendBefore", func(t *testing.T) {
		p, _ := open(t, fresh(t))
		fill(t, p)
		if err := p.Retainer.ForgetSpendBefore(within(t, 10*time.Second), day2); err != nil {
			t.Fatalf("ForgetSpendBefore: %v", err)
		}
		if err := p.Retainer.ForgetSpendBefore(within(t, 10*time.Second), day2); err != nil {
			t.Fatalf("ForgetSpendBefore again: %v", err)
		}
		if n := len(scan(t, p.Log, time.Time{}, time.Time{})); n != 6 {
			t.Errorf("forgetting spend removed clicks: %d left, want 6", n)
		}
	})
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// allRollups reads every row of both grains, or nil without rollups.
func allRollups(t *testing.T, r clicks.RollupReader) []clicks.Rollup {
	t.Helper()
	if r == nil {
		return nil
	}
	var out []clicks.Rollup
	for _, g := range []clicks.Grain{clicks.Hour, clicks.Day} {
		if err := r.ScanRollups(t.Context(), g, time.Unix(0, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), func(row *clicks.Rollup) error {
			out = append(out, *row)
			return nil
		}); err != nil {
			t.Fatalf("ScanRollups: %v", err)
		}
	}
	return out
}

// equalRollups compares rows as sets: a period's rows come in no set
// order.
func equalRollups(a, b []clicks.Rollup) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[clicks.Rollup]int{}
	for _, r := range a {
		count[r]++
	}
	for _, r := range b {
		if count[r]--; count[r] < 0 {
			return false
		}
	}
	return true
}
