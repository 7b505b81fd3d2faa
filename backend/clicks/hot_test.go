package clicks

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/store"
)

// openWindows opens the Windows of the bbolt file in dir.
func openWindows(t *testing.T, dir string) (*bolt.DB, *BoltWindows) {
	t.Helper()
	db, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWindows(db)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db, w
}

// TestClaimAppendsAtTheDaysEnd checks that every record of a claim, its
// window and its prefix's counts, goes under an 's' key, at the end of
// the day's bucket, and that each count's value holds no zero byte: a
// server that reads counts only from 'p' and 'q' keys reads no window
// from it. A restart reads the counts back.
func TestClaimAppendsAtTheDaysEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, w := openWindows(t, dir)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	claims := []Claim{
		{Network: "2001:db8:1:1::/64", AdID: "a", Prefix: "2001:db8:1::/48", PrefixLimit: 2, PrefixAdLimit: 1},
		{Network: "2001:db8:1:2::/64", AdID: "b", Prefix: "2001:db8:1::/48", PrefixLimit: 2, PrefixAdLimit: 1},
		{Network: "192.0.2.7", AdID: "a", Prefix: "192.0.2.0/24", PrefixLimit: 1},
	}
	for i, c := range claims {
		c.At = at.Add(time.Duration(i) * time.Second)
		if reason, err := w.Claim(ctx, c); err != nil || reason != "" {
			t.Fatalf("claim %d: %q, %v", i, reason, err)
		}
	}
	var windows, counts int
	db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(windowsBucket).Bucket(dayKey(dayOf(at))).ForEach(func(k, v []byte) error {
			if k[0] != 's' {
				t.Errorf("record %q under a key of its own kind: %x", v, k)
			}
			if bytes.IndexByte(v, 0) < 0 {
				counts++
			} else {
				windows++
			}
			return nil
		})
	})
	if windows != 3 || counts != 5 {
		t.Errorf("%d windows and %d counts, want 3 and 5", windows, counts)
	}
	db.Close()

	db, w = openWindows(t, dir)
	defer db.Close()
	for _, tc := range []struct {
		c    Claim
		want string
	}{
		{Claim{Network: "2001:db8:1:3::/64", AdID: "a", Prefix: "2001:db8:1::/48", PrefixLimit: 3, PrefixAdLimit: 1}, ReasonPrefixAdCap},
		{Claim{Network: "2001:db8:1:3::/64", AdID: "c", Prefix: "2001:db8:1::/48", PrefixLimit: 2, PrefixAdLimit: 1}, ReasonPrefixCap},
		{Claim{Network: "192.0.2.8", AdID: "b", Prefix: "192.0.2.0/24", PrefixLimit: 1}, ReasonPrefixCap},
		{Claim{Network: "2001:db8:1:1::/64", AdID: "a"}, ReasonRepeat},
		{Claim{Network: "2001:db8:1:3::/64", AdID: "c", Prefix: "2001:db8:1::/48", PrefixLimit: 3, PrefixAdLimit: 1}, ""},
	} {
		tc.c.At = at.Add(time.Minute)
		if reason, err := w.Claim(ctx, tc.c); err != nil || reason != tc.want {
			t.Errorf("after a restart, %s on %s: %q, %v; want %q", tc.c.Network, tc.c.AdID, reason, err, tc.want)
		}
	}
}

// TestLoadReadsCountsUnderTheirOwnKeys checks that the counts of a file
// written before they went under 's' keys, each under 'p' or 'q', are
// read as they were.
func TestLoadReadsCountsUnderTheirOwnKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, _ := openWindows(t, dir)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(windowsBucket).CreateBucketIfNotExists(dayKey(dayOf(at)))
		if err != nil {
			return err
		}
		for _, r := range []struct {
			kind byte
			v    string
		}{{'p', "2001:db8:1::/48"}, {'q', "2001:db8:1::/48\x00a"}, {'p', "2001:db8:1::/48"}} {
			if err := appendRecord(b, r.kind, []byte(r.v)); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, w := openWindows(t, dir)
	defer db.Close()
	for _, tc := range []struct {
		c    Claim
		want string
	}{
		{Claim{Network: "2001:db8:1:3::/64", AdID: "a", Prefix: "2001:db8:1::/48", PrefixLimit: 3, PrefixAdLimit: 1}, ReasonPrefixAdCap},
		{Claim{Network: "2001:db8:1:3::/64", AdID: "b", Prefix: "2001:db8:1::/48", PrefixLimit: 2, PrefixAdLimit: 1}, ReasonPrefixCap},
		{Claim{Network: "2001:db8:1:3::/64", AdID: "b", Prefix: "2001:db8:1::/48", PrefixLimit: 3, PrefixAdLimit: 1}, ""},
	} {
		tc.c.At = at
		if reason, err := w.Claim(ctx, tc.c); err != nil || reason != tc.want {
			t.Errorf("%s on %s, cap %d: %q, %v; want %q", tc.c.Prefix, tc.c.AdID, tc.c.PrefixLimit, reason, err, tc.want)
		}
	}
}

// TestReadCount checks that readCount reads what appendCount writes, and
// nothing of a value that is no count.
func TestReadCount(t *testing.T) {
	for _, tc := range []struct {
		v          string
		prefix, ad string
		ok         bool
	}{
		{"p2001:db8:1::/48", "2001:db8:1::/48", "", true},
		{"q\x0f2001:db8:1::/48shop.example", "2001:db8:1::/48", "shop.example", true},
		{"q\x102001:db8:1::/48", "", "", false},
		{"q", "", "", false},
		{"p", "", "", false},
		{"x2001:db8:1::/48", "", "", false},
	} {
		prefix, ad, ok := readCount([]byte(tc.v))
		if prefix != tc.prefix || ad != tc.ad || ok != tc.ok {
			t.Errorf("readCount(%q) = %q, %q, %v; want %q, %q, %v", tc.v, prefix, ad, ok, tc.prefix, tc.ad, tc.ok)
		}
	}
}

// TestAppendedPagesAreFull checks that the pages of a day's windows,
// which a claim only ever appends to, are left full when they split.
func TestAppendedPagesAreFull(t *testing.T) {
	ctx := context.Background()
	db, w := openWindows(t, t.TempDir())
	defer db.Close()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range 2000 {
		c := Claim{Network: fmt.Sprintf("2001:db8:%x:%x::/64", i/256, i%256), AdID: "a", At: at,
			Prefix: fmt.Sprintf("2001:db8:%x::/48", i/256), PrefixLimit: 1000, PrefixAdLimit: 1000}
		if reason, err := w.Claim(ctx, c); err != nil || reason != "" {
			t.Fatalf("claim %d: %q, %v", i, reason, err)
		}
	}
	db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(windowsBucket).Bucket(dayKey(dayOf(at))).Stats()
		if used := float64(st.LeafInuse) / float64(st.LeafAlloc); st.LeafPageN < 10 || used < 0.9 {
			t.Errorf("%d leaf pages %.0f%% used, want more than 90%%", st.LeafPageN, 100*used)
		}
		return nil
	})
}

// TestCountsOfOldAndNewVersionsAddUp checks that a day written by a
// version that kept counts under 'p' and 'q' keys, then by this one,
// then by the old one again (its records after this one's, under the
// bucket's next sequence), is read back with every count: the caps hold
// across an upgrade and a return to the old version on one day.
func TestCountsOfOldAndNewVersionsAddUp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	const prefix = "2001:db8:1::/48"
	old := func() { // a claim on ad "a" as the old version appends it
		t.Helper()
		db, _ := openWindows(t, dir)
		defer db.Close()
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.Bucket(windowsBucket).CreateBucketIfNotExists(dayKey(dayOf(at)))
			if err != nil {
				return err
			}
			if err := appendRecord(b, 'p', []byte(prefix)); err != nil {
				return err
			}
			return appendRecord(b, 'q', []byte(prefix+"\x00a"))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	claimOn := func(ad string, limit, adLimit int) string { // from a network of its own
		t.Helper()
		db, w := openWindows(t, dir)
		defer db.Close()
		n++
		reason, err := w.Claim(ctx, Claim{Network: fmt.Sprintf("2001:db8:1:%x::/64", n), AdID: ad, At: at,
			Prefix: prefix, PrefixLimit: limit, PrefixAdLimit: adLimit})
		if err != nil {
			t.Fatal(err)
		}
		return reason
	}
	old()
	if r := claimOn("a", 10, 10); r != "" {
		t.Fatalf("the new version's claim after the old one's: %q", r)
	}
	old()
	// Three claims of the prefix, all on "a": a cap of 3 is reached on
	// all ads and on "a", a cap of 4 on neither until a fourth bills.
	for _, tc := range []struct {
		ad             string
		limit, adLimit int
		want           string
	}{
		{"b", 3, 10, ReasonPrefixCap},
		{"a", 10, 3, ReasonPrefixAdCap},
		{"a", 4, 4, ""},
		{"b", 4, 10, ReasonPrefixCap},
	} {
		if got := claimOn(tc.ad, tc.limit, tc.adLimit); got != tc.want {
			t.Errorf("on %s, caps %d and %d per ad: %q, want %q", tc.ad, tc.limit, tc.adLimit, got, tc.want)
		}
	}
}
