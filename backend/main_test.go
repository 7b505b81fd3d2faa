package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), func(string) string { return "" }, io.Discard, pw)
		pw.Close()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		return "http://" + a, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("run returned before listening: %v", err)
	}
	return "", nil
}

func TestRunServesSearchAndRedirect(t *testing.T) {
	data := t.TempDir()
	base, stop := startRun(t, "-data", data, "-redirect-url", "https://r.example.com/",
		"-partners", filepath.Join("..", "testdata", "partners.example.json"))
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

func TestRunReportsEveryConfigProblem(t *testing.T) {
	err := run(context.Background(), []string{"-addr", "nohostport", "-trusted-proxies", "bogus", "-data", t.TempDir()},
		func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "addr") || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("run = %v, want both problems", err)
	}
}

func TestRunMissingCatalog(t *testing.T) {
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-catalog", "/nonexistent/feed.jsonl", "-data", t.TempDir()},
		func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "feed.jsonl") {
		t.Errorf("run = %v, want the missing file named", err)
	}
}
