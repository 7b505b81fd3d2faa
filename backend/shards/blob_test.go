package shards

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// compress is b in zstd at a level, as another encoder might give it.
func compress(t testing.TB, b []byte, opts ...zstd.EOption) []byte {
	t.Helper()
	w, err := zstd.NewWriter(nil, append([]zstd.EOption{zstd.WithEncoderConcurrency(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

// wasmLike is a few KB that compress well but not to nothing.
func wasmLike() []byte {
	var b []byte
	for i := range 3000 {
		b = append(b, "\x00asm"[i%4], byte(i), byte(i*7), byte(i>>3))
	}
	return b
}

// setZstd makes z the blob's zstd encoding, whatever it holds.
func setZstd(b *Blob, z []byte) {
	e := *b.cur.Load()
	e.enc[Zstd] = z
	b.cur.Store(&e)
}

// rawBlob is a blob of data whose zstd encoding is data itself.
func rawBlob(data []byte) *Blob {
	b := &Blob{}
	e := &encodings{}
	e.enc[Identity], e.enc[Zstd] = data, data
	b.cur.Store(e)
	return b
}

// serveZstd is the blob's answer to a browser that takes zstd.
func serveZstd(b *Blob, ifNoneMatch string) (status int, etag string, body []byte) {
	r := httptest.NewRequest("GET", MatcherPath, nil)
	r.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	if ifNoneMatch != "" {
		r.Header.Set("If-None-Match", ifNoneMatch)
	}
	w := httptest.NewRecorder()
	b.Serve(w, r, Immutable)
	res := w.Result()
	body, _ = io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("ETag"), body
}

func TestUseZstdServesASmallerEncoding(t *testing.T) {
	data := wasmLike()
	b, err := NewBlob(data, "application/wasm")
	if err != nil {
		t.Fatal(err)
	}
	best := b.Bytes(Zstd)
	// Make our own encoding the worse one, as klauspost's is beside the CLI's.
	setZstd(b, compress(t, data, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithWindowSize(1<<10)))
	if b.Size(Zstd) <= len(best) {
		t.Fatalf("fastest %d bytes, best %d: want it worse", b.Size(Zstd), len(best))
	}
	_, oldETag, _ := serveZstd(b, "")
	used, err := b.UseZstd(best)
	if err != nil || !used {
		t.Fatalf("UseZstd(smaller) = %v, %v; want it used", used, err)
	}
	status, etag, body := serveZstd(b, "")
	if status != 200 || !bytes.Equal(body, best) || b.Size(Zstd) != len(best) {
		t.Errorf("served %d, %d bytes; want the given %d", status, len(body), len(best))
	}
	if etag == oldETag || !strings.HasPrefix(etag, `"`+b.SHA256+".zstd.") || etag == b.cur.Load().etag[Gzip] || etag == b.cur.Load().etag[Identity] {
		t.Errorf("ETag %s (was %s): want one of its own for the new bytes", etag, oldETag)
	}
	if status, _, _ := serveZstd(b, etag); status != 304 {
		t.Errorf("If-None-Match: the new ETag gave %d, want 304", status)
	}
	if status, _, _ := serveZstd(b, oldETag); status != 200 {
		t.Errorf("If-None-Match: the old encoding's ETag gave %d, want 200", status)
	}
}

func TestUseZstdKeepsASmallerOwnEncoding(t *testing.T) {
	data := wasmLike()
	b, err := NewBlob(data, "application/wasm")
	if err != nil {
		t.Fatal(err)
	}
	own, ownETag := b.Bytes(Zstd), b.cur.Load().etag[Zstd]
	worse := compress(t, data, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<10))
	if used, err := b.UseZstd(worse); used || err != nil {
		t.Errorf("UseZstd(larger) = %v, %v; want it valid and not used", used, err)
	}
	if !bytes.Equal(b.Bytes(Zstd), own) || b.cur.Load().etag[Zstd] != ownETag {
		t.Error("the blob changed")
	}
}

// TestUseZstdRejectsOtherBytes: a .zst left from another build or damaged
// is refused and the blob keeps its own encoding.
func TestUseZstdRejectsOtherBytes(t *testing.T) {
	data := wasmLike()
	good := compress(t, data, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	changed := bytes.Clone(data)
	changed[len(changed)/2]++
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x10
	noCRC := compress(t, data, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderCRC(false))
	flippedNoCRC := bytes.Clone(noCRC)
	flippedNoCRC[len(flippedNoCRC)-3] ^= 0x01
	for name, z := range map[string][]byte{
		"other bytes":           compress(t, changed),
		"longer":                compress(t, append(bytes.Clone(data), 'x')),
		"shorter":               compress(t, data[:len(data)-1]),
		"longer without a size": compress(t, append(bytes.Clone(data), make([]byte, 100<<10)...), zstd.WithSingleSegment(false)),
		"two frames":            append(bytes.Clone(good), good...),
		"a bit flipped":         flipped,
		"a bit flipped, no CRC": flippedNoCRC,
		"truncated":             good[:len(good)/2],
		"empty":                 {},
		"not zstd":              []byte("\x00asm not compressed"),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := NewBlob(data, "application/wasm")
			if err != nil {
				t.Fatal(err)
			}
			setZstd(b, data) // ours as large as can be: any valid z would win
			used, err := b.UseZstd(z)
			if err == nil || used {
				t.Fatalf("UseZstd = %v, %v; want an error", used, err)
			}
			if status, _, body := serveZstd(b, ""); status != 200 || !bytes.Equal(body, data) {
				t.Error("the blob changed")
			}
		})
	}
}

// TestUseZstdRejectsAWindowBrowsersRefuse: browsers decode zstd with at
// most an 8 MB window (RFC 9659).
func TestUseZstdRejectsAWindowBrowsersRefuse(t *testing.T) {
	data := bytes.Repeat([]byte("matcher."), (maxZstdWindow+1<<20)/8)
	for name, z := range map[string][]byte{
		// One segment: a browser takes the content's size as the window.
		"single segment": compress(t, data, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithSingleSegment(true)),
		"16 MB window":   compress(t, data, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithSingleSegment(false), zstd.WithWindowSize(16<<20)),
	} {
		b := rawBlob(data)
		if used, err := b.UseZstd(z); err == nil || used {
			t.Errorf("%s: UseZstd = %v, %v; want an error", name, used, err)
		}
	}
	// An 8 MB window is fine.
	z := compress(t, data, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithSingleSegment(false), zstd.WithWindowSize(maxZstdWindow))
	b := rawBlob(data)
	if used, err := b.UseZstd(z); err != nil || !used {
		t.Errorf("8 MB window: UseZstd = %v, %v; want it used", used, err)
	}
}

// TestBuildServesTheCLIsMatcherZstd: Build offers Options.MatcherZstd to
// the matcher's blob, says what it made of it, and the manifest gives the
// sizes it serves. With the zstd CLI, its -19 encoding is served when it
// is the smaller, as on a real matcher.wasm.
func TestBuildServesTheCLIsMatcherZstd(t *testing.T) {
	src, _ := demoSet(t)
	matcher := wasmLike()
	check := func(t *testing.T, z []byte, wantServed, wantErr bool) {
		t.Helper()
		set, err := Build(src, Options{Matcher: matcher, MatcherZstd: z})
		if err != nil {
			t.Fatal(err)
		}
		c, m := set.MatcherZstd(), set.Matcher()
		if c.Served != wantServed || (c.Err != nil) != wantErr || c.Given != len(z) {
			t.Fatalf("MatcherZstd() = %+v; want served %v, an error %v", c, wantServed, wantErr)
		}
		if c.Served && !bytes.Equal(m.Bytes(Zstd), z) {
			t.Error("served is not the given encoding")
		}
		if !c.Served && (m.Size(Zstd) != c.Own || bytes.Equal(m.Bytes(Zstd), z)) {
			t.Error("our own encoding is not served")
		}
		var manifest struct {
			Matcher struct{ Bytes map[string]int }
		}
		if err := json.Unmarshal(set.Manifest("de", "de"), &manifest); err != nil || manifest.Matcher.Bytes["zstd"] != m.Size(Zstd) {
			t.Errorf("manifest %s: want zstd %d", set.Manifest("de", "de"), m.Size(Zstd))
		}
	}
	t.Run("none", func(t *testing.T) {
		set, err := Build(src, Options{Matcher: matcher})
		if err != nil {
			t.Fatal(err)
		}
		if c := set.MatcherZstd(); c != (ZstdChoice{}) {
			t.Errorf("MatcherZstd() = %+v, want zero", c)
		}
	})
	t.Run("corrupt", func(t *testing.T) { check(t, []byte("\x28\xb5\x2f\xfd garbage"), false, true) })
	t.Run("stale", func(t *testing.T) { check(t, compress(t, matcher[1:]), false, true) })
	t.Run("larger", func(t *testing.T) {
		check(t, compress(t, matcher, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<10)), false, false)
	})
	t.Run("zstd -19", func(t *testing.T) {
		bin, err := exec.LookPath("zstd")
		if err != nil {
			t.Skip("no zstd CLI")
		}
		path := filepath.Join(t.TempDir(), "m.wasm")
		if err := os.WriteFile(path, matcher, 0o644); err != nil {
			t.Fatal(err)
		}
		z, err := exec.Command(bin, "-19", "-q", "-c", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		own, err := NewBlob(matcher, "application/wasm")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("zstd -19 %d bytes, klauspost %d", len(z), own.Size(Zstd))
		check(t, z, len(z) < own.Size(Zstd), false)
	})
}

// TestBuildKeepsTheModule: a second Build of the same module, given the
// same zstd encoding, serves the blob the first compressed and says the
// same of the given encoding; given another encoding, it decides anew.
func TestBuildKeepsTheModule(t *testing.T) {
	src, _ := demoSet(t)
	matcher := wasmLike()
	z := compress(t, matcher, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<10))
	build := func(z []byte) *Set {
		t.Helper()
		set, err := Build(src, Options{Matcher: matcher, MatcherZstd: z})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	first, again := build(z), build(z)
	if again.Matcher() != first.Matcher() || again.MatcherZstd() != first.MatcherZstd() {
		t.Errorf("the same module built again: blob %p choice %+v, want the first's %p %+v",
			again.Matcher(), again.MatcherZstd(), first.Matcher(), first.MatcherZstd())
	}
	if c := first.MatcherZstd(); c.Given != len(z) || c.Served || c.Err != nil {
		t.Errorf("the larger encoding given: %+v, want it refused", c)
	}
	corrupt := build([]byte("\x28\xb5\x2f\xfd garbage"))
	if c := corrupt.MatcherZstd(); c.Err == nil || c.Served {
		t.Errorf("a corrupt encoding given to the same module: %+v, want an error", c)
	}
	none := build(nil)
	if none.MatcherZstd() != (ZstdChoice{}) || !bytes.Equal(none.Matcher().Bytes(Identity), matcher) {
		t.Errorf("the same module with no encoding given: %+v", none.MatcherZstd())
	}
	ForgetModule()
	if fresh := build(nil); fresh.Matcher() == none.Matcher() || !bytes.Equal(fresh.Matcher().Bytes(Zstd), none.Matcher().Bytes(Zstd)) {
		t.Error("after ForgetModule: the kept blob served again, or other bytes compressed")
	}
}

// TestRestore: a blob restored from another's encodings serves its bytes
// under its ETags; encodings that do not decode to the blob are refused.
func TestRestore(t *testing.T) {
	data := bytes.Repeat([]byte("restored shard bytes "), 300)
	b, err := NewBlob(data, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore(b.Bytes(Identity), b.Bytes(Zstd), b.Bytes(Gzip), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	if r.SHA256 != b.SHA256 {
		t.Fatalf("restored as %s, not %s", r.SHA256, b.SHA256)
	}
	for _, enc := range []string{"zstd", "gzip", "identity"} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.Header.Set("Accept-Encoding", enc)
		b.Serve(want, req, Immutable)
		r.Serve(got, req, Immutable)
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || !maps.EqualFunc(got.Header(), want.Header(), slices.Equal) {
			t.Errorf("%s: restored serves %d bytes %v; the blob %d bytes %v", enc, got.Body.Len(), got.Header(), want.Body.Len(), want.Header())
		}
	}
	other := bytes.Repeat([]byte("other bytes "), 300)
	o, err := NewBlob(other, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	for name, encs := range map[string][3][]byte{
		"zstd of other bytes": {data, o.Bytes(Zstd), b.Bytes(Gzip)},
		"gzip of other bytes": {data, b.Bytes(Zstd), o.Bytes(Gzip)},
		"gzip cut short":      {data, b.Bytes(Zstd), b.Bytes(Gzip)[:len(b.Bytes(Gzip))/2]},
		"zstd not zstd":       {data, []byte("not zstd"), b.Bytes(Gzip)},
		"identity changed":    {append(slices.Clone(data[:len(data)-1]), 'x'), b.Bytes(Zstd), b.Bytes(Gzip)},
	} {
		if _, err := Restore(encs[0], encs[1], encs[2], "application/octet-stream"); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}
