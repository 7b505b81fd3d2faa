package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// feed writes ads as a JSON-lines feed.
func feed(t testing.TB, ads []match.Ad) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := catalog.WriteJSONL(&b, ads); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	// A new file renamed over the old, as a feed should be replaced.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// withoutAd returns ads without the one of id.
func withoutAd(ads []match.Ad, id string) []match.Ad {
	var out []match.Ad
	for _, a := range ads {
		if a.ID != id {
			out = append(out, a)
		}
	}
	return out
}

// firstProduct is the first product ad.
func firstProduct(t testing.TB, ads []match.Ad) match.Ad {
	for _, a := range ads {
		if a.Kind == match.KindProduct {
			return a
		}
	}
	t.Fatal("no product")
	return match.Ad{}
}

func header(t *testing.T, h http.Handler, path, name string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result().Header.Get(name)
}

func readyz(t *testing.T, a *App) api.CatalogState {
	t.Helper()
	status, body := get(t, a.Handler, "/readyz")
	var r struct{ Catalog api.CatalogState }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("/readyz: %d %s", status, body)
	}
	return r.Catalog
}

// TestRefreshSwap: a changed feed is served after a refresh under a new
// version, an unchanged one is not rebuilt, and what pages and click links
// hold of the old catalog keeps working.
func TestRefreshSwap(t *testing.T) {
	ads := testcatalog.Generate(400, 1)
	path := filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, path, feed(t, ads))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := a.Catalog().Version
	if got := header(t, a.Handler, "/healthz", "X-Adlink-Catalog"); got != v1 || len(v1) != 16 {
		t.Errorf("X-Adlink-Catalog %q, want the version %q", got, v1)
	}
	if r := a.Reload(context.Background(), false); r.Result != "unchanged" || r.Version != v1 {
		t.Errorf("reload of an unchanged feed: %+v", r)
	}
	oldShard := a.Catalog().Shards.Pick("", "").SHA256

	gone := firstProduct(t, ads)
	writeFile(t, path, feed(t, withoutAd(ads, gone.ID)))
	r := a.Reload(context.Background(), false)
	if r.Result != "swapped" || r.Version == v1 || r.Ads != len(ads)-1 {
		t.Fatalf("reload of a changed feed: %+v", r)
	}
	if got := header(t, a.Handler, "/healthz", "X-Adlink-Catalog"); got != r.Version {
		t.Errorf("X-Adlink-Catalog %q after the swap, want %q", got, r.Version)
	}
	if s := readyz(t, a); s.Version != r.Version || s.Ads != len(ads)-1 || s.LastRefresh == nil || s.LastRefresh.Result != "swapped" {
		t.Errorf("/readyz after the swap: %+v", s)
	}
	if _, ok := a.Catalog().Indexes.All().Lookup(gone.ID); ok {
		t.Error("the removed ad is still indexed")
	}
	// The old manifest's shard is still served, under its own address.
	if status, _ := get(t, a.Handler, "/v2/shards/"+oldShard); status != http.StatusOK {
		t.Errorf("old shard after the swap: %d", status)
	}
	if a.Catalog().Shards.Pick("", "").SHA256 == oldShard {
		t.Error("the new catalog's shard kept the old address")
	}
	// A click link issued before the removal lands on the ad's page.
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/redirect?type=search&adId="+gone.ID+
		"&adType=product&api_key=demo&site_id=demo&criterionId=x", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != gone.Landing {
		t.Errorf("removed ad's click: %d to %q, want 302 to %q", rec.Code, rec.Header().Get("Location"), gone.Landing)
	}
	_, metrics := get(t, a.Admin, "/metrics")
	defer func() {
		// However often the catalog changes, a bounded number of earlier
		// versions' shards is kept.
		for i := 2; i < 5; i++ {
			writeFile(t, path, feed(t, ads[i:]))
			if r := a.Reload(context.Background(), false); r.Result != "swapped" {
				t.Fatalf("swap %d: %+v", i, r)
			}
		}
		if n := len(a.Catalog().Retired); n != maxRetired {
			t.Errorf("%d retired versions kept, want %d", n, maxRetired)
		}
	}()
	for _, want := range []string{`adlink_catalog_refreshes_total{result="swapped"} 1`, `adlink_catalog_refreshes_total{result="unchanged"} 1`,
		`adlink_catalog_info{version="` + r.Version + `"} 1`, "adlink_catalog_removed_ads 1", "adlink_catalog_retired_versions 1",
		"adlink_catalog_refresh_failing 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRefreshRefused: a catalog that lost too many ads, or came out empty,
// or has a bad line, is not served; the old one is, and /readyz and
// /metrics say why. Forced, a refused catalog is served.
func TestRefreshRefused(t *testing.T) {
	ads := testcatalog.Generate(200, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "feed.jsonl")
	writeFile(t, path, feed(t, ads))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := a.Catalog().Version

	bad := append(feed(t, ads[:10]), []byte(`{"kind":"product","id":"X.1","title":"t","landing":"ftp://x","markets":["de-DE"]}`+"\n")...)
	for _, c := range []struct {
		name, result, errWant string
		content               []byte
	}{
		{"lost half", "refused", "lost 100 of the 200 ads", feed(t, ads[:100])},
		{"empty", "refused", "empty", nil},
		{"bad line", "failed", path + ":11: landing:", bad},
	} {
		writeFile(t, path, c.content)
		r := a.Reload(context.Background(), false)
		if r.Result != c.result || r.Version != v1 || !strings.Contains(r.Error, c.errWant) {
			t.Errorf("%s: %+v, want %s with %q and the old version", c.name, r, c.result, c.errWant)
		}
		if got := header(t, a.Handler, "/healthz", "X-Adlink-Catalog"); got != v1 {
			t.Errorf("%s: serving %s, want the old %s", c.name, got, v1)
		}
		if s := readyz(t, a); s.LastRefresh == nil || s.LastRefresh.Result != c.result || s.Ads != len(ads) {
			t.Errorf("%s: /readyz %+v", c.name, s)
		}
	}
	_, metrics := get(t, a.Admin, "/metrics")
	for _, want := range []string{`adlink_catalog_refreshes_total{result="refused"} 2`, `adlink_catalog_refreshes_total{result="failed"} 1`,
		"adlink_catalog_refresh_failing 1", "adlink_catalog_ads 200"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The operator knows better: forced, the smaller catalog is served.
	writeFile(t, path, feed(t, ads[:100]))
	rec := httptest.NewRecorder()
	a.Admin.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/admin/reload?force=true", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result":"swapped"`) || a.Catalog().Indexes.All().Len() != 100 {
		t.Errorf("forced reload: %d %s", rec.Code, rec.Body)
	}
}

// feedServer serves a feed with an ETag, answering If-None-Match with 304;
// fail makes it answer 500, hang makes it wait until the test ends.
type feedServer struct {
	body       atomic.Pointer[[]byte]
	fail, hang atomic.Bool
	full       atomic.Int32 // 200 answers
	stop       chan struct{}
}

func (f *feedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.hang.Load() {
		select {
		case <-f.stop:
		case <-r.Context().Done():
		}
		return
	}
	if f.fail.Load() {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	b := *f.body.Load()
	etag := fmt.Sprintf(`"%x"`, len(b)) + strconv.Itoa(int(b[len(b)/2]))
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f.full.Add(1)
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/rss+xml")
	w.Write(b)
}

// merchantFeed writes ads as a Merchant Center RSS feed.
func merchantFeed(ads []match.Ad) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" xmlns:g="http://base.google.com/ns/1.0"><channel><link>https://shop.example/</link>` + "\n")
	for _, a := range ads {
		fmt.Fprintf(&b, "<item><g:id>%s</g:id><g:title>%s</g:title><g:link>%s</g:link><g:price>%d.%02d EUR</g:price><g:availability>in_stock</g:availability></item>\n",
			a.ID, a.ID, a.Landing, a.PriceCents/100, a.PriceCents%100)
	}
	b.WriteString("</channel></rss>\n")
	return b.Bytes()
}

// TestRefreshFromURL: a Merchant Center feed over HTTP is fetched again
// only when it changed, and a feed that answers 500, hangs or is over the
// size cap leaves the old catalog serving.
func TestRefreshFromURL(t *testing.T) {
	ads := testcatalog.Generate(100, 3)
	for i := range ads {
		ads[i].Landing = "https://shop.example/p/" + strconv.Itoa(i)
	}
	fs := &feedServer{stop: make(chan struct{})}
	b := merchantFeed(ads)
	fs.body.Store(&b)
	srv := httptest.NewServer(fs)
	defer srv.Close()
	defer close(fs.stop)

	cfg := testConfig(t)
	cfg.Catalogs = []string{srv.URL + "/feed#market=de-DE&bid=0.05"}
	// Long enough for a loaded machine to fetch and read 100 ads under the
	// race detector; the hanging feed waits it out.
	cfg.CatalogTimeout = 2 * time.Second
	var refreshes []api.Reload
	done := make(chan struct{}, 1)
	tick := make(chan time.Time)
	a, err := New(cfg, Options{Refresh: tick, OnRefresh: func(r api.Reload) {
		refreshes = append(refreshes, r)
		select {
		case done <- struct{}{}:
		default: // a refresh the test started itself
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n := a.Catalog().Indexes.All().Len(); n != len(ads) {
		t.Fatalf("%d ads from the feed, want %d", n, len(ads))
	}
	if ad, _ := a.Catalog().Indexes.All().Lookup(ads[0].ID); a.Catalog().Indexes.All().Ad(ad).Advertiser != "shop.example" {
		t.Error("the feed's channel link does not name its advertiser")
	}
	v1 := a.Catalog().Version

	// The refresh tick: the feed has not changed, so it is not fetched.
	tick <- time.Now()
	<-done
	if refreshes[0].Result != "unchanged" || fs.full.Load() != 1 {
		t.Errorf("refresh of an unchanged feed: %+v, %d full fetches, want 1", refreshes[0], fs.full.Load())
	}

	fs.fail.Store(true)
	if r := a.Reload(context.Background(), false); r.Result != "failed" || !strings.Contains(r.Error, "500") || r.Version != v1 {
		t.Errorf("feed answering 500: %+v", r)
	}
	fs.fail.Store(false)
	fs.hang.Store(true)
	if r := a.Reload(context.Background(), false); r.Result != "failed" || !strings.Contains(r.Error, "deadline") || r.Version != v1 {
		t.Errorf("feed that hangs: %+v", r)
	}
	fs.hang.Store(false)

	b2 := merchantFeed(ads[:90])
	fs.body.Store(&b2)
	if r := a.Reload(context.Background(), false); r.Result != "swapped" || r.Ads != 90 {
		t.Errorf("changed feed: %+v", r)
	}
	if s := readyz(t, a); s.LastRefresh.Result != "swapped" || s.Ads != 90 {
		t.Errorf("/readyz: %+v", s)
	}
}

// TestRefreshRefusesFeedRedirect: a feed server that starts redirecting
// the feed to a scheme other than http and https (here file:, the
// server's own files) fails the refresh with the feed and the scheme
// named, and the catalog served stays.
func TestRefreshRefusesFeedRedirect(t *testing.T) {
	ads := testcatalog.Generate(20, 3)
	b := merchantFeed(ads)
	var moved atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if moved.Load() {
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write(b)
	}))
	defer srv.Close()
	cfg := testConfig(t)
	feedURL := srv.URL + "/feed#market=de-DE&bid=0.05"
	cfg.Catalogs = []string{feedURL}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := a.Catalog().Version
	moved.Store(true)
	r := a.Reload(context.Background(), true)
	if r.Result != "failed" || !strings.Contains(r.Error, feedURL+": redirect to file:///etc/passwd") || !strings.Contains(r.Error, `"file"`) || r.Version != v1 {
		t.Errorf("feed redirected to file: %+v", r)
	}
}

// TestFeedSizeCap: a feed over the cap is refused without reading it all,
// and the old catalog serves on.
func TestFeedSizeCap(t *testing.T) {
	ads := testcatalog.Generate(50, 4)
	small := merchantFeed(ads)
	var big atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !big.Load() {
			w.Write(small)
			return
		}
		if r.URL.Query().Get("declared") != "" {
			// A 2 GB feed that says so up front is not read at all.
			w.Header().Set("Content-Length", strconv.Itoa(2<<30))
			w.WriteHeader(http.StatusOK)
			return
		}
		// One that does not say: the reader stops at the cap.
		chunk := bytes.Repeat([]byte("<!-- padding -->"), 4096)
		for i := 0; i < 1<<17; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	for _, declared := range []bool{true, false} {
		big.Store(false)
		cfg := testConfig(t)
		url := srv.URL + "/feed.xml?x=1#market=de-DE"
		if declared {
			url = srv.URL + "/feed.xml?declared=1#market=de-DE"
		}
		cfg.Catalogs = []string{url}
		cfg.CatalogMaxBytes = 1 << 20
		a, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		v1 := a.Catalog().Version
		big.Store(true)
		r := a.Reload(context.Background(), false)
		if r.Result != "failed" || !strings.Contains(r.Error, "-catalog-max-bytes") || r.Version != v1 {
			t.Errorf("declared %v: %+v", declared, r)
		}
		a.Close()
	}
}

// TestRefreshDuplicateAcrossFeeds: two feeds that hold the same id fail
// the refresh, naming both.
func TestRefreshDuplicateAcrossFeeds(t *testing.T) {
	ads := testcatalog.Generate(20, 5)
	dir := t.TempDir()
	a1, a2 := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeFile(t, a1, feed(t, ads[:10]))
	writeFile(t, a2, feed(t, ads[9:]))
	cfg := testConfig(t)
	cfg.Catalogs = []string{a1, a2}
	_, err := New(cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "duplicate id") || !strings.Contains(err.Error(), "a.jsonl") || !strings.Contains(err.Error(), "b.jsonl") {
		t.Errorf("New = %v, want a duplicate id naming both feeds", err)
	}
	if err != nil && errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
}

// TestRefreshAfterFailure: a feed read by a refresh that failed on another
// feed is served by the next refresh, though neither has changed since.
func TestRefreshAfterFailure(t *testing.T) {
	ads := testcatalog.Generate(100, 6)
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeFile(t, pa, feed(t, ads[:50]))
	writeFile(t, pb, feed(t, ads[50:]))
	cfg := testConfig(t)
	cfg.Catalogs = []string{pa, pb}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	writeFile(t, pa, feed(t, ads[:49]))
	writeFile(t, pb, []byte("{broken\n"))
	if r := a.Reload(context.Background(), false); r.Result != "failed" || r.Ads != 100 {
		t.Fatalf("broken feed: %+v", r)
	}
	writeFile(t, pb, feed(t, ads[50:]))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" || r.Ads != 99 {
		t.Errorf("after the fix: %+v, want a.jsonl's change served", r)
	}
	if r := a.Reload(context.Background(), false); r.Result != "unchanged" {
		t.Errorf("then: %+v", r)
	}
}

// TestSaleEndsOnTime: a Merchant Center sale ends in the answers when it
// ends, though the feed does not change and no refresh interval is set.
func TestSaleEndsOnTime(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second)
	end := start.Add(time.Hour)
	var clock atomic.Pointer[time.Time]
	clock.Store(&start)
	feed := `<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" xmlns:g="http://base.google.com/ns/1.0"><channel><link>https://shop.example/</link>
<item><g:id>SALE-1</g:id><g:title>Espressomaschine Sale</g:title><g:link>https://shop.example/p/1</g:link><g:price>39.90 EUR</g:price>
<g:sale_price>29.90 EUR</g:sale_price><g:sale_price_effective_date>` + start.Add(-time.Hour).Format(time.RFC3339) + "/" + end.Format(time.RFC3339) + `</g:sale_price_effective_date></item>
</channel></rss>
`
	path := filepath.Join(t.TempDir(), "feed.xml")
	writeFile(t, path, []byte(feed))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path + "#market=de-DE&bid=0.05"}
	refreshed := make(chan api.Reload, 4)
	a, err := New(cfg, Options{Now: func() time.Time { return *clock.Load() }, ChangeCheck: 10 * time.Millisecond,
		OnRefresh: func(r api.Reload) { refreshed <- r }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	price := func() int64 {
		ix := a.Catalog().Indexes.All()
		i, ok := ix.Lookup("SALE-1")
		if !ok {
			t.Fatal("SALE-1 is not served")
		}
		return ix.Ad(i).PriceCents
	}
	if p := price(); p != 2990 {
		t.Fatalf("during the sale SALE-1 costs %d cents, want 2990", p)
	}
	almost := end.Add(-time.Second)
	clock.Store(&almost)
	select {
	case r := <-refreshed:
		t.Fatalf("a refresh before the sale's end: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	clock.Store(&end)
	select {
	case r := <-refreshed:
		if r.Result != resultSwapped {
			t.Errorf("the refresh at the sale's end: %+v", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("no refresh within a minute of the sale's end")
	}
	if p := price(); p != 3990 {
		t.Errorf("after the sale SALE-1 costs %d cents, want 3990", p)
	}
	// Nothing more changes: no more refreshes.
	select {
	case r := <-refreshed:
		t.Errorf("a refresh with nothing to change: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
}
