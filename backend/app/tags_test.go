package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/internal/testpg"
)

// A client that beacons and clicks page-made links of one site with more
// new yk_tags than -site-daily-tags, taking turns between two replicas on
// one Postgres, adds that many rows to the report by yk_tag between them,
// not that many each: the rest are counted under no tag, and in the
// replicas' metrics.
func TestReplicasShareTheDailyBoundOfPageTags(t *testing.T) {
	pg := testpg.Start(t)
	clock := &testClock{now: time.Date(2026, 11, 22, 12, 5, 0, 0, time.UTC)}
	const limit, n = 5, 16
	key := clicks.Key{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}
	replicas := make([]*App, 2)
	for i := range replicas {
		cfg := testConfig(t)
		cfg.PostgresURL = pg.URL()
		cfg.ClickKeys = []clicks.Key{key}
		cfg.SiteDailyTags = limit
		cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
		a, err := New(cfg, Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		replicas[i] = a
	}
	keys, err := clicks.NewKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	// The page's own link of the ad the server signed one of.
	signed, err := url.Parse(adURL(t, replicas[0].Handler))
	if err != nil {
		t.Fatal(err)
	}
	v := signed.Query()
	for _, p := range []string{"d", "exp", "sig", "kid"} {
		v.Del(p)
	}
	v.Set("tok", keys.Token("demo", "demo", clock.Now().Add(time.Hour)))
	for i := range n {
		h := replicas[i%2].Handler
		v.Set("yk_tag", "t"+strconv.Itoa(i))
		l := "/v1/redirect?" + v.Encode()
		remote := fmt.Sprintf("10.7.%d.1:5000", i)
		ct := beaconFrom(t, h, "http://localhost/a", l, remote)
		if ct == "" {
			t.Fatalf("tag %d: no click token", i)
		}
		clock.advance(time.Second)
		req := httptest.NewRequest(http.MethodGet, l+"&ct="+url.QueryEscape(ct), nil)
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		req.RemoteAddr = remote
		clicks.Navigation.Header(req.Header)
		rec := httptest.NewRecorder()
		replicas[(i+1)%2].Handler.ServeHTTP(rec, req) // clicked on the other replica
		if rec.Code != http.StatusFound {
			t.Fatalf("tag %d: click %d", i, rec.Code)
		}
	}
	d := clock.Now().UTC().Format(time.DateOnly)
	req := httptest.NewRequest(http.MethodGet, "/v2/report?from="+d+"&to="+d+"&group_by=yk_tag", nil)
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	rec := httptest.NewRecorder()
	replicas[1].Handler.ServeHTTP(rec, req)
	var report struct {
		Rows []struct {
			YkTag               string `json:"yk_tag"`
			Impressions, Clicks int
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &report); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("report: %d %v %s", rec.Code, err, rec.Body)
	}
	tagged, untagged := 0, 0
	for _, r := range report.Rows {
		if r.YkTag == "" {
			untagged += r.Impressions
			continue
		}
		tagged++
		if r.Impressions != 1 || r.Clicks != 1 {
			t.Errorf("the row of %q: %d impressions and %d clicks, want 1 of each", r.YkTag, r.Impressions, r.Clicks)
		}
	}
	if tagged != limit || untagged != n-limit {
		t.Errorf("%d yk_tags over two replicas: %d rows, %d impressions under none; want %d and %d\n%s",
			n, tagged, untagged, limit, n-limit, rec.Body)
	}
	dropped := 0
	for _, a := range replicas {
		v, _ := strconv.Atoi(metric(t, a, "adlink_yk_tags_dropped_total"))
		dropped += v
	}
	if want := 2 * (n - limit); dropped != want {
		t.Errorf("the replicas' metrics count %d dropped yk_tags, want %d (an impression and a click each)", dropped, want)
	}
}
