package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
)

// testClock is a clock a test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// beaconFrom sends the impression beacon of the ad link u (a click URL,
// or its query) seen on page from the client address remote, as a
// browser, and returns its click token, failing t on any answer but 200.
func beaconFrom(t *testing.T, h http.Handler, page, u, remote string) string {
	t.Helper()
	q := u[strings.IndexByte(u, '?')+1:]
	req := httptest.NewRequest(http.MethodGet, "/v1/impression?api_key=demo&site_id=demo&url="+url.QueryEscape(page)+
		"&ad="+url.QueryEscape(q), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct{ CT []string }
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); rec.Code != http.StatusOK || err != nil || len(resp.CT) != 1 {
		t.Fatalf("beacon: %d %v %s", rec.Code, err, rec.Body)
	}
	return resp.CT[0]
}

// reportedImpressions is the demo partner's impressions of day in the
// report h answers.
func reportedImpressions(t *testing.T, h http.Handler, day time.Time) int64 {
	t.Helper()
	d := day.UTC().Format(time.DateOnly)
	req := httptest.NewRequest(http.MethodGet, "/v2/report?from="+d+"&to="+d+"&group_by=day", nil)
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct {
		Rows []struct{ Impressions int64 }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("report: %d %v %s", rec.Code, err, rec.Body)
	}
	var n int64
	for _, r := range resp.Rows {
		n += r.Impressions
	}
	return n
}

// TestReplayedBeaconCountsOnce is the attack of a replayed impression
// beacon: one beacon sent 50 times, half to each of two replicas, each
// time with another url of the site, gets its
// click token each time and counts one impression in the report; the
// repeats are counted apart. The same ad seen from another network, or in
// the next window, counts again; and one beacon spooled on both replicas
// while Postgres is away still counts once when they ship it.
func TestReplayedBeaconCountsOnce(t *testing.T) {
	pg := testpg.Start(t)
	clock := &testClock{now: time.Date(2026, 11, 22, 12, 5, 0, 0, time.UTC)}
	replicas := make([]*App, 2)
	for i := range replicas {
		cfg := testConfig(t)
		cfg.PostgresURL = pg.URL()
		cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
		cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
		a, err := New(cfg, Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		replicas[i] = a
	}
	a, b := replicas[0], replicas[1]
	day := clock.Now()
	ad := adURL(t, a.Handler)
	const page = "http://localhost/news/1"

	for i := range 50 {
		if ct := beaconFrom(t, replicas[i%2].Handler, page+"?r="+strconv.Itoa(i), ad, "10.0.0.1:5000"); ct == "" {
			t.Fatalf("replay %d got no click token", i)
		}
		clock.advance(10 * time.Second)
	}
	for _, r := range replicas {
		if got := reportedImpressions(t, r.Handler, day); got != 1 {
			t.Fatalf("one beacon replayed 50 times over two replicas: the report counts %d impressions, want 1", got)
		}
	}
	sum := func(name string) int {
		n := 0
		for _, r := range replicas {
			v, _ := strconv.Atoi(metric(t, r, name))
			n += v
		}
		return n
	}
	if got, rep := sum("adlink_impressions_total"), sum("adlink_impression_repeats_total"); got != 1 || rep != 49 {
		t.Errorf("metrics count %d impressions and %d repeats, want 1 and 49", got, rep)
	}

	// Another network counts; so does the next window.
	beaconFrom(t, b.Handler, page, ad, "10.9.0.1:5000")
	beaconFrom(t, a.Handler, page, ad, "10.9.0.1:5000")
	if got := reportedImpressions(t, a.Handler, day); got != 2 {
		t.Errorf("after a second network: %d impressions, want 2", got)
	}
	clock.advance(30 * time.Minute)
	beaconFrom(t, a.Handler, page, ad, "10.0.0.1:5000")
	beaconFrom(t, b.Handler, page, ad, "10.0.0.1:5000")
	if got := reportedImpressions(t, b.Handler, day); got != 3 {
		t.Errorf("in the next window: %d impressions, want 3", got)
	}

	// Postgres away: both replicas spool the same beacon of a new
	// network, three times each, from pages of their own, and answer it
	// with its token.
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if ct := beaconFrom(t, replicas[i%2].Handler, "http://localhost/news/"+strconv.Itoa(2+i), ad, "10.7.0.1:5000"); ct == "" {
			t.Fatalf("spooled beacon %d got no click token", i)
		}
	}
	for _, r := range replicas {
		if r.spooler.Degraded() == "" {
			t.Fatal("a replica does not spool with Postgres away")
		}
	}
	restartAndShip(t, pg, replicas...)
	if got := reportedImpressions(t, a.Handler, day); got != 4 {
		t.Errorf("one beacon spooled on two replicas, shipped: %d impressions, want 4", got)
	}
}
