package shards

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Encoding is a Content-Encoding a Blob is kept in.
type Encoding uint8

// The encodings, best first: browsers decode zstd (Chrome 123+, Firefox
// 126+) and gzip natively, so the page's module carries no decoder.
const (
	Zstd Encoding = iota
	Gzip
	Identity
	numEncodings
)

var encodingNames = [numEncodings]string{"zstd", "gzip", "identity"}

// String returns the encoding's Content-Encoding token.
func (e Encoding) String() string { return encodingNames[e] }

// Blob is one immutable file, compressed once with every encoding and
// then served as is. A blob made at fast levels (NewFastBlob) serves at
// once and takes the best levels' smaller bytes when Recompress makes
// them; its name, the SHA-256 of the uncompressed bytes, stays.
type Blob struct {
	// SHA256 is the hex SHA-256 of the uncompressed bytes: the blob's name.
	SHA256      string
	contentType string
	// cur is what Serve, Size and Bytes read: a request sees one set of
	// encodings, with their ETags, from start to end.
	cur atomic.Pointer[encodings]
	// mu makes one Recompress at a time, so two cannot both do the work.
	mu sync.Mutex
}

// encodings are a blob's bytes in each encoding, each with its own strong
// ETag.
type encodings struct {
	enc  [numEncodings][]byte
	etag [numEncodings]string
	// fast is set while zstd and gzip are at fast levels.
	fast bool
}

// The encoders every Blob shares: a best-compression zstd encoder costs
// megabytes to set up, and a large catalog's shards come in hundreds of
// fragments (with an encoder per blob, BenchmarkShardBytes's three
// catalogs took 18 s to build; shared, 6 s). EncodeAll may run on many
// goroutines at once. The fast ones serve a refreshed catalog's new
// shards until Recompress has made the best ones (BenchmarkRefresh).
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	})
	zstdFastEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(fastZstdLevel), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	})
	gzipWriters     = gzipPool(gzip.BestCompression)
	gzipFastWriters = gzipPool(fastGzipLevel)
)

// The fast levels: what a page downloads grows by a few percent over the
// best levels', for a fraction of their time (BenchmarkRefresh).
const (
	fastZstdLevel = zstd.SpeedDefault
	fastGzipLevel = gzip.BestSpeed
)

func gzipPool(level int) *sync.Pool {
	return &sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, level) // a valid level: no error
		return w
	}}
}

// NewBlob compresses b with zstd (best compression) and gzip (level 9).
func NewBlob(b []byte, contentType string) (*Blob, error) {
	return newBlob(b, sha256.Sum256(b), contentType, false, false)
}

// NewFastBlob compresses b with zstd and gzip at fast levels, for a blob
// that must be served soon; Recompress makes its encodings NewBlob's.
func NewFastBlob(b []byte, contentType string) (*Blob, error) {
	return newBlob(b, sha256.Sum256(b), contentType, true, false)
}

// newBlob makes a blob of b, whose SHA-256 is sum. A fast one made
// compressLater has its zstd and gzip made when each is first asked for
// (load): a fragment, which no manifest measures, and of which a page
// fetches a few.
func newBlob(b []byte, sum [sha256.Size]byte, contentType string, fast, compressLater bool) (*Blob, error) {
	bl := &Blob{SHA256: hex.EncodeToString(sum[:]), contentType: contentType}
	e, err := encode(b, bl.SHA256, fast, compressLater && fast)
	if err != nil {
		return nil, err
	}
	bl.cur.Store(e)
	return bl, nil
}

// uncompressedBlob makes a blob of b, whose SHA-256 is sum, without its
// zstd and gzip: fill gives them, or load makes them (at the fast levels)
// when first asked for.
func uncompressedBlob(b []byte, sum [sha256.Size]byte, contentType string, fast bool) *Blob {
	bl := &Blob{SHA256: hex.EncodeToString(sum[:]), contentType: contentType}
	e, _ := encode(b, bl.SHA256, fast, true) // nothing compressed, no error
	bl.cur.Store(e)
	return bl
}

// fill gives the blob c, its bytes in encoding e at its levels, unless it
// has them already.
func (b *Blob) fill(e Encoding, c []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.cur.Load()
	if cur.enc[e] != nil {
		return
	}
	next := *cur
	next.enc[e] = c
	b.cur.Store(&next)
}

// encode compresses b, named sha, at the fast or the best levels; later
// leaves zstd and gzip to be made when first asked for (load).
func encode(b []byte, sha string, fast, later bool) (*encodings, error) {
	e := &encodings{fast: fast}
	e.enc[Identity] = b
	if !later {
		var err error
		if e.enc[Zstd], err = compressed(b, Zstd, fast); err != nil {
			return nil, err
		}
		if e.enc[Gzip], err = compressed(b, Gzip, fast); err != nil {
			return nil, err
		}
	}
	for enc := range numEncodings {
		// Each representation has its own strong ETag: the fast levels'
		// bytes are other bytes than the best levels'.
		e.etag[enc] = `"` + sha
		if enc != Identity {
			e.etag[enc] += "." + enc.String()
			if fast {
				e.etag[enc] += ".fast"
			}
		}
		e.etag[enc] += `"`
	}
	return e, nil
}

// compressed is b in encoding e, zstd or gzip, at the fast or the best
// levels.
func compressed(b []byte, e Encoding, fast bool) ([]byte, error) {
	return compressedLike(b, e, fast, 0)
}

// compressedLike is compressed, given like, the room zstd's output is
// likely to need (0 for none known): a large shard's output grown on the
// way was copied and cleared over and over.
func compressedLike(b []byte, e Encoding, fast bool, like int) ([]byte, error) {
	return sharedCompressed(b, e, fast, func() ([]byte, error) { return compressedNow(b, e, fast, like) })
}

// compressedNow is compressedLike without what ShareCompression keeps.
func compressedNow(b []byte, e Encoding, fast bool, like int) ([]byte, error) {
	if e == Gzip {
		if fast {
			return gzipped(b, gzipFastWriters)
		}
		return gzipped(b, gzipWriters)
	}
	encoder := zstdEncoder
	if fast {
		encoder = zstdFastEncoder
	}
	zw, err := encoder()
	if err != nil {
		return nil, err
	}
	// Room for what a shard compresses to at the level, so that a large
	// one's output is not copied as it grows.
	room := len(b) / 3
	if fast {
		room = len(b) / 2
	}
	if like > 0 {
		room = min(like, len(b)+len(b)/64+1024)
	}
	return zw.EncodeAll(b, make([]byte, 0, room)), nil
}

// gzipped compresses b with a gzip writer of pool.
func gzipped(b []byte, pool *sync.Pool) ([]byte, error) {
	// Room for the worst case, deflate's stored blocks (parts of a shard
	// do not compress at the fast level): a buffer grown on the way
	// copied and cleared large shards over and over. What is not used is
	// given back, as the bytes are kept.
	gz := bytes.NewBuffer(make([]byte, 0, len(b)+len(b)/1024+64))
	gw := pool.Get().(*gzip.Writer)
	defer pool.Put(gw)
	gw.Reset(gz)
	gw.Write(b)
	if err := gw.Close(); err != nil {
		return nil, err
	}
	if out := gz.Bytes(); cap(out)-len(out) > len(out)/4+4096 {
		return bytes.Clone(out), nil
	}
	return gz.Bytes(), nil
}

// load returns the blob's encodings, with e among them: a fragment at
// fast levels is made without zstd and gzip and gets each (at the fast
// level) when it is first asked for, so that a refresh does not compress
// its many new fragments before it serves them (a page fetches a few of
// them, and a fragment's few kilobytes compress in microseconds) nor
// twice: the recompression at the best levels follows.
func (b *Blob) load(e Encoding) *encodings {
	cur := b.cur.Load()
	if e == Identity || cur.enc[e] != nil {
		return cur
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur = b.cur.Load(); cur.enc[e] != nil {
		return cur
	}
	c, err := compressed(cur.enc[Identity], e, true)
	if err != nil { // valid options and a bytes.Buffer: it does not fail
		panic("shards: " + e.String() + ": " + err.Error())
	}
	next := *cur
	next.enc[e] = c
	b.cur.Store(&next)
	return &next
}

// Fast reports whether the blob is still served at fast levels.
func (b *Blob) Fast() bool { return b.cur.Load().fast }

// Recompress compresses a blob made by NewFastBlob at the best levels and
// serves those bytes from then on, under new ETags; a request already
// being answered finishes with the bytes it started with. It reports
// whether it did: a blob at the best levels already is left as it is.
func (b *Blob) Recompress() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.cur.Load()
	if !cur.fast {
		return false, nil
	}
	e, err := encode(cur.enc[Identity], b.SHA256, false, false)
	if err != nil {
		return false, err
	}
	b.cur.Store(e)
	return true, nil
}

// maxZstdWindow is the largest window a browser decodes zstd content with
// (RFC 9659: 8 MB).
const maxZstdWindow = 8 << 20

// UseZstd offers z, the blob compressed by another zstd encoder, as its
// zstd encoding: "make wasm" writes matcher.wasm.zst with the zstd CLI,
// whose -19 is smaller than klauspost/compress's best. z must decode
// to exactly the blob's bytes within a window a browser accepts; if not,
// stale or corrupt, UseZstd returns an error and the blob is unchanged.
// It keeps z, with an ETag of its own, only when z is smaller than the
// encoding NewBlob made, and reports whether it did. Call it before the
// blob is served, and not on a blob made by NewFastBlob, whose Recompress
// would drop z.
func (b *Blob) UseZstd(z []byte) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.cur.Load()
	want := cur.enc[Identity]
	// klauspost's decoder holds a single-segment frame to no window, but
	// a browser's takes its content size as the window.
	var h zstd.Header
	if err := h.Decode(z); err == nil && h.SingleSegment && h.FrameContentSize > maxZstdWindow {
		return false, fmt.Errorf("the given zstd needs a %d-byte window; browsers stop at %d", h.FrameContentSize, maxZstdWindow)
	}
	// The decoder stops past len(want) bytes, so a bad z costs no more
	// memory than the blob itself.
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(max(len(want), 1))), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return false, err
	}
	defer d.Close()
	got, err := d.DecodeAll(z, make([]byte, 0, len(want)))
	if err != nil {
		return false, fmt.Errorf("decoding the given zstd: %w", err)
	}
	if !bytes.Equal(got, want) {
		return false, errors.New("the given zstd decodes to other bytes than the blob's")
	}
	if len(z) >= len(cur.enc[Zstd]) {
		return false, nil
	}
	e := *cur
	e.enc[Zstd] = z
	// Other bytes, so another strong ETag than NewBlob's encoding had.
	sum := sha256.Sum256(z)
	e.etag[Zstd] = `"` + b.SHA256 + ".zstd." + hex.EncodeToString(sum[:8]) + `"`
	b.cur.Store(&e)
	return true, nil
}

// Size is the blob's length in an encoding.
func (b *Blob) Size(e Encoding) int { return len(b.load(e).enc[e]) }

// Bytes returns the blob in an encoding; the caller must not change it.
func (b *Blob) Bytes(e Encoding) []byte { return b.load(e).enc[e] }

// Negotiate picks the best encoding an Accept-Encoding header allows: zstd,
// then gzip, then identity, which is always acceptable to us (a client
// refusing it gets it anyway rather than a 406).
func Negotiate(acceptEncoding string) Encoding {
	var ok [numEncodings]bool
	star := false
	seen := [numEncodings]bool{}
	for item := range strings.SplitSeq(acceptEncoding, ",") {
		name, params, _ := strings.Cut(item, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, found := strings.Cut(strings.TrimSpace(p), "=")
			if found && strings.TrimSpace(k) == "q" {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					f = 0
				}
				q = f
			}
		}
		if name == "*" {
			star = q > 0
			continue
		}
		for e := range numEncodings {
			if name == encodingNames[e] {
				ok[e], seen[e] = q > 0, true
			}
		}
	}
	for _, e := range []Encoding{Zstd, Gzip} {
		if ok[e] || (star && !seen[e]) {
			return e
		}
	}
	return Identity
}

// Serve writes the blob in the best encoding the request accepts, with
// cacheControl, its ETag and Vary: Accept-Encoding. It is readable
// cross-origin, since publisher pages fetch it from their own origin.
// net/http's ServeContent answers the conditional and range requests: a
// matching If-None-Match with 304, a Range (of the encoded bytes, which a
// CDN or a resumed download may ask for) with 206, or with the whole blob
// where an If-Range names an older ETag.
func (b *Blob) Serve(w http.ResponseWriter, r *http.Request, cacheControl string) {
	e := Negotiate(r.Header.Get("Accept-Encoding"))
	cur := b.load(e)
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	h.Set("ETag", cur.etag[e])
	h.Set("Cache-Control", cacheControl)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", b.contentType)
	if e != Identity {
		h.Set("Content-Encoding", e.String())
	}
	// ServeContent leaves an encoded body's length unset but for a range,
	// whose length it sets; it drops it from a 304 or an error.
	h.Set("Content-Length", strconv.Itoa(len(cur.enc[e])))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(cur.enc[e]))
}

// Restore makes a blob of the encodings another blob made at the best
// levels (NewBlob), read back from a store: identity, zstd and gzip as
// Bytes gave them. Each must decode to identity, within a window a
// browser accepts, or Restore returns an error: a blob restored serves
// the same bytes under the same ETags as the one it was read from.
func Restore(identity, zstdBytes, gzipBytes []byte, contentType string) (*Blob, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(max(len(identity), 1))), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	got, err := d.DecodeAll(zstdBytes, make([]byte, 0, len(identity)))
	if err != nil || !bytes.Equal(got, identity) {
		return nil, fmt.Errorf("the zstd encoding does not decode to the blob (%v)", err)
	}
	gr, err := gzip.NewReader(bytes.NewReader(gzipBytes))
	if err != nil {
		return nil, fmt.Errorf("the gzip encoding: %w", err)
	}
	// One byte past the blob's tells a longer stream.
	got, err = io.ReadAll(io.LimitReader(gr, int64(len(identity))+1))
	if err != nil || !bytes.Equal(got, identity) {
		return nil, fmt.Errorf("the gzip encoding does not decode to the blob (%v)", err)
	}
	sum := sha256.Sum256(identity)
	b := &Blob{SHA256: hex.EncodeToString(sum[:]), contentType: contentType}
	e, _ := encode(identity, b.SHA256, false, true) // nothing compressed, no error
	e.enc[Zstd], e.enc[Gzip] = zstdBytes, gzipBytes
	b.cur.Store(e)
	return b, nil
}

// ValidSHA256 tells a blob's name as URLs spell it: 64 lowercase hex
// digits.
func ValidSHA256(sha string) bool {
	if len(sha) != 2*sha256.Size {
		return false
	}
	for i := range len(sha) {
		if c := sha[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
