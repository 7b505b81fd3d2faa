package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-json"
	"github.com/klauspost/compress/zstd"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/internal/testcatalog"
)

// getZstd is a GET of path by a browser that takes zstd: the status, the
// ETag and the body decoded.
func getZstd(t *testing.T, h http.Handler, path string) (int, string, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept-Encoding", "gzip, zstd")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusOK {
		if res.Header.Get("Content-Encoding") != "zstd" {
			t.Fatalf("%s: Content-Encoding %q", path, res.Header.Get("Content-Encoding"))
		}
		d, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if body, err = d.DecodeAll(body, nil); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return res.StatusCode, res.Header.Get("ETag"), body
}

// TestRefreshRecompressesShards: a refresh serves its new shards and
// fragments at once at fast levels, under the addresses a cold start on
// the same feed gives them (the SHA-256 of the uncompressed shard), and
// then at the best levels under the same addresses, the manifest saying
// each time what is served.
func TestRefreshRecompressesShards(t *testing.T) {
	ads := testcatalog.Generate(2000, 4)
	path := filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, path, feed(t, ads))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	const split = 32 << 10 // fragments, as a large catalog has
	// A small module: compressing the real one is no part of this test.
	module := []byte("\x00asm module")
	a, err := New(cfg, Options{SplitAbove: split, Matcher: module})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Catalog().Shards.Pick("", "").Fast() {
		t.Error("a cold start serves fast-compressed shards")
	}
	// The recompression waits until the test has seen the fast shards.
	release := make(chan struct{})
	a.live.beforeRecompress = func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	changed := ads[1:]
	writeFile(t, path, feed(t, changed))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("reload: %+v", r)
	}
	coldCfg := testConfig(t) // a state file of its own
	coldCfg.Catalogs = cfg.Catalogs
	cold, err := New(coldCfg, Options{SplitAbove: split, Matcher: module})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()

	set := a.Catalog().Shards
	manifest := func() (sha string, zstdBytes, frags int) {
		// The market shards' manifest (a site may be given a shard of its
		// own, backend/siteshards, which is not this test's).
		body := set.Manifest("", "")
		var m struct {
			Shard struct {
				SHA256    string
				Bytes     map[string]int
				Fragments int
			}
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("manifest %s: %v", body, err)
		}
		return m.Shard.SHA256, m.Shard.Bytes["zstd"], m.Shard.Fragments
	}
	shard := set.Pick("", "")
	sha, fastSize, frags := manifest()
	if sha != shard.SHA256 || sha != cold.Catalog().Shards.Pick("", "").SHA256 || frags == 0 || frags != len(set.Fragments(shard)) {
		t.Fatalf("manifest names %s with %d fragments; the shard is %s, a cold start's %s", sha, frags, shard.SHA256, cold.Catalog().Shards.Pick("", "").SHA256)
	}
	// What a page fetches now, fast.
	check := func(wantFast bool) {
		t.Helper()
		paths := []string{shards.ShardPath + sha}
		for k := range frags {
			paths = append(paths, shards.ShardPath+sha+"/"+strconv.Itoa(k))
		}
		blobs := append([]*shards.Blob{shard}, set.Fragments(shard)...)
		coldBlobs := append([]*shards.Blob{cold.Catalog().Shards.Pick("", "")}, cold.Catalog().Shards.Fragments(cold.Catalog().Shards.Pick("", ""))...)
		for i, p := range paths {
			status, etag, body := getZstd(t, a.Handler, p)
			if status != http.StatusOK || !bytes.Equal(body, coldBlobs[i].Bytes(shards.Identity)) {
				t.Fatalf("%s: %d, not a cold start's bytes", p, status)
			}
			if fast := strings.HasSuffix(etag, `.fast"`); fast != wantFast || blobs[i].Fast() != wantFast {
				t.Errorf("%s: ETag %s, Fast() %v; want fast %v", p, etag, blobs[i].Fast(), wantFast)
			}
		}
	}
	check(true)
	close(release)
	a.live.waitRecompressed()
	check(false)
	if _, size, _ := manifest(); size != shard.Size(shards.Zstd) || size >= fastSize {
		t.Errorf("manifest says %d zstd bytes, the shard has %d; %d when fast", size, shard.Size(shards.Zstd), fastSize)
	}
	if size := cold.Catalog().Shards.Pick("", "").Size(shards.Zstd); size != shard.Size(shards.Zstd) {
		t.Errorf("recompressed to %d bytes, a cold start's %d", shard.Size(shards.Zstd), size)
	}

	// Close stops a recompression that has not run and waits for it: the
	// shards stay fast, and served.
	release = make(chan struct{})
	writeFile(t, path, feed(t, ads[2:]))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("reload: %+v", r)
	}
	a.Close()
	last := a.Catalog().Shards.Pick("", "")
	if status, etag, _ := getZstd(t, a.Handler, shards.ShardPath+last.SHA256); status != http.StatusOK || !last.Fast() || !strings.HasSuffix(etag, `.fast"`) {
		t.Errorf("the last shard after Close: %d, ETag %s, Fast() %v; want it served, fast", status, etag, last.Fast())
	}
}
