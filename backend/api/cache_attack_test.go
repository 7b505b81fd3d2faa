package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/pages"
)

// TestErrorsAreNotStored: no error may be kept by a shared cache (a CDN
// in front of the API) and handed to other readers. As JSONP an error is
// a 200, which a cache stores as it stores any 200 without
// Cache-Control; and a 404 is stored by default too. Many errors pass:
// a full page queue, a shard or an ad a replica still reading a new
// catalog does not have yet, a site shard evicted, a partner or domain
// the next reload adds. One stored would answer every reader of that URL
// with it, long after the cause is gone. Every error is no-store,
// whatever the handler set before it failed.
func TestErrorsAreNotStored(t *testing.T) {
	pe := newPageEnv(t, 1, pages.FetchOptions{AllowPrivate: true})
	srv := httptest.NewServer(pe.handler)
	defer srv.Close()
	get := func(target string) (*http.Response, string) {
		t.Helper()
		res, err := noRedirects.Get(srv.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return res, string(body)
	}
	// The queue's one place is taken: the next page is refused with a 503.
	if res, body := get(pageQuery(pe.base + "/review")); res.StatusCode != http.StatusAccepted {
		t.Fatalf("first page: %s %s", res.Status, body)
	}
	const search = "/v2/search/link?q=handy&api_key=demo&site_id=demo"
	for _, c := range []struct {
		target string
		status int
		code   string
	}{
		{pageQuery(pe.base + "/other"), http.StatusServiceUnavailable, "queue_full"},
		{pageQuery(pe.base+"/other", "callback", "cb"), http.StatusOK, "queue_full"},
		{"/v2/search/link?q=handy&api_key=nokey&site_id=demo&callback=cb", http.StatusOK, "unknown_api_key"},
		{"/v2/search/link?q=handy&api_key=demo&site_id=nosite", http.StatusForbidden, "site_not_allowed"},
		{pageQuery("https://elsewhere.example/", "callback", "cb"), http.StatusOK, "url_not_allowed"},
		{search + "&size=0&callback=cb", http.StatusOK, "invalid_parameter"},
		{"/v2/shards/" + strings.Repeat("0", 64), http.StatusNotFound, "not_found"},
		{"/v2/shards/" + strings.Repeat("0", 64) + "/0", http.StatusNotFound, "not_found"},
		{"/v2/nothing?callback=cb", http.StatusOK, "not_found"},
		{clickQuery("adId", "gone.example", "adType", "advertiser"), http.StatusNotFound, "not_found"},
		{search + "&callback=cb&x=" + strings.Repeat("a", MaxURLBytes), http.StatusOK, "uri_too_long"},
	} {
		res, body := get(c.target)
		if res.StatusCode != c.status || !strings.Contains(body, `"code":"`+c.code+`"`) {
			t.Errorf("%.120s: %s %.200s, want %d %s", c.target, res.Status, body, c.status, c.code)
			continue
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%.120s: %d %s with Cache-Control %q, want no-store", c.target, res.StatusCode, c.code, cc)
		}
	}
}
