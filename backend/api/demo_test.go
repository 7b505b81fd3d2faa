package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
)

// demoServer serves the test's web files over loopback, with the demo on
// or off, and the catalog feeds catalogs (none: the embedded demo's).
func demoServer(t *testing.T, demo bool, catalogs ...string) string {
	t.Helper()
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.Demo, cfg.Catalogs = demo, catalogs
	ts := httptest.NewServer(NewServer(Deps{
		Config:   cfg,
		Indexes:  ix,
		Partners: testPartners(t),
		Clicks:   &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }},
		Web: fstest.MapFS{
			"widget.js":             {Data: []byte("(function(){})();")},
			"demo/index.html":       {Data: []byte("<!doctype html><title>demo</title>")},
			"demo/article.html":     {Data: []byte("<!doctype html><title>article</title>")},
			"demo/logos/shop.svg":   {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
			"demo/logos/other.svg":  {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
			"demo/empty/index.html": {Data: []byte("<!doctype html><title>index</title>")},
		},
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// getStatus GETs url, following redirects (the mux's to a cleaned path),
// and returns the status and the error code of a JSON body.
func getStatus(t *testing.T, url string) (status int, code string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body.Error.Code
}

// TestDemoPagesOnlyWithDemo: the demo publisher's pages are part of the
// demo: a server without -demo has none of them, so it does not show a
// demo that its partners cannot use. The demo catalog's logos are served
// wherever that catalog is, and only there.
func TestDemoPagesOnlyWithDemo(t *testing.T) {
	on, off, feeds := demoServer(t, true), demoServer(t, false), demoServer(t, false, "feed.jsonl")
	for _, tc := range []struct {
		path          string
		off, ownFeeds int
	}{
		{"/demo/", http.StatusNotFound, http.StatusNotFound},
		{"/demo/article.html", http.StatusNotFound, http.StatusNotFound},
		{"/demo/logos/../article.html", http.StatusNotFound, http.StatusNotFound},
		{"/demo/logos/%2e%2e/article.html", http.StatusNotFound, http.StatusNotFound},
		{"/demo/logos/shop.svg", http.StatusOK, http.StatusNotFound},
	} {
		if status, _ := getStatus(t, on+tc.path); status != http.StatusOK {
			t.Errorf("with the demo, %s: %d, want 200", tc.path, status)
		}
		for _, srv := range []struct {
			name, base string
			want       int
		}{{"without the demo", off, tc.off}, {"with feeds of its own", feeds, tc.ownFeeds}} {
			status, code := getStatus(t, srv.base+tc.path)
			if status != srv.want || status == http.StatusNotFound && code != CodeNotFound {
				t.Errorf("%s, %s: %d %q, want %d", srv.name, tc.path, status, code, srv.want)
			}
		}
	}
}

// TestNoDirectoryListing: a directory is served only by its index.html,
// never listed: one without it is not found, with or without the slash.
func TestNoDirectoryListing(t *testing.T) {
	base := demoServer(t, true)
	for _, p := range []string{"/demo/logos/", "/demo/logos", "/demo/logos/.", "/demo/./logos/", "/demo/logos//", "/demo/logos/%2e/"} {
		if status, code := getStatus(t, base+p); status != http.StatusNotFound || code != CodeNotFound {
			t.Errorf("%s: %d %q, want 404 %s", p, status, code, CodeNotFound)
		}
	}
	if status, _ := getStatus(t, base+"/demo/empty/"); status != http.StatusOK {
		t.Errorf("a directory with its index.html: %d, want 200", status)
	}
}

// TestDemoPathsStayInside: no spelling of a path under /demo/ (dots,
// encoded dots and slashes, backslashes, doubled slashes, double
// encoding, a NUL) serves a file from outside the demo's directory, here
// the root's widget.js: each is not found, or redirected to its clean
// path, which its own handler then answers.
func TestDemoPathsStayInside(t *testing.T) {
	base := demoServer(t, true)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{
		"/demo/../widget.js", "/demo/%2e%2e/widget.js", "/demo/%2E%2E%2Fwidget.js", "/demo/..%2fwidget.js",
		"/demo/..%5cwidget.js", `/demo/..\widget.js`, "/demo/logos%2F..%2F..%2Fwidget.js", "/demo//../widget.js",
		"/demo/%252e%252e/widget.js", "/demo/logos/..%2f..%2fwidget.js", "/demo/widget.js%00", "/demo/.%2e/widget.js",
	} {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written, not cleaned by the client
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch loc := res.Header.Get("Location"); {
		case res.StatusCode == http.StatusOK && string(body) == "(function(){})();":
			t.Errorf("%s served the root's widget.js", p)
		case res.StatusCode/100 == 3 && (strings.Contains(loc, "..") || strings.Contains(strings.ToLower(loc), "%2e")):
			t.Errorf("%s redirected to %q, not a clean path", p, loc)
		case res.StatusCode == http.StatusOK:
			t.Errorf("%s: 200 %q, want not found or a redirect", p, body)
		}
	}
}

// TestMissingDemoFileIsNotStored: a demo page or logo the server lacks
// is not found as every path the API lacks is, and no cache keeps that
// 404 (a 404 is stored by default), though the files it has are
// no-cache: a logo missing from one replica, or until a deploy, would be
// missing for every reader of a shared cache.
func TestMissingDemoFileIsNotStored(t *testing.T) {
	on, feeds := demoServer(t, true), demoServer(t, false)
	for _, u := range []string{on + "/demo/missing.html", on + "/demo/logos/missing.svg", on + "/demo/nodir/x.html", feeds + "/demo/logos/missing.svg"} {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || body.Error.Code != CodeNotFound || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %q, Cache-Control %q; want 404 %s, no-store", u, res.StatusCode, body.Error.Code, res.Header.Get("Cache-Control"), CodeNotFound)
		}
	}
}
