package shards

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// decode is a response body in its Content-Encoding, decoded.
func decode(t *testing.T, enc string, body []byte) []byte {
	t.Helper()
	switch enc {
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		out, err := d.DecodeAll(body, nil)
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		return out
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		return out
	}
	return body
}

// TestFastBlobRecompress: a fast blob serves its bytes under ETags of
// their own, and once recompressed serves exactly NewBlob's bytes and
// ETags, under the same name.
func TestFastBlobRecompress(t *testing.T) {
	data := bytes.Repeat(wasmLike(), 20)
	fast, err := NewFastBlob(data, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	best, err := NewBlob(data, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	if !fast.Fast() || best.Fast() || fast.SHA256 != best.SHA256 {
		t.Fatalf("Fast() = %v, %v; names %s, %s", fast.Fast(), best.Fast(), fast.SHA256, best.SHA256)
	}
	fastETags := map[Encoding]string{}
	for _, e := range []Encoding{Zstd, Gzip} {
		if got := decode(t, e.String(), fast.Bytes(e)); !bytes.Equal(got, data) {
			t.Fatalf("fast %s does not decode to the blob", e)
		}
		fastETags[e] = fast.cur.Load().etag[e]
		if fastETags[e] == best.cur.Load().etag[e] {
			t.Errorf("%s: the fast and the best bytes share the ETag %s", e, fastETags[e])
		}
	}
	if fast.cur.Load().etag[Identity] != best.cur.Load().etag[Identity] {
		t.Error("identity: ETags differ for the same bytes")
	}
	if did, err := fast.Recompress(); !did || err != nil {
		t.Fatalf("Recompress() = %v, %v", did, err)
	}
	if did, err := fast.Recompress(); did || err != nil {
		t.Errorf("Recompress() again = %v, %v; want nothing done", did, err)
	}
	if did, err := best.Recompress(); did || err != nil {
		t.Errorf("NewBlob's Recompress() = %v, %v; want nothing done", did, err)
	}
	if fast.Fast() || fast.SHA256 != best.SHA256 {
		t.Error("still fast, or renamed")
	}
	for e := range numEncodings {
		if !bytes.Equal(fast.Bytes(e), best.Bytes(e)) || fast.cur.Load().etag[e] != best.cur.Load().etag[e] {
			t.Errorf("%s: recompressed is not NewBlob's", e)
		}
	}
	// A client holding the fast bytes gets the new ones, not a 304.
	if status, etag, body := serveZstd(fast, fastETags[Zstd]); status != 200 || etag == fastETags[Zstd] || !bytes.Equal(body, best.Bytes(Zstd)) {
		t.Errorf("If-None-Match of the fast bytes: %d %s", status, etag)
	}
}

// TestRecompressWhileServing: every answer given while a blob is
// recompressed is one encoding whole, under that encoding's own ETag.
func TestRecompressWhileServing(t *testing.T) {
	data := bytes.Repeat(wasmLike(), 50)
	b, err := NewFastBlob(data, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	best, err := NewBlob(data, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	// Each ETag served, with the bytes it names.
	want := map[string][]byte{}
	for _, s := range []*Blob{b, best} {
		e := s.cur.Load()
		for enc := range numEncodings {
			want[e.etag[enc]] = e.enc[enc]
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, ae := range []string{"zstd", "gzip"} {
					r := httptest.NewRequest("GET", ShardPath+b.SHA256, nil)
					r.Header.Set("Accept-Encoding", ae)
					w := httptest.NewRecorder()
					b.Serve(w, r, Immutable)
					res := w.Result()
					body, _ := io.ReadAll(res.Body)
					etag := res.Header.Get("ETag")
					if !bytes.Equal(body, want[etag]) || res.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
						t.Errorf("%s: ETag %s with bytes it does not name", ae, etag)
						return
					}
					if got := decode(t, res.Header.Get("Content-Encoding"), body); !bytes.Equal(got, data) {
						t.Errorf("%s: the body does not decode to the blob", ae)
						return
					}
				}
			}
		})
	}
	if did, err := b.Recompress(); !did || err != nil {
		t.Errorf("Recompress() = %v, %v", did, err)
	}
	close(stop)
	wg.Wait()
	if _, etag, _ := serveZstd(b, ""); etag != best.cur.Load().etag[Zstd] {
		t.Errorf("ETag %s after Recompress, want the best bytes' %s", etag, best.cur.Load().etag[Zstd])
	}
}

// TestBuildFastThenRecompress: a Set built fast serves every shard and
// fragment at fast levels with a manifest that says their sizes, and
// Recompress brings each to the best levels, the manifest following; cut
// short, it leaves the rest fast and says why.
func TestBuildFastThenRecompress(t *testing.T) {
	src := buildSource(t, testcatalog.Generate(3000, 9))
	const split = 16 << 10 // fragments, to recompress them too
	fast, err := Build(src, Options{Matcher: []byte("\x00asm fake module"), RedirectURL: "http://r.test", SplitAbove: split, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	best, err := Build(src, Options{Matcher: []byte("\x00asm fake module"), RedirectURL: "http://r.test", SplitAbove: split})
	if err != nil {
		t.Fatal(err)
	}
	blobs := func(s *Set) []*Blob {
		out := []*Blob{s.Pick("", "")}
		for _, m := range s.allIndex.ShardMarkets() {
			out = append(out, s.Markets()[m])
		}
		for _, sh := range slices.Clone(out) {
			out = append(out, s.Fragments(sh)...)
		}
		return out
	}
	fb, bb := blobs(fast), blobs(best)
	if len(fb) != len(bb) || len(fast.Fragments(fast.Pick("", ""))) == 0 {
		t.Fatalf("%d blobs fast, %d best; want fragments", len(fb), len(bb))
	}
	shardSize := func(s *Set) int {
		var m struct {
			Shard struct{ Bytes map[string]int }
		}
		if err := json.Unmarshal(s.Manifest("de", "de"), &m); err != nil {
			t.Fatal(err)
		}
		return m.Shard.Bytes["zstd"]
	}
	for i, b := range fb {
		if !b.Fast() || b.SHA256 != bb[i].SHA256 {
			t.Fatalf("blob %d: fast %v, named %s; want fast, named %s", i, b.Fast(), b.SHA256, bb[i].SHA256)
		}
		// Shards are compressed before they are served, fragments when
		// first asked for; at the best levels, everything at once.
		e, shard := b.cur.Load(), i <= len(fast.Markets())
		if made := e.enc[Zstd] != nil && e.enc[Gzip] != nil; made != shard {
			t.Fatalf("blob %d (a shard: %v): compressed before it was asked for: %v", i, shard, made)
		}
		if e := bb[i].cur.Load(); e.enc[Zstd] == nil || e.enc[Gzip] == nil {
			t.Fatalf("blob %d of the best levels is not compressed", i)
		}
	}
	if fast.Matcher().Fast() {
		t.Error("the module was compressed fast")
	}
	if got, want := shardSize(fast), fast.Pick("de", "de").Size(Zstd); got != want || got <= shardSize(best) {
		t.Errorf("manifest says %d zstd bytes; the fast shard has %d, the best %d", got, want, shardSize(best))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := fast.Recompress(ctx, 2); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Recompress(cancelled) = %d, %v", n, err)
	}
	if !fb[0].Fast() {
		t.Error("a cancelled Recompress changed a blob")
	}
	n, err := fast.Recompress(context.Background(), 2)
	if n != len(fb) || err != nil {
		t.Fatalf("Recompress() = %d, %v; want %d", n, err, len(fb))
	}
	for i, b := range fb {
		if b.Fast() || !bytes.Equal(b.Bytes(Zstd), bb[i].Bytes(Zstd)) || !bytes.Equal(b.Bytes(Gzip), bb[i].Bytes(Gzip)) {
			t.Fatalf("blob %d: not the best levels' bytes", i)
		}
	}
	if got := shardSize(fast); got != shardSize(best) {
		t.Errorf("manifest says %d zstd bytes after Recompress, want %d", got, shardSize(best))
	}
	if n, err := fast.Recompress(context.Background(), 2); n != 0 || err != nil {
		t.Errorf("Recompress() again = %d, %v; want nothing to do", n, err)
	}
}

// TestBuildKeepsShardsOfKeptIndexes: a market whose index market.Rebuild
// kept keeps its shard and fragments, which are still that index's
// encoding; a changed market gets its own.
func TestBuildKeepsShardsOfKeptIndexes(t *testing.T) {
	ads := testcatalog.Generate(3000, 9)
	const split = 16 << 10
	prevSrc := buildSource(t, ads)
	before, err := Build(prevSrc, Options{RedirectURL: "http://r.test", SplitAbove: split})
	if err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(ads[1:])
	src, err := market.Rebuild(changed, prevSrc)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Build(src, Options{RedirectURL: "http://r.test", SplitAbove: split, Previous: before, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, m := range src.All().ShardMarkets() {
		ix := src.For(m.Country, m.Lang)
		b := after.Markets()[m]
		shard, frags := pageShard(ix, split)
		if !bytes.Equal(b.Bytes(Identity), shard) || len(after.Fragments(b)) != len(frags) {
			t.Fatalf("%s: the shard is not its index's", m)
		}
		for k, f := range after.Fragments(b) {
			if !bytes.Equal(f.Bytes(Identity), frags[k]) {
				t.Fatalf("%s: fragment %d is not its index's", m, k)
			}
		}
		if ix == prevSrc.For(m.Country, m.Lang) {
			kept++
			if b != before.Markets()[m] || b.Fast() {
				t.Errorf("%s: a kept index's shard was made again", m)
			}
		} else if b == before.Markets()[m] || !b.Fast() {
			t.Errorf("%s: a changed index kept its shard, or it was not made fast", m)
		}
	}
	if kept == 0 {
		t.Error("no market kept its index")
	}
}

// TestFastBlobCompressedOnDemand: a fast fragment is made without zstd
// and gzip and compresses each once, when first asked for, however many
// requests ask at once and while it is recompressed; each answer decodes
// to the blob.
func TestFastBlobCompressedOnDemand(t *testing.T) {
	data := bytes.Repeat(wasmLike(), 30)
	fast, err := newBlob(data, sha256.Sum256(data), "application/octet-stream", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if e := fast.cur.Load(); e.enc[Zstd] != nil || e.enc[Gzip] != nil || !fast.Fast() {
		t.Fatal("a fast fragment was compressed before it was asked for")
	}
	var wg sync.WaitGroup
	bodies := make([][]byte, 16)
	encs := make([]string, len(bodies))
	for i := range bodies {
		wg.Go(func() {
			if i == len(bodies)-1 {
				if _, err := fast.Recompress(); err != nil {
					t.Error(err)
				}
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Accept-Encoding", [...]string{"zstd", "gzip"}[i%2])
			fast.Serve(rec, req, "no-cache")
			bodies[i], encs[i] = rec.Body.Bytes(), rec.Header().Get("Content-Encoding")
		})
	}
	wg.Wait()
	for i, b := range bodies {
		want := [...]string{"zstd", "gzip"}[i%2]
		if encs[i] != want || !bytes.Equal(decode(t, want, b), data) {
			t.Fatalf("request %d: %s, not the blob in %s", i, encs[i], want)
		}
	}
	for _, e := range []Encoding{Zstd, Gzip} {
		if n := fast.Size(e); n == 0 || n >= len(data) {
			t.Errorf("%s of %d bytes for %d", e, n, len(data))
		}
	}
	// Asked for again, the bytes are the ones served before, not made
	// anew.
	again, err := newBlob(data, sha256.Sum256(data), "application/octet-stream", true, true)
	if err != nil {
		t.Fatal(err)
	}
	z := again.Bytes(Zstd)
	if !bytes.Equal(decode(t, "zstd", z), data) || &again.Bytes(Zstd)[0] != &z[0] {
		t.Error("a fragment's zstd was made twice")
	}
}
