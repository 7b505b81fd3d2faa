package clicks

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/store"
)

// An impression's key is its window's: the same for every time in the
// window, another in the next one, and for another ad, partner, site or
// network.
func TestImpressionKey(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	const w = 30 * time.Minute
	k := ImpressionKey("a", "k", "blog", "198.51.100.7", t0, w)
	for _, at := range []time.Time{t0.Add(time.Second), t0.Add(w - time.Nanosecond)} {
		if got := ImpressionKey("a", "k", "blog", "198.51.100.7", at, w); got != k {
			t.Errorf("at %v: key %s, want the window's %s", at, got, k)
		}
	}
	for name, other := range map[string]string{
		"next window":   ImpressionKey("a", "k", "blog", "198.51.100.7", t0.Add(w), w),
		"window before": ImpressionKey("a", "k", "blog", "198.51.100.7", t0.Add(-time.Nanosecond), w),
		"another ad":    ImpressionKey("b", "k", "blog", "198.51.100.7", t0, w),
		"another key":   ImpressionKey("a", "k2", "blog", "198.51.100.7", t0, w),
		"another site":  ImpressionKey("a", "k", "blog2", "198.51.100.7", t0, w),
		"another net":   ImpressionKey("a", "k", "blog", "198.51.100.8", t0, w),
		"fields moved":  ImpressionKey("a", "k", "blog1", "98.51.100.7", t0, w),
	} {
		if other == k {
			t.Errorf("%s: the same key %s", name, k)
		}
	}
	b, err := ImpressionKeyBytes(k)
	if err != nil || len(b) != 16 || int64(binary.BigEndian.Uint32(b)) != t0.Unix()/60 {
		t.Errorf("key bytes %x %v: want 16, the window's start in minutes first", b, err)
	}
}

// A bbolt store forgets the keys past ImpressionKeyTTL as it appends
// newer ones: the impression of a forgotten key counts again, and the
// bucket keeps to the keys of the last ImpressionKeyTTL.
func TestBoltImpressionsForgetOldKeys(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := NewImpressions(db)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	imp := func(ad string, at time.Time) Impression {
		return Impression{Time: at, AdID: ad, Page: "https://blog.example/",
			Key: ImpressionKey(ad, "k", "blog", "net", at, 30*time.Minute)}
	}
	ctx := context.Background()
	var old []Impression
	for i := range 20 {
		old = append(old, imp(strings.Repeat("x", i+1), t0))
	}
	if n, err := s.Append(ctx, old); err != nil || n != 0 {
		t.Fatalf("Append: %d repeats, %v", n, err)
	}
	keys := func() int {
		n := 0
		db.View(func(tx *bolt.Tx) error { n = tx.Bucket(impressionKeysBucket).Stats().KeyN; return nil })
		return n
	}
	later := t0.Add(ImpressionKeyTTL + time.Hour)
	for i := range 3 {
		if _, err := s.Append(ctx, []Impression{imp("y", later.Add(time.Duration(i)*time.Hour))}); err != nil {
			t.Fatal(err)
		}
	}
	if n := keys(); n != 3 {
		t.Errorf("%d keys after the old ones' TTL, want the 3 new ones", n)
	}
	if n, err := s.Append(ctx, old[:1]); err != nil || n != 0 {
		t.Errorf("an impression of a forgotten key: %d repeats, %v; want it recorded", n, err)
	}
	if n, err := s.Append(ctx, []Impression{imp("y", later)}); err != nil || n != 1 {
		t.Errorf("a key within its TTL: %d repeats, %v; want 1", n, err)
	}
}

// FuzzImpressionKeyBytes: only the hex of 16 bytes is a key, read back
// to those bytes; and every key ImpressionKey makes is one.
func FuzzImpressionKeyBytes(f *testing.F) {
	f.Add("", "a", "https://blog.example/", int64(1795000000))
	f.Add("00112233445566778899aabbccddeeff", "", "", int64(0))
	f.Add("00112233445566778899AABBCCDDEEFF", "ad", "p", int64(-1))
	f.Add("0011", "x", "y", int64(1<<62))
	f.Add("zz112233445566778899aabbccddeeff", "ad\x00", "\xff", int64(60))
	f.Fuzz(func(t *testing.T, s, ad, key string, unix int64) {
		b, err := ImpressionKeyBytes(s)
		switch {
		case s == "":
			if b != nil || err != nil {
				t.Fatalf("no key: %x %v", b, err)
			}
		case err == nil:
			if len(b) != 16 || hex.EncodeToString(b) != strings.ToLower(s) {
				t.Fatalf("%q read as %x", s, b)
			}
		}
		at := time.Unix(unix%(1<<40), 0)
		if at.Unix() < 0 {
			at = time.Unix(-at.Unix(), 0)
		}
		k := ImpressionKey(ad, key, "site", "net", at, 7*time.Minute)
		kb, err := ImpressionKeyBytes(k)
		if err != nil || len(kb) != 16 {
			t.Fatalf("ImpressionKey made %q, not a key: %v", k, err)
		}
		if k2 := ImpressionKey(ad, key, "site", "net", at.Add(-time.Duration(at.Unix()%420)*time.Second), 7*time.Minute); k2 != k {
			t.Fatalf("the window's start has key %s, a time in it %s", k2, k)
		}
	})
}
