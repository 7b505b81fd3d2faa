package shards

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"

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

// Blob is one immutable file, compressed once with every encoding when it
// is made and then served as is.
type Blob struct {
	// SHA256 is the hex SHA-256 of the uncompressed bytes: the blob's name.
	SHA256      string
	contentType string
	enc         [numEncodings][]byte
	etag        [numEncodings]string
}

// The encoders every Blob shares: a best-compression zstd encoder costs
// megabytes to set up, and a large catalog's shards come in hundreds of
// fragments (with an encoder per blob, BenchmarkShardBytes's three
// catalogs took 18 s to build; shared, 6 s). EncodeAll may run on many
// goroutines at once.
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	})
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.BestCompression) // a valid level: no error
		return w
	}}
)

// NewBlob compresses b with zstd (best compression) and gzip (level 9).
func NewBlob(b []byte, contentType string) (*Blob, error) {
	sum := sha256.Sum256(b)
	bl := &Blob{SHA256: hex.EncodeToString(sum[:]), contentType: contentType}
	bl.enc[Identity] = b
	zw, err := zstdEncoder()
	if err != nil {
		return nil, err
	}
	bl.enc[Zstd] = zw.EncodeAll(b, make([]byte, 0, len(b)/3))
	var gz bytes.Buffer
	gw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(gw)
	gw.Reset(&gz)
	gw.Write(b)
	if err := gw.Close(); err != nil {
		return nil, err
	}
	bl.enc[Gzip] = gz.Bytes()
	for e := range numEncodings {
		// Each representation has its own strong ETag.
		bl.etag[e] = `"` + bl.SHA256
		if e != Identity {
			bl.etag[e] += "." + e.String()
		}
		bl.etag[e] += `"`
	}
	return bl, nil
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
// blob is served: a Blob is not safe to change while it is read.
func (b *Blob) UseZstd(z []byte) (bool, error) {
	want := b.enc[Identity]
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
	if len(z) >= len(b.enc[Zstd]) {
		return false, nil
	}
	b.enc[Zstd] = z
	// Other bytes, so another strong ETag than NewBlob's encoding had.
	sum := sha256.Sum256(z)
	b.etag[Zstd] = `"` + b.SHA256 + ".zstd." + hex.EncodeToString(sum[:8]) + `"`
	return true, nil
}

// Size is the blob's length in an encoding.
func (b *Blob) Size(e Encoding) int { return len(b.enc[e]) }

// Bytes returns the blob in an encoding; the caller must not change it.
func (b *Blob) Bytes(e Encoding) []byte { return b.enc[e] }

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
// cacheControl, its ETag and Vary: Accept-Encoding, and answers a matching
// If-None-Match with 304. It is readable cross-origin, since publisher
// pages fetch it from their own origin.
func (b *Blob) Serve(w http.ResponseWriter, r *http.Request, cacheControl string) {
	e := Negotiate(r.Header.Get("Accept-Encoding"))
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	h.Set("ETag", b.etag[e])
	h.Set("Cache-Control", cacheControl)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, b.etag[e]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", b.contentType)
	if e != Identity {
		h.Set("Content-Encoding", e.String())
	}
	h.Set("Content-Length", strconv.Itoa(len(b.enc[e])))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b.enc[e])
	}
}

// etagMatch reports whether an If-None-Match list names etag (or is "*").
func etagMatch(list, etag string) bool {
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimPrefix(strings.TrimSpace(item), "W/")
		if item == "*" || item == etag {
			return true
		}
	}
	return false
}
