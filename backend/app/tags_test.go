package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
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
	replicas, v := tagReplicas(t, pg, 2, limit, clock)
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

// tagReplicas starts n replicas on pg, or on a bbolt file each without
// pg, with the bound of limit yk_tags a site a day, on clock, and returns
// them with a page-made link of theirs, its yk_tag to set.
func tagReplicas(t *testing.T, pg *testpg.Server, n, limit int, clock *testClock) ([]*App, url.Values) {
	t.Helper()
	key := clicks.Key{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}
	replicas := make([]*App, n)
	for i := range replicas {
		cfg := testConfig(t)
		if pg != nil {
			cfg.PostgresURL = pg.URL()
		}
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
	signed, err := url.Parse(adURL(t, replicas[0].Handler))
	if err != nil {
		t.Fatal(err)
	}
	v := signed.Query()
	for _, p := range []string{"d", "exp", "sig", "kid"} {
		v.Del(p)
	}
	v.Set("tok", keys.Token("demo", "demo", clock.Now().Add(2*time.Hour)))
	return replicas, v
}

// clickedTag is the yk_tag the click h records of link l with click token
// ct from remote, failing t unless it lands and bills.
func clickedTag(t *testing.T, a *App, l, ct, remote string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, l+"&ct="+url.QueryEscape(ct), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = remote
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Fatalf("click: %d %q", rec.Code, id)
	}
	var got *clicks.Click
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.ID == id {
			got = &c
		}
		return nil
	}); err != nil || got == nil {
		t.Fatalf("the click %s: %v", id, err)
	}
	if !got.Billable {
		t.Fatalf("the click %s does not bill: %s", id, got.Reason)
	}
	return got.YkTag
}

// A yk_tag one replica admitted is admitted by every other, even one
// that has since seen the site's day full: the click of a link whose
// impression recorded its yk_tag, on another replica, records it too.
func TestPageTagAdmittedOnOneReplicaHoldsOnAnother(t *testing.T) {
	pg := testpg.Start(t)
	clock := &testClock{now: time.Date(2026, 11, 22, 12, 5, 0, 0, time.UTC)}
	const limit = 3
	replicas, v := tagReplicas(t, pg, 2, limit, clock)
	links, tokens := make([]string, limit+1), make([]string, limit+1)
	for i := range links {
		v.Set("yk_tag", "t"+strconv.Itoa(i))
		links[i] = "/v1/redirect?" + v.Encode()
		// The first limit on the one replica, the one past it on the other.
		tokens[i] = beaconFrom(t, replicas[i/limit].Handler, "http://localhost/a", links[i], fmt.Sprintf("10.8.%d.1:5000", i))
	}
	clock.advance(time.Second)
	for i := range limit {
		if got, want := clickedTag(t, replicas[1], links[i], tokens[i], fmt.Sprintf("10.8.%d.1:5000", i)), "t"+strconv.Itoa(i); got != want {
			t.Errorf("the click of the link of yk_tag %q, admitted by its impression on another replica, records %q", want, got)
		}
	}
}

// A link shown just before midnight UTC and clicked just after records
// its yk_tag, which its impression recorded, however many the new day
// holds by then.
func TestPageTagOfALinkShownBeforeMidnightHoldsForItsClick(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 11, 22, 23, 59, 50, 0, time.UTC)}
	replicas, v := tagReplicas(t, nil, 1, 1, clock)
	a := replicas[0]
	v.Set("yk_tag", "evening")
	evening := "/v1/redirect?" + v.Encode()
	ct := beaconFrom(t, a.Handler, "http://localhost/a", evening, "10.9.0.1:5000")
	clock.advance(20 * time.Second)
	v.Set("yk_tag", "morning")
	beaconFrom(t, a.Handler, "http://localhost/a", "/v1/redirect?"+v.Encode(), "10.9.1.1:5000")
	if got := clickedTag(t, a, evening, ct, "10.9.0.1:5000"); got != "evening" {
		t.Errorf("the click after midnight of a link shown before it records yk_tag %q, want its impression's %q", got, "evening")
	}
}

// With Postgres down, the beacons of links with new yk_tags ask the
// tags' store once, not each: a reader's beacon or click is not held for
// a store that does not answer. The tags are recorded as none meanwhile.
func TestPageTagsAskNoStoreThatFailedJustNow(t *testing.T) {
	pg := testpg.Start(t)
	clock := &testClock{now: time.Date(2026, 11, 22, 12, 5, 0, 0, time.UTC)}
	key := clicks.Key{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}
	cfg := testConfig(t)
	cfg.PostgresURL = pg.URL()
	cfg.ClickKeys = []clicks.Key{key}
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	logs := &syncLog{}
	a, keys := startSigning(t, cfg, Options{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	signed, err := url.Parse(adURL(t, a.Handler))
	if err != nil {
		t.Fatal(err)
	}
	v := signed.Query()
	for _, p := range []string{"d", "exp", "sig", "kid"} {
		v.Del(p)
	}
	v.Set("tok", keys.Token("demo", "demo", clock.Now().Add(time.Hour)))
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	const n = 4
	for i := range n {
		v.Set("yk_tag", "down"+strconv.Itoa(i))
		beaconFrom(t, a.Handler, "http://localhost/a", "/v1/redirect?"+v.Encode(), fmt.Sprintf("10.6.%d.1:5000", i))
	}
	if asked := strings.Count(logs.String(), "the tags' store did not answer"); asked != 1 {
		t.Errorf("%d beacons of new yk_tags with Postgres down asked the tags' store %d times, want once\n%s", n, asked, logs)
	}
	if got, _ := strconv.Atoi(metric(t, a, "adlink_yk_tags_dropped_total")); got != n {
		t.Errorf("%d yk_tags dropped with the store down, want %d", got, n)
	}
}
