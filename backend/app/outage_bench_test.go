package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/internal/testpg"
)

// BenchmarkPostgresOutage clicks through a server on Postgres over
// loopback HTTP from concurrent clients, healthy, then with Postgres
// killed (SIGKILL to all its processes), then restarts Postgres and waits
// for the spool to be shipped. It reports the clicks answered 302
// (clicks_acked), those of them missing from Postgres afterwards
// (clicks_lost, target 0) or in it twice (clicks_twice, target 0), the
// seconds from Postgres answering again to the spool shipped (s-drain),
// and the redirect rate while degraded beside the healthy one, same run
// (ratio).
func BenchmarkPostgresOutage(b *testing.B) {
	const clients, perClient = 16, 100
	pg := testpg.Start(b)
	cfg := testConfig(b)
	cfg.PostgresURL = pg.URL()
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	a, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// Ad URLs made beforehand, each of its own decision: a phase times
	// the clicks alone.
	urls := func() []string {
		out := make([]string, clients*perClient)
		for i := range out {
			out[i] = srv.URL + adURL(b, a.Handler)
		}
		return out
	}
	var mu sync.Mutex
	var acked []string
	phase := func(urls []string) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for _, u := range urls[c*perClient : (c+1)*perClient] {
					req, _ := http.NewRequest(http.MethodGet, u, nil)
					req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if id := res.Header.Get("X-Adlink-Click"); res.StatusCode == http.StatusFound && id != "" {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var healthy, degraded, drain time.Duration
	for range b.N {
		healthyURLs, degradedURLs := urls(), urls()
		healthy += phase(healthyURLs)
		if err := pg.Kill(); err != nil {
			b.Fatal(err)
		}
		degraded += phase(degradedURLs)
		if err := pg.Restart(); err != nil {
			b.Fatal(err)
		}
		back := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		err := a.spooler.WaitShipped(ctx)
		cancel()
		if err != nil {
			b.Fatalf("the spool was not shipped: %v", err)
		}
		drain += time.Since(back)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	rows := map[string]int{}
	r, err := conn.Query(ctx, `SELECT click_id FROM clicks WHERE click_id IS NOT NULL`)
	if err != nil {
		b.Fatal(err)
	}
	for r.Next() {
		var id string
		if err := r.Scan(&id); err != nil {
			b.Fatal(err)
		}
		rows[id]++
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	lost, twice := 0, 0
	for _, id := range acked {
		switch rows[id] {
		case 0:
			lost++
		case 1:
		default:
			twice++
		}
	}
	n := float64(clients * perClient * b.N)
	b.ReportMetric(float64(len(acked)), "clicks_acked")
	b.ReportMetric(float64(lost), "clicks_lost")
	b.ReportMetric(float64(twice), "clicks_twice")
	b.ReportMetric(drain.Seconds()/float64(b.N), "s-drain")
	b.ReportMetric(n/healthy.Seconds(), "healthy_clicks/s")
	b.ReportMetric(n/degraded.Seconds(), "degraded_clicks/s")
	b.ReportMetric(healthy.Seconds()/degraded.Seconds(), "ratio")
	b.ReportMetric(0, "ns/op")
	if want := 2 * clients * perClient * b.N; len(acked) != want || lost != 0 || twice != 0 {
		b.Errorf("%d of %d clicks answered 302; %d of them lost, %d recorded twice", len(acked), want, lost, twice)
	}
}
