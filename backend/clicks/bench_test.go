package clicks

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/store"
)

// BenchmarkClickLog measures durable clicks per second three ways in the
// same run, each on a fresh file: Append from many goroutines (group
// commit: the clicks that arrive during a commit share the next fsync),
// bbolt's own db.Batch from as many goroutines (it waits up to
// MaxBatchDelay, 10 ms, to gather a batch), and one db.Update, so one
// fsync, per click in a row.
func BenchmarkClickLog(b *testing.B) {
	const (
		clients   = 64
		perClient = 100
		serial    = 400
	)
	click := func(i int) Click {
		return Click{Time: time.Now(), AdID: "AMAZON.1.B00JVL2X1I", AdType: "product", Type: "search", APIKey: "demo",
			SiteID: "demo", Criterion: "handy", YkTag: "c" + strconv.Itoa(i), IP: "192.0.2.1", UserAgent: "Mozilla/5.0",
			Billable: true}
	}
	concurrently := func(write func(Click) error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range clients {
			wg.Go(func() {
				for i := range perClient {
					if err := write(click(g*perClient + i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var group, batch, each time.Duration
	for range b.N {
		l := openLog(b)
		group += concurrently(func(c Click) error { return l.Append(context.Background(), c) })

		l = openLog(b)
		batch += concurrently(func(c Click) error {
			put, err := putClick(c)
			if err != nil {
				return err
			}
			return l.db.Batch(put)
		})

		l = openLog(b)
		start := time.Now()
		for i := range serial {
			put, err := putClick(click(i))
			if err == nil {
				err = l.db.Update(put)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		each += time.Since(start)
	}
	groupRate := float64(b.N*clients*perClient) / group.Seconds()
	batchRate := float64(b.N*clients*perClient) / batch.Seconds()
	eachRate := float64(b.N*serial) / each.Seconds()
	b.ReportMetric(groupRate, "group_commit_clicks/s")
	b.ReportMetric(batchRate, "bolt_batch_clicks/s")
	b.ReportMetric(eachRate, "fsync_each_clicks/s")
	b.ReportMetric(groupRate/eachRate, "group_vs_fsync_each")
	b.ReportMetric(batchRate/eachRate, "bolt_batch_vs_fsync_each")
	b.ReportMetric(0, "ns/op")
}

func openLog(tb testing.TB) *Log {
	tb.Helper()
	db, err := store.Open(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	l, err := New(db)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}
