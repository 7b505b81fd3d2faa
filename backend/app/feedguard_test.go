package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
)

// TestRefreshRefusesAFeedThatLostItsAds: of several feeds, one merchant's
// export that comes out empty, or lost more than -catalog-max-drop of its
// ads, is refused with its name, though the catalog as a whole lost less;
// the catalog served stays, and a forced reload serves it.
func TestRefreshRefusesAFeedThatLostItsAds(t *testing.T) {
	ads := testcatalog.Generate(246, 5)
	big, small, tiny := ads[:200], ads[200:240], ads[240:]
	dir := t.TempDir()
	bigPath, smallPath, tinyPath := filepath.Join(dir, "big.jsonl"), filepath.Join(dir, "small.jsonl"), filepath.Join(dir, "tiny.jsonl")
	writeFile(t, bigPath, feed(t, big))
	writeFile(t, smallPath, feed(t, small))
	writeFile(t, tinyPath, feed(t, tiny))
	cfg := testConfig(t)
	cfg.Catalogs = []string{bigPath, smallPath, tinyPath}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := a.Catalog().Version
	for _, c := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty", nil, smallPath + ": the feed came out empty, and had 40 ads"},
		{"lost 90%", feed(t, small[:4]), smallPath + ": the feed lost 36 of its 40 ads, more than 25%"},
	} {
		writeFile(t, smallPath, c.content)
		r := a.Reload(context.Background(), false)
		if r.Result != resultRefused || r.Version != v1 || !strings.Contains(r.Error, c.want) {
			t.Errorf("%s: %+v, want refused with %q", c.name, r, c.want)
		}
		if s := readyz(t, a); s.Ads != len(ads) || s.LastRefresh == nil || !strings.Contains(s.LastRefresh.Error, c.want) {
			t.Errorf("%s: /readyz %+v", c.name, s)
		}
	}
	// A feed that lost a few of its ads, and the other growing, pass.
	writeFile(t, smallPath, feed(t, small[:35]))
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped || r.Ads != 241 {
		t.Errorf("a feed losing 5 of 40 ads: %+v, want swapped", r)
	}
	// A feed of a few items losing half of them is a merchant's change.
	writeFile(t, tinyPath, feed(t, tiny[:3]))
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped || r.Ads != 238 {
		t.Errorf("a feed losing 3 of 6 ads: %+v, want swapped", r)
	}
	writeFile(t, smallPath, nil)
	rec := httptest.NewRecorder()
	a.Admin.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/admin/reload?force=true", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result":"swapped"`) || a.Catalog().Indexes.All().Len() != 203 {
		t.Errorf("forced reload of the empty feed: %d %s", rec.Code, rec.Body)
	}
}

// TestRefreshFailsACutTransfer: a JSON-lines feed whose transfer breaks
// off at the end of a line, so that every line read is whole, fails the
// refresh rather than serving the part that came, whether its length was
// announced, chunked or gzip-compressed; the catalog served stays.
func TestRefreshFailsACutTransfer(t *testing.T) {
	ads := testcatalog.Generate(100, 6)
	whole := feed(t, ads)
	var mode atomic.Value // "" whole; "length", "chunked", "gzip": cut
	mode.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := whole
		m := mode.Load().(string)
		cut := bytes.LastIndexByte(whole[:len(whole)*9/10], '\n') + 1 // 90% of it, whole lines
		if m == "gzip" {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(whole)
			zw.Close()
			body = z.Bytes()
			w.Header().Set("Content-Encoding", "gzip")
			cut = len(body) * 9 / 10
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		if m == "" {
			w.Write(body)
			return
		}
		if m != "chunked" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body[:cut])
		w.(http.Flusher).Flush()
		// The connection breaks off: no more bytes, no last chunk.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	cfg := testConfig(t)
	cfg.Catalogs = []string{srv.URL + "/feed.jsonl"}
	cfg.CatalogMaxDrop = 1 // the cut is to be caught on its own
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := a.Catalog().Version
	for _, m := range []string{"length", "chunked", "gzip"} {
		mode.Store(m)
		r := a.Reload(context.Background(), true)
		if r.Result != resultFailed || !strings.Contains(r.Error, "unexpected EOF") || r.Version != v1 || r.Ads != len(ads) {
			t.Errorf("a transfer cut off (%s): %+v, want failed and the %d ads served", m, r, len(ads))
		}
	}
}
