package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

// startRun runs the server as main does, on a free loopback port, and
// returns its base URL and a function that stops it and returns run's error.
func startRun(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	base, _, stop := startRunAdmin(t, args...)
	return base, stop
}

// startRunAdmin is startRun that also returns the admin listener's base
// URL.
func startRunAdmin(t *testing.T, args ...string) (string, string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0"}, args...), noEnv, io.Discard, pw)
		pw.Close()
	}()
	addr := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct {
				Msg, Addr string
				AdminAddr string `json:"admin_addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- [2]string{line.Addr, line.AdminAddr}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		return "http://" + a[0], "http://" + a[1], func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("run returned before listening: %v", err)
	}
	return "", "", nil
}

func noEnv(string) string { return "" }

// partnersFile is a partners file of two partners, neither the demo.
var partnersFile = filepath.Join("..", "testdata", "partners.example.json")

func TestRunServesSearchAndRedirect(t *testing.T) {
	data := t.TempDir()
	base, admin, stop := startRunAdmin(t, "-data", data, "-redirect-url", "https://r.example.com/", "-demo", "-partners", partnersFile)
	for _, tt := range []struct {
		key, site string
		status    int
	}{
		{"demo", "demo", 200},            // kept beside the file's partners
		{"k-9f2c7a1e", "tech-blog", 200}, // from the file
		{"k-9f2c7a1e", "reviews", 403},
		{"nope", "demo", 401},
	} {
		res, err := http.Get(base + "/v2/search/link?q=handy&api_key=" + tt.key + "&site_id=" + tt.site)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("key %s site %s: %d, want %d", tt.key, tt.site, res.StatusCode, tt.status)
		}
	}
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("healthz %d", res.StatusCode)
	}

	res, err = http.Get(base + "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct{ Link []struct{ Ad string } }
	err = json.NewDecoder(res.Body).Decode(&resp)
	res.Body.Close()
	if err != nil || len(resp.Link) == 0 {
		t.Fatalf("search: %v %+v", err, resp)
	}
	ad, err := url.Parse(resp.Link[0].Ad)
	if err != nil || ad.Host != "r.example.com" || ad.Path != "/v1/redirect" || ad.Query().Get("adId") != "handy-bestkauf.de" {
		t.Fatalf("ad URL %s", resp.Link[0].Ad)
	}
	// The redirect address is configured elsewhere; ask this server.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = client.Get(base + ad.Path + "?" + ad.RawQuery)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), "https://handy-bestkauf.de") {
		t.Errorf("redirect %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The click's record, the store's share of the redirect, is timed
	// apart on the admin listener.
	res, err = http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := `adlink_click_record_duration_seconds_count{outcome="recorded"} 1`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics after one click lacks %s", want)
	}

	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	db, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	log.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.AdID == "handy-bestkauf.de" && c.Criterion == "lg handy" {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Errorf("%d clicks on disk after shutdown, want 1", n)
	}
}

// On -addr with port 0 the server listens on a free port, and the links
// it writes (the click URLs of an answer, the shard manifest's
// redirect_url) name that port, not 0: following one reaches the server.
func TestRunOnAnyPortLinksToIt(t *testing.T) {
	base, stop := startRun(t, "-data", t.TempDir(), "-demo")
	defer stop()
	get := func(target string) *http.Response {
		t.Helper()
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := client.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	var resp struct{ Link []struct{ Ad string } }
	if err := json.NewDecoder(get(base + "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo").Body).Decode(&resp); err != nil || len(resp.Link) == 0 {
		t.Fatalf("search: %v %+v", err, resp)
	}
	ad := resp.Link[0].Ad
	if !strings.HasPrefix(ad, base+"/v1/redirect?") {
		t.Fatalf("ad URL %s, want it on %s", ad, base)
	}
	if res := get(ad); res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), "https://handy-bestkauf.de") {
		t.Errorf("following the ad URL: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	var manifest struct {
		RedirectURL string `json:"redirect_url"`
	}
	if err := json.NewDecoder(get(base + "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de").Body).Decode(&manifest); err != nil || manifest.RedirectURL != base {
		t.Errorf("manifest redirect_url %q (%v), want %s", manifest.RedirectURL, err, base)
	}
}

// Without -demo the demo partner does not exist: the file's partners are
// the only ones.
func TestRunWithoutDemo(t *testing.T) {
	base, stop := startRun(t, "-data", t.TempDir(), "-partners", partnersFile)
	defer stop()
	for key, want := range map[string]int{"demo": 401, "k-9f2c7a1e": 200} {
		res, err := http.Get(base + "/v2/search/link?q=handy&api_key=" + key + "&site_id=tech-blog")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("api_key %s: %d, want %d", key, res.StatusCode, want)
		}
	}
}

// An ADLINK_* variable that no setting has (a misspelling in the
// service's environment file) is named in a warning at start, and the
// variables it reads are not.
func TestRunWarnsOfUnknownVariables(t *testing.T) {
	t.Setenv("ADLINK_CATALOGS", "feeds/de.jsonl")
	t.Setenv("ADLINK_LOG_LEVEL", "info")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "", "-data", t.TempDir(), "-demo"}, noEnv, io.Discard, pw)
		pw.Close()
	}()
	var warned []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var line struct {
			Level, Msg string
			Names      []string
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if line.Level == "WARN" && strings.HasPrefix(line.Msg, "ADLINK_* variables that no setting has") {
			warned = append(warned, line.Names...)
		}
		if line.Msg == "listening" {
			cancel()
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(warned, []string{"ADLINK_CATALOGS"}) {
		t.Errorf("warned of %q, want [ADLINK_CATALOGS]", warned)
	}
}

// Without -demo and -partners the server has nobody to serve: it says so
// in one line and does not start.
func TestRunNeedsPartners(t *testing.T) {
	var stderr strings.Builder
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-admin-addr", "", "-data", t.TempDir()}, noEnv, io.Discard, &stderr)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "-partners") || !strings.Contains(err.Error(), "-demo") {
		t.Errorf("run = %v, want one line naming -partners and -demo", err)
	}
	if strings.Contains(stderr.String(), "listening") {
		t.Errorf("it served:\n%s", stderr.String())
	}
}

// Every problem of the configuration, whether in the flags or on disk or
// the network, is reported at once, and nothing is served.
func TestRunReportsEveryConfigProblem(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	err = run(context.Background(), []string{"-addr", busy.Addr().String(), "-admin-addr", "127.0.0.1:0", "-trusted-proxies", "bogus", "-rate-key", "fast", "-nope",
		"-catalog", "/nonexistent/feed.jsonl", "-partners", "/nonexistent/partners.json", "-data", filepath.Join(file, "data")},
		noEnv, io.Discard, &stderr)
	if err == nil {
		t.Fatal("run accepted a bad configuration")
	}
	for _, want := range []string{`"bogus"`, `invalid value "fast" for flag -rate-key`, "-nope", "feed.jsonl", "partners.json",
		"data directory", "addr " + busy.Addr().String() + ": ", "address already in use"} {
		if n := strings.Count(err.Error(), want); n != 1 {
			t.Errorf("the error names %s %d times, want once:\n%v", want, n, err)
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("it logged before reporting:\n%s", stderr.String())
	}
}

// A taken admin address is named as -admin-addr's: a second server on one
// machine that was given only -addr finds the default one taken.
func TestRunNamesTheTakenAdminAddr(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0", "-admin-addr", busy.Addr().String(), "-data", t.TempDir(), "-demo"},
		noEnv, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "admin-addr "+busy.Addr().String()+": ") {
		t.Errorf("run = %v, want an error that names admin-addr", err)
	}
}

// A second server given the data directory of one running says so, and
// names the directory and -data, not bbolt's lock timeout.
func TestRunNamesTheHeldDataDir(t *testing.T) {
	dir := t.TempDir()
	_, stop := startRun(t, "-data", dir, "-demo")
	defer stop()
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-admin-addr", "", "-data", dir, "-demo"}, noEnv, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("a second server started on a held data directory")
	}
	for _, want := range []string{filepath.Join(dir, store.FileName), "in use by another server", "-data"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run = %v, want it to name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "timeout") {
		t.Errorf("run = %v, want no lock timeout", err)
	}
}

// -help shows the report subcommand beside the server's flags.
func TestRunHelpNamesReport(t *testing.T) {
	var stderr strings.Builder
	if err := run(context.Background(), []string{"-help"}, noEnv, io.Discard, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -help = %v", err)
	}
	for _, want := range []string{"adlink report [flags]", "adlink report -help", "adlink invalidate [flags]", "adlink reload [flags]", "-admin-addr"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-help lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRunVersion(t *testing.T) {
	var stdout strings.Builder
	if err := run(context.Background(), []string{"-version"}, noEnv, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "adlink dev commit ") {
		t.Errorf("-version printed %q", stdout.String())
	}
}

// TestRunAnswersTooLongURLsInJSON: a 100 KB URL, over the server's bound,
// is answered by adlink in JSON, and as JSONP a script tag can call when
// it has a valid callback, not by net/http in plain text; a request over
// the http.Server's own bound still gets net/http's answer.
func TestRunAnswersTooLongURLsInJSON(t *testing.T) {
	base, stop := startRun(t, "-data", t.TempDir(), "-demo")
	defer stop()
	pad := "&pad=" + strings.Repeat("x", 100<<10)
	get := func(target string, h http.Header) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range h {
			req.Header[k] = vs
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}
	res, body := get("/v2/search/link?q=handy&api_key=demo&site_id=demo"+pad, nil)
	if res.StatusCode != http.StatusRequestURITooLong || res.Header.Get("Content-Type") != "application/json" ||
		!strings.HasPrefix(body, `{"error":{"code":"uri_too_long","message":"the URL is `) {
		t.Errorf("a 100 KB URL: %s %q %.200s", res.Status, res.Header.Get("Content-Type"), body)
	}
	res, body = get("/v2/search/link?q=handy&api_key=demo&site_id=demo"+pad+"&callback=adlink.cb", nil)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(body, `/**/adlink.cb({"http_status":414,"error":{"code":"uri_too_long"`) ||
		!strings.HasSuffix(body, "});") || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("a 100 KB URL with a callback: %s %.200s", res.Status, body)
	}
	res, body = get("/v2/search/link?q=handy", http.Header{"X-Big": {strings.Repeat("y", 100<<10)}})
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.HasPrefix(body, `{"error":{"code":"headers_too_large"`) {
		t.Errorf("100 KB of header fields: %s %.200s", res.Status, body)
	}
	if res, _ := get("/v2/search/link?q=handy&api_key=demo&site_id=demo"+strings.Repeat("x", 2<<20), nil); res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 2 MB URL: %s", res.Status)
	}
}
