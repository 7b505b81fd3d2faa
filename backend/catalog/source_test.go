package catalog

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseSource(t *testing.T) {
	s, err := ParseSource("https://shop.example/feed?x=1#advertiser=shop.example&market=de-DE,de-AT&market=fr-FR&bid=0.1&format=tsv")
	if err != nil {
		t.Fatal(err)
	}
	if s.Location != "https://shop.example/feed?x=1" || !s.IsURL() || s.Advertiser != "shop.example" || s.Bid != "0.1" ||
		s.Format != FormatMerchantTSV || strings.Join(s.Markets, " ") != "de-DE de-AT fr-FR" {
		t.Errorf("%+v", s)
	}
	if s, err := ParseSource("feeds/a.jsonl"); err != nil || s.IsURL() || s.Location != "feeds/a.jsonl" {
		t.Errorf("%+v %v", s, err)
	}
	for _, bad := range []string{"a.xml#colour=red", "a.xml#format=pdf", "a.xml#%zz"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestFormatOf(t *testing.T) {
	for _, c := range []struct {
		name, ctype string
		want        Format
	}{
		{"a.jsonl.gz", "", FormatJSONL}, {"a.CSV", "", FormatCSV}, {"a.rss", "", FormatMerchantXML},
		{"a.tsv.gz", "", FormatMerchantTSV}, {"products.TXT", "", FormatMerchantTSV}, {"/feed", "application/atom+xml; charset=utf-8", FormatMerchantXML},
		{"/feed", "text/tab-separated-values", FormatMerchantTSV}, {"/feed", "text/html", FormatUnknown},
	} {
		if got := FormatOf(c.name, c.ctype); got != c.want {
			t.Errorf("FormatOf(%q, %q) = %v, want %v", c.name, c.ctype, got, c.want)
		}
	}
}

// TestFetchFile: a file that has not changed is not parsed again, and one
// written in place while it is read is refused for that refresh.
func TestFetchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.xml")
	if err := os.WriteFile(path, []byte(merchantRSS), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(FetchOptions{})
	src, _ := ParseSource(path)
	res, err := f.Fetch(context.Background(), src, Options{})
	if err != nil || res.Unchanged || len(res.Ads) != 2 {
		t.Fatalf("first fetch: %+v %v", res, err)
	}
	again, err := f.Fetch(context.Background(), src, Options{})
	if err != nil || !again.Unchanged || &again.Ads[0] != &res.Ads[0] {
		t.Errorf("unchanged file: %+v %v", again, err)
	}

	// A writer rewrites the file in place while it is read.
	f.afterRead = func(p string) {
		if err := os.WriteFile(p, []byte(strings.Replace(merchantRSS, "39.90", "49.90", 1)+"<!-- more -->"), 0o600); err != nil {
			t.Error(err)
		}
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(path, future, future) // changed, so read again
	if _, err := f.Fetch(context.Background(), src, Options{}); err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Errorf("feed changed while read: %v", err)
	}
	f.afterRead = nil
	// The next refresh reads it whole.
	res, err = f.Fetch(context.Background(), src, Options{})
	if err != nil || res.Unchanged || res.Ads[0].PriceCents != 2990 {
		t.Errorf("after the change: %+v %v", res, err)
	}
}

// TestFetchURL: conditional GET with the feed's ETag and Last-Modified,
// and a gzip body read whatever it is called.
func TestFetchURL(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(merchantTSV))
	zw.Close()
	var conditional []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conditional = append(conditional, r.Header.Get("If-None-Match")+"|"+r.Header.Get("If-Modified-Since"))
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2026 15:04:05 GMT")
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(zipped.Bytes())
	}))
	defer srv.Close()
	f := NewFetcher(FetchOptions{})
	src, _ := ParseSource(srv.URL + "/export.tsv#market=de-DE")
	res, err := f.Fetch(context.Background(), src, Options{})
	if err != nil || len(res.Ads) != 1 || res.Unchanged {
		t.Fatalf("first fetch: %+v %v", res, err)
	}
	res, err = f.Fetch(context.Background(), src, Options{})
	if err != nil || !res.Unchanged || len(res.Ads) != 1 {
		t.Errorf("second fetch: %+v %v", res, err)
	}
	if len(conditional) != 2 || conditional[0] != "|" || conditional[1] != `"v1"|Mon, 02 Jan 2026 15:04:05 GMT` {
		t.Errorf("conditional headers sent: %q", conditional)
	}
	// A gzip bomb stops at the cap, once decompressed.
	var bomb bytes.Buffer
	zw = gzip.NewWriter(&bomb)
	zw.Write([]byte("id\ttitle\tlink\n"))
	zw.Write(bytes.Repeat([]byte("x"), 4<<20))
	zw.Close()
	path := filepath.Join(t.TempDir(), "bomb.tsv.gz")
	os.WriteFile(path, bomb.Bytes(), 0o600)
	small := NewFetcher(FetchOptions{MaxBytes: 1 << 20})
	src, _ = ParseSource(path)
	if _, err := small.Fetch(context.Background(), src, Options{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("gzip bomb: %v, want ErrTooLarge", err)
	}
}

func TestVersion(t *testing.T) {
	ads, err := Load(strings.NewReader(merchantRSS), "a.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := Version(ads)
	if len(v) != 16 || Version(ads) != v {
		t.Fatalf("version %q", v)
	}
	changed := append(ads[:0:0], ads...)
	changed[1].PriceCents++
	if Version(changed) == v {
		t.Error("a price change keeps the version")
	}
	if Version(ads[:1]) == v {
		t.Error("a removed ad keeps the version")
	}
}

// TestFetchURLCutShort: a feed whose server stops half way (a feed being
// rewritten as it is served) is an error, not a shorter catalog.
func TestFetchURLCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(merchantRSS)))
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write([]byte(merchantRSS[:len(merchantRSS)/2]))
	}))
	defer srv.Close()
	src, _ := ParseSource(srv.URL + "/feed")
	_, err := NewFetcher(FetchOptions{}).Fetch(context.Background(), src, Options{})
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("feed cut short: %v, want an unexpected EOF", err)
	}
}
