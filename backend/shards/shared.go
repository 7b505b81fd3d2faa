package shards

import (
	"crypto/sha256"
	"slices"
	"sync"
)

// shared keeps, once ShareCompression was called, the bytes compressedLike
// made, by the SHA-256 of their input, the encoding and the levels. A test
// binary starts tens of servers over the same few catalogs, and each
// compressed every shard at the best levels again: seconds each under the
// race detector. Compressed bytes are never changed once made, so servers
// share them; each still has blobs of its own, which its Recompress moves
// from the fast levels to the best ones.
var shared struct {
	sync.Mutex
	on    bool
	bytes int
	kept  map[sharedKey][]byte
}

type sharedKey struct {
	sum  [sha256.Size]byte
	enc  Encoding
	fast bool
}

// maxShared bounds the bytes shared keeps: past it, what is compressed is
// not kept, so a binary that builds large catalogs does not hold them all.
const maxShared = 256 << 20

// ShareCompression makes the process keep what it compresses and take it
// from there when the same bytes are compressed again in the same encoding
// at the same levels, for the rest of its life: for a test binary, whose
// servers build the same catalogs over and over. A server does not call
// it: a refresh takes what it keeps from the catalog before
// (Options.Previous), and bytes kept here would outlive the catalogs they
// were made for. A benchmark that times compression does not either.
func ShareCompression() {
	shared.Lock()
	defer shared.Unlock()
	shared.on = true
}

// sharedCompressed returns compress(), or what it returned for the same b,
// e and fast before, when ShareCompression was called.
func sharedCompressed(b []byte, e Encoding, fast bool, compress func() ([]byte, error)) ([]byte, error) {
	shared.Lock()
	on := shared.on
	shared.Unlock()
	if !on {
		return compress()
	}
	k := sharedKey{sha256.Sum256(b), e, fast}
	shared.Lock()
	c, ok := shared.kept[k]
	shared.Unlock()
	if ok {
		return c, nil
	}
	c, err := compress()
	if err != nil {
		return nil, err
	}
	// Clipped, so that no holder's append writes into another's bytes.
	c = slices.Clip(c)
	shared.Lock()
	defer shared.Unlock()
	if shared.bytes+len(c) <= maxShared {
		if shared.kept == nil {
			shared.kept = map[sharedKey][]byte{}
		}
		if _, ok := shared.kept[k]; !ok {
			shared.kept[k] = c
			shared.bytes += len(c)
		}
	}
	return c, nil
}
