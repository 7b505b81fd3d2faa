package clicks

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
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

// BenchmarkIsBot measures the bot check of a browser's user agent: once
// its verdict is cached, and for an agent seen for the first time, which
// runs the crawler list's expression.
func BenchmarkIsBot(b *testing.B) {
	const ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if IsBot(ua) {
				b.Fatal("a browser is a bot")
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			IsBot(ua + " v" + strconv.Itoa(i))
		}
	})
}

// BenchmarkClaim measures Windows.Claim of billable clicks from many
// goroutines at once, each from a network of its own: one durable claim
// per click, commits shared.
func BenchmarkClaim(b *testing.B) {
	db, err := store.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	w, err := NewWindows(db)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	var n atomic.Int64
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if r, err := w.Claim(context.Background(), Claim{Network: "198.51." + strconv.FormatInt(i, 10), AdID: "ad", At: at}); err != nil || r != "" {
				b.Errorf("claim %d: %q %v", i, r, err) // not Fatal: not the benchmark's goroutine
				return
			}
		}
	})
}
