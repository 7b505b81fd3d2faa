package app

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/internal/testredis"
)

// TestRedisSharesLimitsAcrossReplicas: two servers on one Redis hold one
// api_key's limit and each client network's share of it together; with
// Redis killed, each holds them alone and answers no 500; with Redis back
// (and the second after a failure in which it is not tried gone), they
// share again.
func TestRedisSharesLimitsAcrossReplicas(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	logs := &syncLog{}
	replica := func() *App {
		cfg := testConfig(t)
		cfg.RedisURL = srv.URL()
		// A burst of 10 for the key, 2 for a client network, and no
		// refill while the test runs.
		cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 0.001, 10, 0.2
		a, err := New(cfg, Options{Now: clock, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	replicas := []*App{replica(), replica()}
	// Without Postgres each keeps its own record: the operator is told.
	if got := strings.Count(logs.String(), "redis without postgres"); got != 2 {
		t.Errorf("%d of 2 servers warned of Redis without Postgres:\n%s", got, logs.String())
	}
	search := func(i, network int) int {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo", nil)
		// Each network in a /24 of its own: the prefix's share of the
		// key has a test of its own.
		r.RemoteAddr = fmt.Sprintf("198.51.%d.1:4000", network)
		rec := httptest.NewRecorder()
		replicas[i%len(replicas)].Handler.ServeHTTP(rec, r)
		return rec.Code
	}
	// Six networks, three requests each, round-robin over the replicas.
	ok := func(first int) (perNetwork []int, total int) {
		for n := first; n < first+6; n++ {
			got := 0
			for i := range 3 {
				switch code := search(i+n, n); code {
				case http.StatusOK:
					got++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("network %d: status %d", n, code)
				}
			}
			perNetwork = append(perNetwork, got)
			total += got
		}
		return perNetwork, total
	}

	// Shared: each network gets its share of 2 whichever replica answers,
	// and the key's 10 are spent by the fifth network.
	if per, total := ok(1); total != 10 || fmt.Sprint(per) != "[2 2 2 2 2 0]" {
		t.Errorf("with Redis: 200s per network %v, %d in all; want [2 2 2 2 2 0], the key's burst of 10", per, total)
	}

	srv.Kill()
	// Each replica decides alone: a network's share and the key's burst
	// are each replica's own, and nothing fails.
	if per, total := ok(101); total != 6*3 || fmt.Sprint(per) != "[3 3 3 3 3 3]" {
		t.Errorf("with Redis down: 200s per network %v, %d in all; want each replica's own share of 2", per, total)
	}
	_, body := get(t, replicas[0].Admin, "/metrics")
	if !strings.Contains(body, `adlink_redis_fallback_total{store="limits"}`) {
		t.Errorf("/metrics does not count the fallbacks:\n%s", grep(body, "redis"))
	}

	srv.Start() // empty: it kept nothing
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if per, total := ok(201); total != 10 || fmt.Sprint(per) != "[2 2 2 2 2 0]" {
		t.Errorf("with Redis back: 200s per network %v, %d in all; want [2 2 2 2 2 0]", per, total)
	}
}

// grep is the lines of s that hold word.
func grep(s, word string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.Contains(line, word) {
			b.WriteString(line)
		}
	}
	return b.String()
}
