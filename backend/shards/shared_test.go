package shards

import (
	"bytes"
	"context"
	"testing"

	"github.com/adlink/adlink/internal/testcatalog"
)

// TestShareCompression: with ShareCompression, a second Set built from the
// same catalog serves the first one's compressed bytes, at the fast and at
// the best levels, yet its blobs are its own: recompressing one Set's
// leaves the other's fast.
func TestShareCompression(t *testing.T) {
	shared.Lock()
	was := shared.on
	shared.on = true
	shared.Unlock()
	t.Cleanup(func() {
		shared.Lock()
		shared.on = was
		shared.Unlock()
	})
	src := buildSource(t, testcatalog.Generate(300, 4))
	o := Options{RedirectURL: "http://r.test", Fast: true}
	a, err := Build(src, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(src, o)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := a.Pick("", ""), b.Pick("", "")
	if sa == sb || !sa.Fast() || !sb.Fast() {
		t.Fatalf("two builds gave one blob (%v) or not fast ones (%v, %v)", sa == sb, sa.Fast(), sb.Fast())
	}
	for _, e := range []Encoding{Zstd, Gzip} {
		if x, y := sa.Bytes(e), sb.Bytes(e); len(x) == 0 || &x[0] != &y[0] {
			t.Errorf("%s: the second build compressed the shard again", e)
		}
	}
	if n, err := a.Recompress(context.Background(), 2); n == 0 || err != nil {
		t.Fatalf("Recompress() = %d, %v", n, err)
	}
	if sa.Fast() || !sb.Fast() {
		t.Fatalf("after the first Set's Recompress: fast %v and %v, want only the second's", sa.Fast(), sb.Fast())
	}
	fast := sb.Bytes(Zstd)
	if n, err := b.Recompress(context.Background(), 2); n == 0 || err != nil {
		t.Fatalf("Recompress() = %d, %v", n, err)
	}
	x, y := sa.Bytes(Zstd), sb.Bytes(Zstd)
	if &x[0] != &y[0] || bytes.Equal(y, fast) {
		t.Error("the second Recompress compressed the shard at the best levels again, or kept the fast bytes")
	}
	if !bytes.Equal(decode(t, "zstd", y), sb.Bytes(Identity)) {
		t.Error("the shared zstd does not decode to the shard")
	}
}
