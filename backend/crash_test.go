package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The crash harness runs the real binary on a loopback port, clicks real
// ad URLs from many goroutines, kills the process with SIGKILL while clicks
// are in flight, restarts it on the same data directory and reads the
// click log: a click that got its 302 must be there, once.

// crashResult is what a crash run found.
type crashResult struct {
	acked      int // clicks answered 302 before the kill
	lost       int // acked clicks missing from the log
	duplicated int // clicks in the log more than once
	unacked    int // clicks in the log whose 302 never arrived
	elapsed    time.Duration
}

// crashRun clicks with clients goroutines, each click a fresh search with
// its own yk_tag and a click on its first ad, kills the server once killAt
// clicks have been answered, restarts it on the same data directory,
// checks that it serves a click, stops it and reads the log.
func crashRun(tb testing.TB, bin string, clients, killAt int) crashResult {
	tb.Helper()
	data := tb.TempDir()
	srv := startServer(tb, bin, data)
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	var (
		mu     sync.Mutex
		acked  = map[string]bool{}
		killed atomic.Bool
		once   sync.Once
		wg     sync.WaitGroup
		bad    atomic.Value // the first unexpected failure before the kill
	)
	start := time.Now()
	for g := range clients {
		wg.Go(func() {
			for n := 0; ; n++ {
				tag := "g" + strconv.Itoa(g) + "n" + strconv.Itoa(n)
				ok, err := clickOnce(client, srv.base, tag)
				if err != nil {
					if !killed.Load() {
						bad.CompareAndSwap(nil, err)
					}
					return
				}
				if !ok {
					continue
				}
				mu.Lock()
				acked[tag] = true
				count := len(acked)
				mu.Unlock()
				if count >= killAt {
					// Mid-stream: the other clients have clicks in flight.
					once.Do(func() {
						killed.Store(true)
						srv.kill()
					})
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := bad.Load().(error); err != nil {
		tb.Fatalf("a click failed before the kill: %v", err)
	}

	// The restarted server opens the same file and serves.
	srv = startServer(tb, bin, data)
	if ok, err := clickOnce(client, srv.base, "after"); err != nil || !ok {
		tb.Fatalf("the restarted server does not serve a click: %v", err)
	}
	srv.stop()

	r := crashResult{acked: len(acked), elapsed: elapsed}
	seen := map[string]int{}
	logged := readClicks(tb, data)
	for _, c := range logged {
		seen[c.YkTag]++
	}
	// The report, read from the rollups the clicks' commits wrote, counts
	// what the log holds.
	if got := reportedClicks(tb, data); got != len(logged) {
		tb.Errorf("after the kill the report counts %d clicks, the log holds %d", got, len(logged))
	}
	if seen["after"] != 1 {
		tb.Errorf("the click after the restart is logged %d times", seen["after"])
	}
	for tag, n := range seen {
		if n > 1 {
			r.duplicated++
		}
		if !acked[tag] && tag != "after" {
			r.unacked++
		}
	}
	for tag := range acked {
		if seen[tag] == 0 {
			r.lost++
		}
	}
	return r
}

// clickOnce searches base with yk_tag tag and clicks the first ad as a
// browser would. ok is true when the click was answered 302; err is a
// failed request (the server is gone) or an unexpected answer.
func clickOnce(client *http.Client, base, tag string) (ok bool, err error) {
	res, err := client.Get(base + "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag=" + tag)
	if err != nil {
		return false, err
	}
	var resp struct{ Link []struct{ Ad string } }
	err = json.NewDecoder(res.Body).Decode(&resp)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || len(resp.Link) == 0 {
		return false, errors.New("search answered " + res.Status)
	}
	ad := resp.Link[0].Ad
	i := strings.Index(ad, "/v1/redirect?")
	if i < 0 {
		return false, errors.New("ad URL " + ad)
	}
	req, err := http.NewRequest(http.MethodGet, base+ad[i:], nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("User-Agent", testBrowserUA)
	res, err = client.Do(req)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		return false, errors.New("click answered " + res.Status)
	}
	return true, nil
}

// TestClicksSurviveKill: every click answered 302 before a SIGKILL is in
// the log after a restart, none twice.
func TestClicksSurviveKill(t *testing.T) {
	bin := buildServer(t)
	r := crashRun(t, bin, 8, 500)
	t.Logf("%d clicks answered before the kill, %d lost, %d logged twice, %d logged without their 302", r.acked, r.lost, r.duplicated, r.unacked)
	if r.acked < 500 {
		t.Errorf("only %d clicks answered", r.acked)
	}
	if r.lost != 0 || r.duplicated != 0 {
		t.Errorf("%d acknowledged clicks lost, %d logged twice", r.lost, r.duplicated)
	}
}

// BenchmarkClicksLostAfterKill: 10,000 clicks answered 302 by the server
// binary from 32 clients, then SIGKILL mid-stream and a restart; it reports
// how many of them the log lost (target 0) or holds twice.
func BenchmarkClicksLostAfterKill(b *testing.B) {
	bin := buildServer(b)
	for range b.N {
		r := crashRun(b, bin, 32, 10000)
		b.ReportMetric(float64(r.acked), "clicks_acked")
		b.ReportMetric(float64(r.lost), "clicks_lost")
		b.ReportMetric(float64(r.duplicated), "clicks_twice")
		b.ReportMetric(float64(r.unacked), "logged_without_302")
		b.ReportMetric(float64(r.acked)/r.elapsed.Seconds(), "search+click/s")
		b.ReportMetric(0, "ns/op")
		if r.lost != 0 || r.duplicated != 0 {
			b.Errorf("%d acknowledged clicks lost, %d logged twice", r.lost, r.duplicated)
		}
	}
}

// reportedClicks is the clicks "adlink report" counts in data, all days
// of the last year.
func reportedClicks(tb testing.TB, data string) int {
	tb.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"report", "-data", data, "-group-by", "day", "-format", "json",
		"-from", time.Now().UTC().AddDate(0, 0, -300).Format(time.DateOnly), "-to", time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)},
		noEnv, &out, io.Discard); err != nil {
		tb.Fatalf("adlink report: %v", err)
	}
	var rep struct{ Rows []struct{ Clicks int } }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		tb.Fatalf("adlink report: %v\n%s", err, out.Bytes())
	}
	n := 0
	for _, r := range rep.Rows {
		n += r.Clicks
	}
	return n
}
