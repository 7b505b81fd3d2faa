package match

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// indexAmp is bytes.IndexByte for '&', wherever the '&' falls in or
// across the eight-byte words, and among bytes that differ from it in
// one bit.
func TestIndexAmp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'&', '&' ^ 1, '&' ^ 0x80, 'a', 0, 0xff, '%'}
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := indexAmp(b), bytes.IndexByte(b, '&'); got != want {
			t.Fatalf("indexAmp(%q) = %d, want %d", b, got, want)
		}
	}
}

// jsonPlain8 is true exactly when each of the eight bytes is plain.
func TestJSONPlain8(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		var w [8]byte
		for i := range w {
			if r.IntN(4) == 0 {
				w[i] = byte(r.IntN(256))
			} else {
				w[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		want := true
		for _, c := range w {
			want = want && c < 0x80 && jsonSafe[c]
		}
		if got := jsonPlain8(load8(string(w[:]), 0)); got != want {
			t.Fatalf("jsonPlain8(%q) = %v, want %v", w, got, want)
		}
	}
}
