package app

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/match"
)

// testConfig is the default configuration with the demo partner and a
// data directory of the test's own.
func testConfig(t testing.TB) config.Config {
	cfg := config.Default()
	cfg.RedirectURL = "http://localhost:8080"
	cfg.DataDir = t.TempDir()
	cfg.Demo = true
	return cfg
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// TestNew: the server New builds answers a search from the demo catalog
// for the demo partner, is ready until it drains, and closes once.
func TestNew(t *testing.T) {
	a, err := New(testConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Ads) == 0 || a.Indexes.All().Len() != len(a.Ads) {
		t.Errorf("%d ads, %d indexed", len(a.Ads), a.Indexes.All().Len())
	}
	if status, body := get(t, a.Handler, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo"); status != http.StatusOK || !strings.Contains(body, "handy-bestkauf.de") {
		t.Errorf("search: %d %.200s", status, body)
	}
	for path, want := range map[string]int{"/readyz": 200, "/metrics": 404, "/widget.js": 200} {
		if status, body := get(t, a.Handler, path); status != want {
			t.Errorf("%s: %d, want %d: %.200s", path, status, want, body)
		}
	}
	if status, body := get(t, a.Admin, "/metrics"); status != http.StatusOK || !strings.Contains(body, "adlink_catalog_ads") {
		t.Errorf("admin /metrics: %d %.200s", status, body)
	}
	a.Drain()
	if status, _ := get(t, a.Handler, "/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", status)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestNewOptions: the catalog and the module a test gives are served in
// place of the configured ones.
func TestNewOptions(t *testing.T) {
	ad := match.Ad{ID: "only.example", Kind: match.KindAdvertiser, Title: "The only ad", Keywords: []string{"only"},
		Landing: "https://only.example/", Advertiser: "only.example", Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: 1000}
	a, err := New(testConfig(t), Options{Ads: []match.Ad{ad}, Matcher: []byte("\x00asm not really")})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Indexes.All().Len() != 1 {
		t.Errorf("%d ads indexed, want the one given", a.Indexes.All().Len())
	}
	if status, body := get(t, a.Handler, "/matcher.wasm"); status != http.StatusOK || body != "\x00asm not really" {
		t.Errorf("/matcher.wasm: %d %q", status, body)
	}
}

// writer returns what writes a file of content named name in dir and
// returns its path.
func writer(t *testing.T, dir string) func(name, content string) string {
	return func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// TestNewReportsEveryFile: the problems of every catalog file and of the
// partners file come together, before the store is opened.
func TestNewReportsEveryFile(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Catalogs = []string{write("a.jsonl", "{not json\n"), write("b.jsonl", "[]\n")}
	cfg.PartnersFile = write("partners.json", `{"partners":[{"apikey":"x"}]}`)
	_, err := New(cfg, Options{})
	if err == nil {
		t.Fatal("New accepted bad files")
	}
	for _, want := range []string{"a.jsonl", "b.jsonl", "partners.json"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
	if _, err := os.Stat(cfg.DataDir); err == nil {
		t.Error("the store was opened")
	}
}

// TestNewRefusesAnUnknownTimeZone: an advertiser whose timezone is no
// IANA zone stops the start, the error naming the file, the advertiser
// and the value.
func TestNewRefusesAnUnknownTimeZone(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.AdvertisersFile = write("advertisers.json",
		`{"advertisers":[{"id":"x.example","daily_budget":"10","currency":"EUR","timezone":"America/Los_Angles"}]}`)
	_, err := New(cfg, Options{})
	if err == nil {
		t.Fatal("New accepted an unknown time zone")
	}
	for _, want := range []string{"advertisers.json", `advertiser "x.example": timezone "America/Los_Angles"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
}

// A bad budget of the advertisers file and a bad site of the partners
// file are reported with a bad feed line, not once the feed is fixed.
func TestNewReportsAccountsWithFeeds(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Catalogs = []string{write("a.jsonl", "{not json\n")}
	cfg.PartnersFile = write("partners.json", `{"partners":[{"api_key":"k","sites":[{"id":"s"}]}]}`)
	cfg.AdvertisersFile = write("advertisers.json", `{"advertisers":[{"id":"x.example","daily_budget":"abc","currency":"EUR"}]}`)
	_, err := New(cfg, Options{})
	if err == nil {
		t.Fatal("New accepted bad files")
	}
	for _, want := range []string{"a.jsonl", `site "s": no domains`, `daily_budget "abc"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
	if _, err := os.Stat(cfg.DataDir); err == nil {
		t.Error("the store was opened")
	}
}

// A partners file with no partners and no demo partner leave nobody to
// serve.
func TestNewNeedsPartners(t *testing.T) {
	cfg := testConfig(t)
	cfg.Demo = false
	cfg.PartnersFile = filepath.Join(t.TempDir(), "partners.json")
	if err := os.WriteFile(cfg.PartnersFile, []byte(`{"partners":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "no partners") {
		t.Errorf("New = %v, want no partners", err)
	}
}

// TestNewWarnsOfTheDemoCatalogForPartners: partners of a -partners file
// and no -catalog are served the demo's ads, which the log says; with a
// catalog, or with -demo alone, it says nothing of it.
func TestNewWarnsOfTheDemoCatalogForPartners(t *testing.T) {
	const warning = "no -catalog: the partners of -partners are served the embedded demo catalog"
	dir := t.TempDir()
	write := writer(t, dir)
	partners := write("partners.json", `{"partners":[{"api_key":"k","sites":[{"id":"s","domains":["blog.example"]}]}]}`)
	for _, tc := range []struct {
		name     string
		partners string
		catalogs []string
		warns    bool
	}{
		{"partners without a catalog", partners, nil, true},
		{"partners with a catalog", partners, []string{"../../testdata/catalog/demo.jsonl"}, false},
		{"the demo alone", "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Demo = tc.partners == ""
			cfg.PartnersFile, cfg.Catalogs = tc.partners, tc.catalogs
			logs := &syncLog{}
			a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if got := strings.Contains(logs.String(), warning); got != tc.warns {
				t.Errorf("warned of the demo catalog: %v, want %v; the log:\n%s", got, tc.warns, logs.String())
			}
		})
	}
}
