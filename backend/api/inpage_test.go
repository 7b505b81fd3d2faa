package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/shards"
)

type inPageEnv struct {
	testEnv
	set *shards.Set
}

func newInPageEnv(t *testing.T, withShards bool) *inPageEnv {
	return newInPageEnvSplit(t, withShards, 0)
}

// newInPageEnvSplit is newInPageEnv with shards.Options.SplitAbove.
func newInPageEnvSplit(t *testing.T, withShards bool, splitAbove int) *inPageEnv {
	t.Helper()
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.Demo = true
	env := &inPageEnv{testEnv: testEnv{indexes: ix}}
	d := Deps{
		Config:   cfg,
		Indexes:  ix,
		Partners: testPartners(t),
		Clicks:   &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }},
		Web: fstest.MapFS{
			"widget.js":       {Data: []byte("(function(){/* widget */})();")},
			"demo/index.html": {Data: []byte("<!doctype html><title>demo</title>")},
			"dashboard.html":  {Data: []byte("<!doctype html><title>Reports</title>")},
			"dashboard.js":    {Data: []byte("(() => {})();")},
			"dashboard.css":   {Data: []byte("body{}")},
		},
	}
	if withShards {
		if env.set, err = shards.Build(ix, shards.Options{Matcher: []byte("\x00asm module"), RedirectURL: cfg.RedirectURL, SplitAbove: splitAbove}); err != nil {
			t.Fatal(err)
		}
		d.Shards = env.set
	}
	env.handler = NewServer(d)
	return env
}

func TestShardManifest(t *testing.T) {
	env := newInPageEnv(t, true)
	for _, tc := range []struct {
		query, acceptLang string
		country, lang     string
	}{
		{"api_key=demo&site_id=demo&loc=de&lang=de", "", "de", "de"},
		{"api_key=demo&site_id=demo&loc=DE&lang=use_locale", "de-AT,de;q=0.9,en;q=0.5", "de", "de"},
		{"api_key=demo&site_id=demo&loc=us&lang=en", "", "us", "en"},
		{"api_key=demo&site_id=demo&loc=de", "", "de", ""},
		{"api_key=demo&site_id=demo", "", "", ""},
	} {
		res := env.get(t, "/v2/shards?"+tc.query, header("Accept-Language", tc.acceptLang), "")
		body := readBody(t, res)
		if res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(res.Header.Get("Cache-Control"), "max-age=") {
			t.Fatalf("%s: %d %v %s", tc.query, res.StatusCode, res.Header, body)
		}
		if want := withFields(env.set.Manifest(tc.country, tc.lang), "loc", tc.country, "lang", tc.lang); !bytes.Equal(body, want) {
			t.Errorf("%s: manifest %s, want %s", tc.query, body, want)
		}
		var m struct{ Shard struct{ URL string } }
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		// The shard it names is served, immutable.
		sres := env.get(t, m.Shard.URL, header("Accept-Encoding", "gzip, zstd"), "")
		if sres.StatusCode != http.StatusOK || sres.Header.Get("Content-Encoding") != "zstd" ||
			sres.Header.Get("Cache-Control") != shards.Immutable || sres.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("%s: %d %v", m.Shard.URL, sres.StatusCode, sres.Header)
		}
	}
	// A manifest is cached publicly: it names the request headers that
	// chose its market, and no others.
	for _, tc := range []struct{ query, vary string }{
		{"loc=de&lang=de", ""},
		{"loc=use_geo&lang=de", "CF-IPCountry"},
		{"loc=de&lang=use_locale", "Accept-Language"},
	} {
		res := env.get(t, "/v2/shards?api_key=demo&site_id=demo&"+tc.query, nil, "")
		if got := strings.Join(res.Header.Values("Vary"), ","); got != tc.vary {
			t.Errorf("%s: Vary %q, want %q", tc.query, got, tc.vary)
		}
	}
	// The manifest says which country and language the server resolved
	// use_geo and use_locale to, for the page to match with.
	for _, tc := range []struct {
		query  string
		header http.Header
		want   string
	}{
		{"loc=use_geo", header("CF-IPCountry", "DE"), `"loc":"de","lang":""`},
		{"loc=use_geo", nil, `"loc":"","lang":""`},
		{"loc=use_geo&lang=use_locale", http.Header{"Cf-Ipcountry": {"us"}, "Accept-Language": {"en-GB,en;q=0.8"}}, `"market":"en-US"`},
		{"loc=use_geo&lang=use_locale", http.Header{"Cf-Ipcountry": {"us"}, "Accept-Language": {"en-GB,en;q=0.8"}}, `"loc":"us","lang":"en"`},
	} {
		body := readBody(t, env.get(t, "/v2/shards?api_key=demo&site_id=demo&"+tc.query, tc.header, "127.0.0.1:1"))
		if !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %v: %s, want %s in it", tc.query, tc.header, body, tc.want)
		}
	}
	res := env.get(t, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de&callback=cb", nil, "")
	if body := readBody(t, res); !strings.HasPrefix(string(body), `/**/cb({"http_status":200,"market":"de-DE"`) {
		t.Errorf("JSONP manifest: %s", body)
	}
}

// TestFragments: a shard cut in fragments says how many in its manifest;
// each is served at the shard's URL + "/k", immutable, and anything else
// under it is a 404 naming it.
func TestFragments(t *testing.T) {
	env := newInPageEnvSplit(t, true, 1)
	body := readBody(t, env.get(t, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de", nil, ""))
	var m struct {
		Shard struct {
			URL       string
			SHA256    string
			Fragments int
		}
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	frags := env.set.Fragments(env.set.Shard(m.Shard.SHA256))
	if m.Shard.Fragments < 1 || m.Shard.Fragments != len(frags) {
		t.Fatalf("manifest %s: %d fragments, the set has %d", body, m.Shard.Fragments, len(frags))
	}
	for k, f := range frags {
		res := env.get(t, m.Shard.URL+"/"+strconv.Itoa(k), header("Accept-Encoding", "identity"), "")
		got := readBody(t, res)
		if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != shards.Immutable ||
			res.Header.Get("Access-Control-Allow-Origin") != "*" || !bytes.Equal(got, f.Bytes(shards.Identity)) {
			t.Errorf("fragment %d: %d %v, %d bytes", k, res.StatusCode, res.Header, len(got))
		}
	}
	for _, bad := range []string{
		m.Shard.URL + "/" + strconv.Itoa(len(frags)), m.Shard.URL + "/-1", m.Shard.URL + "/01", m.Shard.URL + "/+1", m.Shard.URL + "/x",
		"/v2/shards/" + strings.Repeat("0", 64) + "/0",
	} {
		res := env.get(t, bad, nil, "")
		if body := readBody(t, res); res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no fragment") {
			t.Errorf("%s: %d %s", bad, res.StatusCode, body)
		}
	}
	// A whole shard has none: neither in its manifest nor served.
	whole := newInPageEnv(t, true)
	body = readBody(t, whole.get(t, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de", nil, ""))
	if strings.Contains(string(body), "fragments") {
		t.Errorf("whole shard's manifest: %s", body)
	}
}

func TestShardManifestErrors(t *testing.T) {
	env := newInPageEnv(t, true)
	for query, want := range map[string]struct {
		status      int
		code, param string
	}{
		"site_id=demo&loc=de&lang=de":                {400, CodeMissingParameter, "api_key"},
		"api_key=demo&site_id=demo&loc=deu":          {400, CodeInvalidParameter, "loc"},
		"api_key=demo&site_id=demo&loc=de&lang=ger":  {400, CodeInvalidParameter, "lang"},
		"api_key=demo&site_id=demo&loc=de&lang=qq":   {400, CodeInvalidParameter, "lang"},
		"api_key=nobody&site_id=demo&loc=de&lang=de": {401, CodeUnknownAPIKey, "api_key"},
		"api_key=k2&site_id=demo&loc=de&lang=de":     {403, CodeForeignSite, "site_id"},
	} {
		res := env.get(t, "/v2/shards?"+query, nil, "")
		var e struct {
			Error struct{ Code, Param string }
		}
		json.Unmarshal(readBody(t, res), &e)
		if res.StatusCode != want.status || e.Error.Code != want.code || e.Error.Param != want.param {
			t.Errorf("%s: %d %+v, want %+v", query, res.StatusCode, e.Error, want)
		}
	}
	// The widget reads these from another origin: an error must be
	// readable there too, or it sees a failed fetch instead of a 404.
	if res := env.get(t, "/v2/shards/"+strings.Repeat("0", 64), nil, ""); res.StatusCode != http.StatusNotFound || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("unknown shard: %d, Access-Control-Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	none := newInPageEnv(t, false)
	for _, p := range []string{"/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de", "/matcher.wasm"} {
		if res := none.get(t, p, nil, ""); res.StatusCode != http.StatusNotFound || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s without shards: %d, Access-Control-Allow-Origin %q", p, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

func TestMatcherAndWebFiles(t *testing.T) {
	env := newInPageEnv(t, true)
	for _, tc := range []struct {
		path, ctype, cache string
	}{
		{"/matcher.wasm", "application/wasm", "public, max-age=300"},
		{env.set.MatcherURL(), "application/wasm", shards.Immutable},
		{"/matcher.wasm?v=0000000000000000", "application/wasm", "public, max-age=300"},
		{"/widget.js", "text/javascript; charset=utf-8", "public, max-age=300"},
		{"/demo/", "text/html; charset=utf-8", "no-cache"},
	} {
		res := env.get(t, tc.path, header("Accept-Encoding", "gzip"), "")
		body := readBody(t, res)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != tc.ctype || res.Header.Get("Cache-Control") != tc.cache {
			t.Errorf("%s: %d %v %.40q", tc.path, res.StatusCode, res.Header, body)
		}
	}
	if res := env.get(t, "/demo/missing.html", nil, ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("missing demo file: %d", res.StatusCode)
	}
}

// TestWidgetNamesMatcher: widget.js as served names the module the
// manifest names, in its one line for it, so that a first view can start
// the module before the manifest comes; a server without a module leaves
// the line empty. Nothing of the request changes it.
func TestWidgetNamesMatcher(t *testing.T) {
	src, err := os.ReadFile("../../web/widget.js")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte(matcherLine)); n != 1 {
		t.Fatalf("web/widget.js has %d lines %q, want one", n, matcherLine)
	}
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	set, err := shards.Build(ix, shards.Options{Matcher: []byte("\x00asm module"), RedirectURL: "https://r.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  *shards.Set
		want string
	}{
		{"with a module", set, `var MATCHER_URL = "` + set.MatcherURL() + `";`},
		{"without shards", nil, matcherLine},
	} {
		d := Deps{
			Config:   config.Default(),
			Indexes:  ix,
			Shards:   tc.set,
			Partners: testPartners(t),
			Clicks:   &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }},
			Web:      fstest.MapFS{"widget.js": {Data: src}},
		}
		env := &testEnv{indexes: ix, handler: NewServer(d)}
		for _, p := range []string{"/widget.js", "/widget.js?v=" + url.QueryEscape(`"; fetch("//evil.example")`)} {
			body := string(readBody(t, env.get(t, p, nil, "")))
			if !strings.Contains(body, "\n"+tc.want+"\n") || strings.Contains(body, "evil") {
				t.Errorf("%s, %s: the module's line is not %q", tc.name, p, tc.want)
			}
		}
	}
}
