package main

import (
	"bytes"
	"context"
	"encoding/base64"
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

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
)

// The fault harness runs two replicas of the server binary on one
// Postgres and one Redis, clicks through both from concurrent clients,
// and in the middle of each burst kills one of the three with SIGKILL,
// then brings it back: a click answered 302 must end in Postgres once.

// faultReplica is one replica and the data directory it restarts on.
type faultReplica struct {
	mu   sync.Mutex
	srv  *serverProcess // nil while it is down
	data string
}

func (r *faultReplica) base() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		return ""
	}
	return r.srv.base
}

// clickID searches base and clicks the first ad as a browser would; it
// returns the id the 302 carries, or the error of a request that failed.
func clickID(client *http.Client, base, tag string) (string, error) {
	res, err := client.Get(base + "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag=" + tag)
	if err != nil {
		return "", err
	}
	var resp struct{ Link []struct{ Ad string } }
	err = json.NewDecoder(res.Body).Decode(&resp)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || len(resp.Link) == 0 {
		return "", errors.New("search answered " + res.Status)
	}
	ad := resp.Link[0].Ad
	req, err := http.NewRequest(http.MethodGet, base+ad[strings.Index(ad, "/v1/redirect?"):], nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", testBrowserUA)
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Dest", "document")
	req.Header.Set("Sec-Fetch-User", "?1")
	res, err = client.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("X-Adlink-Click") == "" {
		return "", errors.New("click answered " + res.Status)
	}
	return res.Header.Get("X-Adlink-Click"), nil
}

// TestClicksSurviveFaults: kill -9 of a replica, of Postgres and of
// Redis, each in the middle of a click burst from concurrent clients over
// two replicas, each brought back: every click answered 302 is in
// Postgres exactly once, and both replicas report what the click table
// holds.
func TestClicksSurviveFaults(t *testing.T) {
	bin := buildServer(t)
	pg := testpg.Start(t)
	rd := testredis.Start(t, testredis.Options{})
	flags := []string{"-postgres", pg.URL(), "-redis", rd.URL(),
		"-click-keys", "shared:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	replicas := []*faultReplica{{data: t.TempDir()}, {data: t.TempDir()}}
	for _, r := range replicas {
		r.srv = startServer(t, bin, r.data, flags...)
	}
	restart := func(r *faultReplica) {
		srv := startServer(t, bin, r.data, flags...)
		r.mu.Lock()
		r.srv = srv
		r.mu.Unlock()
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 16}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	var (
		mu    sync.Mutex
		acked = map[string]bool{}
	)
	faults := []struct {
		name          string
		fault, repair func()
	}{
		{"replica", func() {
			r := replicas[0]
			r.mu.Lock()
			srv := r.srv
			r.srv = nil
			r.mu.Unlock()
			srv.kill()
		}, func() { restart(replicas[0]) }},
		{"postgres", func() {
			if err := pg.Kill(); err != nil {
				t.Error(err)
			}
		}, func() {
			if err := pg.Restart(); err != nil {
				t.Error(err)
			}
		}},
		{"redis", rd.Kill, rd.Start},
	}
	const clients, faultAt, repairAt, stopAt = 8, 100, 250, 400
	for _, f := range faults {
		began := time.Now()
		var (
			n          atomic.Int64
			faulted    sync.Once
			repaired   sync.Once
			wg         sync.WaitGroup
			failedOnUp atomic.Value
		)
		for g := range clients {
			wg.Go(func() {
				for i := 0; n.Load() < stopAt; i++ {
					r := replicas[(g+i)%len(replicas)]
					base := r.base()
					if base == "" {
						continue // down: the load balancer sends the click elsewhere
					}
					id, err := clickID(client, base, f.name+strconv.Itoa(g)+"n"+strconv.Itoa(i))
					if err != nil {
						if r.base() == base && f.name != "replica" {
							failedOnUp.CompareAndSwap(nil, err)
						}
						continue
					}
					mu.Lock()
					acked[id] = true
					mu.Unlock()
					switch c := n.Add(1); {
					case c == faultAt:
						faulted.Do(f.fault)
					case c == repairAt:
						repaired.Do(f.repair)
					}
				}
			})
		}
		wg.Wait()
		faulted.Do(f.fault)
		repaired.Do(f.repair)
		// Only the killed replica's own clicks in flight may fail; with
		// Postgres or Redis down, every click lands.
		if err, _ := failedOnUp.Load().(error); err != nil {
			t.Errorf("with %s killed, a click failed: %v", f.name, err)
		}
		t.Logf("%s killed and back: %d clicks in %v", f.name, n.Load(), time.Since(began).Round(time.Millisecond))
	}
	began := time.Now()

	// Recovered: each replica says ready once its spool is shipped.
	for i, r := range replicas {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			res, err := client.Get(r.base() + "/readyz")
			var body []byte
			if err == nil {
				body, _ = io.ReadAll(res.Body)
				res.Body.Close()
			}
			if bytes.Contains(body, []byte(`"status":"ready"`)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d is not ready after the faults: %v %s", i, err, body)
			}
			time.Sleep(100 * time.Millisecond) // a process outside: /readyz is its only signal
		}
	}

	t.Logf("the replicas ready after %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT click_id, count(*) FROM clicks GROUP BY click_id`)
	if err != nil {
		t.Fatal(err)
	}
	inPG := map[string]int{}
	for rows.Next() {
		var id *string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		if id == nil {
			t.Errorf("%d clicks without an id", n)
			continue
		}
		inPG[*id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	lost, twice := 0, 0
	for id := range acked {
		if inPG[id] == 0 {
			lost++
		}
	}
	for _, n := range inPG {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d clicks answered 302, %d in Postgres (the rest in flight at the replica's kill)", len(acked), len(inPG))
	if len(acked) < len(faults)*stopAt || lost != 0 || twice != 0 {
		t.Errorf("%d clicks answered 302; %d of them not in Postgres, %d clicks in it twice", len(acked), lost, twice)
	}

	// Both replicas report the click table.
	var total, billable int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE billable) FROM clicks WHERE api_key = 'demo'`).
		Scan(&total, &billable); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC()
	target := "/v2/report?group_by=day&from=" + day.AddDate(0, 0, -1).Format(time.DateOnly) + "&to=" + day.AddDate(0, 0, 1).Format(time.DateOnly)
	var reports []string
	for i, r := range replicas {
		req, _ := http.NewRequest(http.MethodGet, r.base()+target, nil)
		req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var rep struct {
			Rows []struct {
				Clicks   int `json:"clicks"`
				Billable int `json:"billable_clicks"`
			}
		}
		if err := json.Unmarshal(body, &rep); res.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("report on replica %d: %s %v %s", i, res.Status, err, body)
		}
		c, b := 0, 0
		for _, row := range rep.Rows {
			c, b = c+row.Clicks, b+row.Billable
		}
		if c != total || b != billable {
			t.Errorf("replica %d reports %d clicks, %d billable; the click table holds %d, %d", i, c, b, total, billable)
		}
		reports = append(reports, string(body))
	}
	if reports[0] != reports[1] {
		t.Errorf("the replicas report differently:\n%s\n%s", reports[0], reports[1])
	}
}
