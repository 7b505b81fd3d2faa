package siteshards

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/match"
)

// testShard is a shard of n fragments, of bytes that tell it by seed.
func testShard(t testing.TB, seed, n int) *Shard {
	t.Helper()
	blob := func(s string) *shards.Blob {
		b, err := shards.NewBlob(bytes.Repeat([]byte(s), 200), shardType)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sh := &Shard{Blob: blob(fmt.Sprintf("shard %d ", seed)), Head: seed%2 == 1, Ads: 40 + seed}
	for k := range n {
		sh.Fragments = append(sh.Fragments, blob(fmt.Sprintf("fragment %d of %d ", k, seed)))
	}
	return sh
}

// TestShardBodies: a shard's body in the store reads back as the shard,
// every encoding of it and its fragments; a body changed anywhere, cut
// short, run on, or kept under another shard's name is refused.
func TestShardBodies(t *testing.T) {
	sh := testShard(t, 1, 3)
	body := encodeShard(sh)
	got, err := decodeShard(sh.Blob.SHA256, body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Head != sh.Head || got.Ads != sh.Ads || len(got.Fragments) != len(sh.Fragments) || got.Index != nil {
		t.Fatalf("read back as %+v, want %+v", got, sh)
	}
	for i, want := range append([]*shards.Blob{sh.Blob}, sh.Fragments...) {
		have := append([]*shards.Blob{got.Blob}, got.Fragments...)[i]
		for _, e := range []shards.Encoding{shards.Zstd, shards.Gzip, shards.Identity} {
			if have.SHA256 != want.SHA256 || !bytes.Equal(have.Bytes(e), want.Bytes(e)) {
				t.Fatalf("blob %d in %s: other bytes", i, e)
			}
		}
	}
	if got.Bytes == 0 {
		t.Error("no bytes counted")
	}

	other := testShard(t, 2, 1)
	for name, b := range map[string][]byte{
		"a byte changed": func() []byte { b := bytes.Clone(body); b[len(b)/2] ^= 1; return b }(),
		"cut short":      body[:len(body)-1],
		"run on":         append(bytes.Clone(body), 0),
		"empty":          nil,
		"another's":      encodeShard(other),
	} {
		if _, err := decodeShard(sh.Blob.SHA256, b); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// FuzzDecodeShard: whatever a row holds, it reads without a panic, and
// only as the shard it is named by.
func FuzzDecodeShard(f *testing.F) {
	sh := testShard(f, 3, 2)
	f.Add(sh.Blob.SHA256, encodeShard(sh))
	f.Add(sh.Blob.SHA256, []byte(shardMagic))
	f.Add("x", []byte{})
	f.Fuzz(func(t *testing.T, sha string, body []byte) {
		got, err := decodeShard(sha, body)
		if err == nil && got.Blob.SHA256 != sha {
			t.Fatalf("read as %s, named %s", got.Blob.SHA256, sha)
		}
	})
}

// TestCacheTakesTheBuiltShard: a shard read from the store, which has no
// index, gives way in the cache to the same bytes built here, whose index
// a manifest needs, under every key; the bytes are counted once.
func TestCacheTakesTheBuiltShard(t *testing.T) {
	c := newCache(10, 1<<30)
	read, err := decodeShard(testShard(t, 4, 2).Blob.SHA256, encodeShard(testShard(t, 4, 2)))
	if err != nil {
		t.Fatal(err)
	}
	c.put(fetchedKey+read.Blob.SHA256, read)
	built := testShard(t, 4, 2)
	built.Index = new(match.Index)
	c.put("market\x00top", built)
	if got := c.get("market\x00top"); got != built {
		t.Fatalf("the key built holds %p, want the built shard %p", got, built)
	}
	if got := c.bySHA(built.Blob.SHA256); got != built {
		t.Fatalf("by its name: %p, want the built shard %p", got, built)
	}
	if c.len() != 1 || c.bytes != built.size() {
		t.Errorf("%d shards, %d bytes; want one of %d", c.len(), c.bytes, built.size())
	}
	// And not the other way round.
	c.put(fetchedKey+"again", read)
	if got := c.get("market\x00top"); got != built {
		t.Fatalf("after a read put again: %p", got)
	}
}
