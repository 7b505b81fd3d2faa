package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/retention"
)

// traffic is a steady click rate to simulate.
type traffic struct {
	months, daysPerMonth int
	clicksPerDay         int
	impressionsPerClick  int
	retention            time.Duration // 0: none
	// allocSize is how much bbolt grows the file by at a time; 0 is its
	// default, 16 MiB.
	allocSize int
}

// monthSize is the state after one simulated month.
type monthSize struct {
	file    int64 // the file's size
	rollups int64 // the bytes the rollup buckets' pages take
	rows    int   // the rollups' rows
	raw     int64 // the bytes the raw logs' pages take
}

// simulate writes tr's traffic day after day through the ledger and the
// impression log, on a fake clock, and runs retention after each day; it
// returns the state after each month. The file is opened without fsync:
// what is measured is what bbolt writes, not how long the disk takes.
func simulate(tb testing.TB, tr traffic) []monthSize {
	tb.Helper()
	dir := tb.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "adlink.db"), 0o600, &bolt.Options{NoSync: true, Timeout: time.Second})
	if tr.allocSize > 0 {
		db.AllocSize = tr.allocSize
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	s := openStores(tb, db)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock time.Time
	job := retention.New(s.retainer, retention.Options{Retention: tr.retention, Dir: filepath.Join(dir, "export"),
		Now: func() time.Time { return clock }})
	var sizes []monthSize
	for m := range tr.months {
		for d := range tr.daysPerMonth {
			day := start.AddDate(0, 0, m*tr.daysPerMonth+d)
			s.simulateDay(tb, day, tr)
			clock = day.Add(24 * time.Hour)
			if err := job.Run(context.Background()); err != nil {
				tb.Fatal(err)
			}
		}
		sizes = append(sizes, s.sizes(tb))
	}
	return sizes
}

// simulateDay writes a day of tr's clicks, spread over the day, from
// concurrent clients (so that they share commits), and their
// impressions, a beacon's worth per append.
func (s *stores) simulateDay(tb testing.TB, day time.Time, tr traffic) {
	tb.Helper()
	n := tr.clicksPerDay
	step := 24 * time.Hour / time.Duration(n)
	const workers = 32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				c := click(day.Add(time.Duration(i)*step), i)
				if i%3 == 0 {
					c.Reason = clicks.ReasonBot
				}
				if err := s.ledger.Record(context.Background(), &c, clicks.Use{}); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	for w := range workers {
		wg.Go(func() {
			var imps []clicks.Impression
			for i := w; i < n*tr.impressionsPerClick; i += workers {
				imps = append(imps, impression(day.Add(time.Duration(i)*step/time.Duration(tr.impressionsPerClick)), i))
				if len(imps) == 16 {
					if _, err := s.impressions.Append(context.Background(), imps); err != nil {
						tb.Error(err)
						return
					}
					imps = imps[:0]
				}
			}
			if len(imps) > 0 {
				if _, err := s.impressions.Append(context.Background(), imps); err != nil {
					tb.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
}

func (s *stores) sizes(tb testing.TB) monthSize {
	tb.Helper()
	fi, err := os.Stat(s.db.Path())
	if err != nil {
		tb.Fatal(err)
	}
	m := monthSize{file: fi.Size()}
	if err := s.db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"rollup-hours", "rollup-days"} {
			st := tx.Bucket([]byte(name)).Stats()
			m.rollups += int64(st.BranchAlloc + st.LeafAlloc)
			m.rows += st.KeyN
		}
		for _, name := range []string{"clicks", "impressions"} {
			st := tx.Bucket([]byte(name)).Stats()
			m.raw += int64(st.BranchAlloc + st.LeafAlloc)
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return m
}

// TestStateFileStaysFlat: at a steady click rate the state file stops
// growing once the first retention window has passed, but for the hourly
// rollups, which grow with every hour that has traffic. The freed pages of
// the rows removed are reused (bbolt never shrinks its file), so once the
// window has passed each month may add no more than the
// rollups did and a little slack; without retention each adds a month of
// rows. The retention is a week here, so that the window passes within the
// first month.
func TestStateFileStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates months of clicks")
	}
	// The file grows a mebibyte at a time, so that a month's growth shows
	// in its size.
	tr := traffic{months: 3, daysPerMonth: 30, clicksPerDay: 250, impressionsPerClick: 2, retention: 7 * 24 * time.Hour,
		allocSize: 1 << 20}
	with := simulate(t, tr)
	tr.retention = 0
	without := simulate(t, tr)
	for m := range with {
		t.Logf("month %d: %.1f MB with retention (rollups %.2f MB in %d rows, raw %.2f MB), %.1f MB without (raw %.2f MB)", m+1,
			float64(with[m].file)/1e6, float64(with[m].rollups)/1e6, with[m].rows, float64(with[m].raw)/1e6, float64(without[m].file)/1e6, float64(without[m].raw)/1e6)
	}
	rawMonth := without[len(without)-1].file - without[len(without)-2].file
	for m := 1; m < len(with); m++ {
		grew := with[m].file - with[m-1].file
		rollups := with[m].rollups - with[m-1].rollups
		// Slack: the file grows a step at a time, and the freelist and
		// the raw logs' reused pages move a little.
		slack := int64(tr.allocSize) + rawMonth/20
		if grew > rollups+slack {
			t.Errorf("month %d: the file grew %d bytes, more than the rollups' %d and %d of slack", m+1, grew, rollups, slack)
		}
	}
	if last := with[len(with)-1].file; last*2 > without[len(without)-1].file {
		t.Errorf("after %d months: %d bytes with retention, %d without", len(with), last, without[len(without)-1].file)
	}
}

// BenchmarkStateFileSize simulates six months of 1,000 clicks and 2,000
// impressions a day with the default retention of 90 days, and without
// retention, and reports the state file's size after the last month each
// way and their ratio; then, over the months after the window, how much
// the file grows a month each way and how much of it the rollups take.
// The file grows a mebibyte at a time (bbolt's default is 16), so that a
// month's growth shows.
func BenchmarkStateFileSize(b *testing.B) {
	tr := traffic{months: 6, daysPerMonth: 30, clicksPerDay: 1000, impressionsPerClick: 2, retention: 90 * 24 * time.Hour,
		allocSize: 1 << 20}
	const steady = 4 // months from the fourth on are past the window
	for range b.N {
		with := simulate(b, tr)
		off := tr
		off.retention = 0
		without := simulate(b, off)
		last := len(with) - 1
		for m := range with {
			b.Logf("month %d: %.1f MB with retention (rollups %.1f MB, raw rows %.1f MB), %.1f MB without (raw rows %.1f MB)", m+1,
				float64(with[m].file)/1e6, float64(with[m].rollups)/1e6, float64(with[m].raw)/1e6,
				float64(without[m].file)/1e6, float64(without[m].raw)/1e6)
		}
		perMonth := func(s []monthSize, f func(monthSize) int64) float64 {
			return float64(f(s[last])-f(s[steady-2])) / float64(last-steady+2) / 1e6
		}
		file := func(m monthSize) int64 { return m.file }
		b.ReportMetric(float64(with[last].file)/1e6, fmt.Sprintf("MB-month%d-retention", last+1))
		b.ReportMetric(float64(without[last].file)/1e6, fmt.Sprintf("MB-month%d-no-retention", last+1))
		b.ReportMetric(float64(with[last].file)/float64(without[last].file), "ratio")
		b.ReportMetric(perMonth(with, file), "MB/month-retention")
		b.ReportMetric(perMonth(without, file), "MB/month-no-retention")
		b.ReportMetric(perMonth(with, func(m monthSize) int64 { return m.rollups }), "MB/month-rollups")
		b.ReportMetric(float64(with[last].rows-with[last-1].rows), "rollup-rows/month")
	}
	b.ReportMetric(0, "ns/op")
}
