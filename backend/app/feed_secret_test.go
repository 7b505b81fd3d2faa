package app

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
)

// TestFeedSecretsShowNowhere is an attack on what a feed URL's
// credentials reach: feeds that need a token in their query or a user
// and password are read, warn of an attribute, fail (a 500, a redirect to
// a dead address, one with no server at all) and are refused (came out
// empty), and no reload answer, /readyz body, /metrics page or log line
// carries the secret, while each names the feed by its host and path.
func TestFeedSecretsShowNowhere(t *testing.T) {
	const secret = "S3CR3T-7f1d"
	dead := deadAddr(t)
	var mode atomic.Value // "", "500", "empty", "redirect"
	mode.Store("")
	rows := "id\ttitle\tlink\tprice\tsalesprice\nA\tSamowar\thttps://shop.example/a\t49.00 EUR\t39.00 EUR\n"
	tokenFeed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != secret {
			http.Error(w, "no token", http.StatusForbidden)
			return
		}
		if mode.Load() == "500" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, rows)
	}))
	defer tokenFeed.Close()
	ads := feed(t, testcatalog.Generate(40, 3))
	authFeed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "u-"+secret || p != secret {
			http.Error(w, "who", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		switch mode.Load() {
		case "empty":
		case "redirect":
			http.Redirect(w, r, "http://"+dead+"/moved.jsonl?sig="+secret, http.StatusFound)
		default:
			w.Write(ads)
		}
	}))
	defer authFeed.Close()

	logs := &syncLog{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	cfg := testConfig(t)
	cfg.Catalogs = []string{tokenFeed.URL + "/items.tsv?token=" + secret + "#market=de-DE",
		strings.Replace(authFeed.URL, "http://", "http://u-"+secret+":"+secret+"@", 1) + "/feed.jsonl"}
	shownToken, shownAuth := tokenFeed.URL+"/items.tsv?token=…#market=de-DE", authFeed.URL+"/feed.jsonl"
	a, err := New(cfg, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if len(a.Ads) != 41 {
		t.Fatalf("%d ads, want both feeds' 41", len(a.Ads))
	}
	admin := httptest.NewServer(a.Admin)
	defer admin.Close()
	public := httptest.NewServer(a.Handler)
	defer public.Close()
	var seen []string // every body read
	read := func(method, url string) string {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		seen = append(seen, string(b))
		return string(b)
	}
	// ready is what /readyz says after the reload, which has no warnings.
	step := func(m, query, want, ready string) {
		t.Helper()
		mode.Store(m)
		if r := read(http.MethodPost, admin.URL+"/admin/reload"+query); !strings.Contains(r, want) {
			t.Errorf("reload (%q): %s, want %q in it", m, r, want)
		}
		if r := read(http.MethodGet, public.URL+"/readyz"); !strings.Contains(r, ready) {
			t.Errorf("/readyz after the reload (%q): %s, want %q in it", m, r, ready)
		}
	}
	step("", "", shownToken+":1: salesprice: not an attribute", `"result":"unchanged"`)
	step("500", "", shownToken+": answered 500", shownToken+": answered 500")
	step("empty", "", shownAuth+": the feed came out empty", shownAuth+": the feed came out empty")
	redirected := shownAuth + `: Get \"http://` + dead + `/moved.jsonl?sig=…\"`
	step("redirect", "", redirected, redirected)
	step("empty", "?force=true", `"result":"swapped"`, `"result":"swapped"`)
	read(http.MethodGet, admin.URL+"/metrics")

	// A feed with no server behind it fails the start.
	cfg.Catalogs = []string{"http://u:" + secret + "@" + dead + "/feed.jsonl?token=" + secret}
	if _, err := New(cfg, Options{Logger: log}); err == nil {
		t.Error("a start with a dead feed: no error")
	} else {
		seen = append(seen, err.Error())
		if !strings.Contains(err.Error(), "http://"+dead+"/feed.jsonl?token=…") {
			t.Errorf("a start with a dead feed: %v, want the feed named", err)
		}
	}
	if !strings.Contains(logs.String(), shownAuth) || !strings.Contains(logs.String(), strings.ReplaceAll(shownToken, "&", `\u0026`)) {
		t.Errorf("the log names neither feed:\n%s", logs)
	}
	for _, s := range append(seen, strings.Split(logs.String(), "\n")...) {
		if strings.Contains(s, secret) {
			t.Errorf("the secret shows: %s", s)
		}
	}
}

// deadAddr is a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
