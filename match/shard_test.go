package match

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestShardRoundTrip(t *testing.T) {
	ix := mustBuild(t, fixture())
	b := ix.Encode()
	op, err := Open(bytes.Clone(b))
	if err != nil {
		t.Fatal(err)
	}
	o := &LinkOptions{Context: ContextSearch, ClickBase: "r/v1/redirect?", ClickQuery: clickQuery(ContextSearch, "", "", ""), Fields: FieldPrice | FieldLogo}
	for _, q := range []Query{
		{Text: "lg handy"}, {Text: "headphones", Dist: DistNone}, {Text: "nokia", Dist: DistLow},
		{Page: true, Text: "Apple iPhone 5"}, {Text: "handy", Country: "de"},
	} {
		a := ix.AppendResponse(nil, ix.Match(&q), o)
		c := op.AppendResponse(nil, op.Match(&q), o)
		if !bytes.Equal(a, c) {
			t.Errorf("%+v:\n%s\n%s", q, a, c)
		}
	}
	if !bytes.Equal(op.Encode(), b) {
		t.Error("re-encoding an opened shard changed it")
	}
	// Misaligned input is copied, not rejected.
	mis := make([]byte, len(b)+1)
	copy(mis[1:], b)
	if _, err := Open(mis[1:]); err != nil {
		t.Errorf("misaligned: %v", err)
	}
}

// TestEncodePage: the page's shard answers as the index it was cut from,
// whole or in fragments of one, two or all ads, once the fragments its
// hits need are loaded; it is smaller, and leaves out only landing URLs,
// models, keywords and the id table.
func TestEncodePage(t *testing.T) {
	ix := mustBuild(t, fixture())
	for _, per := range []int{0, 1, 2, ix.Len(), ix.Len() + 5} {
		b, frags := ix.EncodePage(per)
		op, err := Open(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= len(ix.Encode()) {
			t.Errorf("per %d: page shard %d bytes, whole %d", per, len(b), len(ix.Encode()))
		}
		if want := (ix.Len() + per - 1) / max(per, 1); per > 0 && (len(frags) != want || op.Fragments() != want) {
			t.Fatalf("per %d: %d fragments, Fragments() %d, want %d", per, len(frags), op.Fragments(), want)
		}
		loaded := 0
		for _, o := range []*LinkOptions{
			{Context: ContextSearch, ClickBase: "r/v1/redirect?", ClickQuery: clickQuery(ContextSearch, "", "", ""), Fields: FieldPrice | FieldLogo},
			{Context: ContextPage, ClickBase: "r/v1/redirect?", ClickQuery: clickQuery(ContextPage, "", "", ""), Fields: FieldPrice | FieldLogo | FieldManufacturer | FieldDescription | FieldAdvertiser | FieldGTIN | FieldCategory},
		} {
			for _, q := range []Query{
				{Text: "lg handy"}, {Text: "headphones", Dist: DistNone}, {Text: "nokia", Dist: DistLow},
				{Page: true, Text: "Apple iPhone 5"}, {Text: "handy", Country: "de"}, {Text: "samsung galaxy", Dist: DistNone},
			} {
				hits := op.Match(&q)
				need := op.Missing(hits)
				if per == 0 && need != nil {
					t.Fatalf("whole shard: Missing = %v", need)
				}
				for _, k := range need {
					if err := op.LoadFragment(k, bytes.Clone(frags[k])); err != nil {
						t.Fatal(err)
					}
					loaded++
				}
				if again := op.Missing(op.Match(&q)); again != nil {
					t.Fatalf("per %d: still missing %v after loading %v", per, again, need)
				}
				a := ix.AppendResponse(nil, ix.Match(&q), o)
				c := op.AppendResponse(nil, op.Match(&q), o)
				if !bytes.Equal(a, c) {
					t.Errorf("per %d %+v:\n%s\n%s", per, q, a, c)
				}
			}
		}
		if per > 0 && loaded == 0 {
			t.Errorf("per %d: no fragment was ever missing", per)
		}
		for k := range frags {
			op.LoadFragment(k, frags[k])
		}
		for i := range ix.Len() {
			want := ix.Ad(i)
			want.Landing, want.Model, want.Keywords = "", "", nil
			if got := op.Ad(i); !reflect.DeepEqual(got, want) {
				t.Fatalf("per %d: ad %d:\n%+v\nwant\n%+v", per, i, got, want)
			}
			if _, ok := op.Lookup(want.ID); ok {
				t.Errorf("per %d: Lookup(%q) on a page shard found it", per, want.ID)
			}
		}
	}
}

// TestFragmentsChecked: a fragment is refused unless it is the shard's own,
// at its own number; until loaded its ads have no strings.
func TestFragmentsChecked(t *testing.T) {
	ix := mustBuild(t, fixture())
	b, frags := ix.EncodePage(2)
	op, err := Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := op.Ad(0); got.ID != "" || got.Title != "" {
		t.Errorf("before loading: %+v", got)
	}
	flipped := bytes.Clone(frags[0])
	flipped[0] ^= 1
	for _, tt := range []struct {
		k int
		b []byte
	}{
		{-1, frags[0]}, {len(frags), frags[0]}, {0, frags[1]}, {0, frags[0][1:]}, {0, append(bytes.Clone(frags[0]), 0)}, {0, flipped}, {0, nil},
	} {
		if err := op.LoadFragment(tt.k, tt.b); err == nil || !errors.Is(err, ErrShard) {
			t.Errorf("LoadFragment(%d, %d bytes) = %v", tt.k, len(tt.b), err)
		}
	}
	if got := op.Ad(0); got.ID != "" {
		t.Errorf("after refused loads: %+v", got)
	}
	// A fragment the shard's table vouches for (its CRC put in the table)
	// is refused all the same when its adStrs send an ad's strings out of
	// it, when it is shorter or longer than the table says, or when it is
	// not 4-byte aligned.
	vouched := func(f []byte) error {
		forged, _ := Open(b)
		forged.frags = slices.Clone(forged.frags)
		forged.frags[3] = crc32c(f)
		return forged.LoadFragment(1, f)
	}
	for i, stray := range strayStrings {
		f := bytes.Clone(frags[1])
		recs := unsafe.Slice((*adStrs)(unsafe.Pointer(&f[0])), 2)
		stray(&recs[1], op.fragStart(1))
		if vouched(f) == nil {
			t.Errorf("stray strings %d: loaded", i)
		}
	}
	for name, f := range map[string][]byte{
		"cut in its records": frags[1][:adStrsBytes],
		"a byte short":       frags[1][:len(frags[1])-1],
		"a byte more":        append(bytes.Clone(frags[1]), 'x'),
		"misaligned":         append(make([]byte, 1, len(frags[1])+1), frags[1]...)[1:],
	} {
		if vouched(f) == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if err := vouched(bytes.Clone(frags[1])); err != nil {
		t.Errorf("the fragment itself, vouched for: %v", err)
	}
	if err := op.LoadFragment(0, frags[0]); err != nil {
		t.Fatal(err)
	}
	if got := op.Ad(0); got.ID != ix.Ad(0).ID {
		t.Errorf("after loading: %q, want %q", got.ID, ix.Ad(0).ID)
	}
}

// openWhole opens the fixture's page shard, whole.
func openWhole(t *testing.T) *Index {
	t.Helper()
	whole, _ := mustBuild(t, fixture()).EncodePage(0)
	w, err := Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestShardRejectsBadFragmentTable: a fragment table that does not fit the
// ads, or whose fragments are out of order or empty, is refused, and so is
// a shard in fragments that holds strings itself.
func TestShardRejectsBadFragmentTable(t *testing.T) {
	for name, tt := range map[string]struct {
		damage func(ix *Index)
		want   string
	}{
		"one too few":      {func(ix *Index) { ix.frags = ix.frags[:len(ix.frags)-2] }, "bad fragment table"},
		"one too many":     {func(ix *Index) { ix.frags = append(ix.frags, ix.frags[len(ix.frags)-2]+1, 0) }, "bad fragment table"},
		"empty fragment":   {func(ix *Index) { ix.frags[2] = ix.frags[0] }, "bad fragment table"},
		"out of order":     {func(ix *Index) { ix.frags[0], ix.frags[2] = ix.frags[2], ix.frags[0] }, "bad fragment table"},
		"strings too":      {func(ix *Index) { ix.strs = "x" }, "bad fragment table"},
		"table, not cut":   {func(ix *Index) { ix.per = 0 }, "bad string table"},
		"string table too": {func(ix *Index) { ix.recs = make([]adStrs, len(ix.ads)) }, "bad string table"},
		// A whole shard, with a fragment table of one fragment for all.
		"whole, with a table": {func(ix *Index) {
			w := openWhole(t)
			ix.per, ix.frags, ix.strs, ix.recs = 0, []uint32{uint32(len(w.strs)), 0}, w.strs, w.recs
		}, "bad fragment table"},
		// A whole shard whose string records are one short.
		"whole, records short": {func(ix *Index) {
			w := openWhole(t)
			ix.per, ix.frags, ix.strs, ix.recs = 0, nil, w.strs, w.recs[:len(w.recs)-1]
		}, "bad string table"},
	} {
		b, _ := mustBuild(t, fixture()).EncodePage(2)
		ix, err := Open(b)
		if err != nil {
			t.Fatal(err)
		}
		ix.frags = slices.Clone(ix.frags)
		ix.ads = slices.Clone(ix.ads)
		tt.damage(ix)
		if _, err := Open(ix.Encode()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open = %v, want %s", name, err, tt.want)
		}
	}
}

func TestShardRejectsDamage(t *testing.T) {
	b := mustBuild(t, fixture()).Encode()
	for n := 0; n < len(b); n += 1 + n/7 {
		if _, err := Open(b[:n]); err == nil {
			t.Fatalf("truncated to %d accepted", n)
		}
	}
	for i := 0; i < len(b); i += 13 {
		c := bytes.Clone(b)
		c[i] ^= 0x5a
		if _, err := Open(c); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
}

func TestShardMarket(t *testing.T) {
	ad := func(id string, ms ...Market) Ad {
		return Ad{ID: id, Kind: KindAdvertiser, Title: id, Keywords: []string{"handy"}, Landing: "https://" + id + "/",
			Advertiser: id, Markets: ms, BidMicros: 1000}
	}
	chDE, chFR := Market{Country: "ch", Lang: "de"}, Market{Country: "ch", Lang: "fr"}
	ix := mustBuild(t, []Ad{ad("a.de", de, chDE), ad("b.ch", chFR), ad("c.com", us, gb)})
	for _, tt := range []struct {
		country, lang string
		want          Market
		ok            bool
	}{
		{"de", "de", de, true},
		{"de", "", de, true},                    // one language in Germany
		{"ch", "", Market{Country: "ch"}, true}, // two in Switzerland: the country's own
		{"ch", "fr", chFR, true},
		{"de", "fr", Market{}, false}, // no such market
		{"", "de", Market{}, false},
		{"", "", Market{}, false},
		{"fr", "", Market{}, false},
	} {
		if m, ok := ix.ShardMarket(tt.country, tt.lang); m != tt.want || ok != tt.ok {
			t.Errorf("ShardMarket(%q, %q) = %v, %v; want %v, %v", tt.country, tt.lang, m, ok, tt.want, tt.ok)
		}
	}
	got := ix.ShardMarkets()
	want := append(ix.Markets(), Market{Country: "ch"})
	if !slices.Equal(got, want) {
		t.Errorf("ShardMarkets() = %v, want %v", got, want)
	}
}

// TestShardRejectsUnsortedCriteria: a shard whose checksum is right but
// whose criteria are out of order is refused; matching on it read past a
// criterion's terms and panicked.
func TestShardRejectsUnsortedCriteria(t *testing.T) {
	ad := func(id, kw string) Ad {
		return Ad{ID: id, Kind: KindAdvertiser, Title: id, Keywords: []string{kw}, Landing: "https://" + id + "/",
			Advertiser: id, Markets: []Market{de}, BidMicros: 1000}
	}
	ix := mustBuild(t, []Ad{ad("a.de", "zzz"), ad("b.de", "zzz yyy xxx")})
	if ix.critOff[1] != 1 || ix.critOff[2] != 4 {
		t.Fatalf("criteria %v %v, want [zzz] then [zzz yyy xxx]", ix.critOff, ix.critTerms)
	}
	// The long criterion first, the short one after it.
	ix.critTerms = append(slices.Clone(ix.critTerms[1:4]), ix.critTerms[0])
	ix.critOff = []uint32{0, 3, 4}
	if _, err := Open(ix.Encode()); err == nil || !strings.Contains(err.Error(), "criterion out of order") {
		t.Fatalf("Open = %v, want criterion out of order", err)
	}
}

// strayStrings move an ad's strings out of its part of the arena, which
// starts at start: past its end, before its start, or by lengths that wrap
// around 2^32.
var strayStrings = []func(r *adStrs, start uint32){
	func(r *adStrs, _ uint32) { r.lens[fKeywords] += 1 << 20 },
	func(r *adStrs, _ uint32) { r.str = 1<<32 - 1 },
	func(r *adStrs, start uint32) { r.str, r.lens[fID] = start-1, r.lens[fID]+1 },
	func(r *adStrs, _ uint32) {
		for f := range r.lens {
			r.lens[f] = 1<<32 - 1
		}
	},
}

// TestShardRejectsStringsOutside: an ad whose strings would end past the
// arena is refused, lengths that wrap around 2^32 too.
func TestShardRejectsStringsOutside(t *testing.T) {
	for _, lens := range strayStrings {
		ix := mustBuild(t, fixture())
		ix.recs = slices.Clone(ix.recs)
		lens(&ix.recs[len(ix.recs)-1], 0)
		if _, err := Open(ix.Encode()); err == nil || !strings.Contains(err.Error(), "string out of bounds") {
			t.Errorf("Open = %v, want string out of bounds", err)
		}
	}
}

func FuzzOpen(f *testing.F) {
	good := mustBuild(f, fixture()).Encode()
	f.Add(good)
	page, _ := mustBuild(f, fixture()).EncodePage(0)
	f.Add(page)
	page, frags := mustBuild(f, fixture()).EncodePage(2)
	f.Add(page)
	f.Add(good[:100])
	f.Add([]byte("ADLKSHRD"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Fix the checksum so the fuzzer reaches the structural checks.
		if len(b) >= headerSize && string(b[:8]) == shardMagic {
			b = bytes.Clone(b)
			putCRC(b)
		}
		ix, err := Open(b)
		if err != nil {
			return
		}
		// The fixture's fragments load where the table matches them; the
		// rest are refused. Matching never panics either way.
		for k := range ix.Fragments() {
			if k%2 == 0 && k < len(frags) {
				ix.LoadFragment(k, frags[k])
			}
		}
		for _, q := range []Query{{Text: "lg handy"}, {Text: "apple iphone 5 handy", Dist: DistLow}, {Text: "nokia", Dist: DistNone}, {Page: true, Text: "Apple iPhone 5"}} {
			hits := ix.Match(&q)
			for _, k := range ix.Missing(hits) {
				if k < 0 || k >= ix.Fragments() {
					t.Fatalf("Missing gave fragment %d of %d", k, ix.Fragments())
				}
			}
			ix.AppendResponse(nil, hits, &LinkOptions{Fields: ^Fields(0)})
		}
		for i := range ix.Len() {
			ix.Ad(i)
		}
		ix.Lookup("handy-bestkauf.de")
	})
}

// FuzzLoadFragment: whatever bytes fragment k holds, once the shard's
// table vouches for them (their CRC put in it), loading them and matching
// never panic, and what loads gives its ads' strings from inside its own
// strings. Three ads a fragment: the last of the fixture's is shorter.
func FuzzLoadFragment(f *testing.F) {
	page, frags := mustBuild(f, fixture()).EncodePage(3)
	for k, fr := range frags {
		f.Add(uint8(k), fr)
	}
	f.Fuzz(func(t *testing.T, k uint8, b []byte) {
		ix, err := Open(page)
		if err != nil {
			t.Fatal(err)
		}
		n := int(k) % ix.Fragments()
		ix.frags = slices.Clone(ix.frags)
		ix.frags[2*n+1] = crc32c(b)
		b = bytes.Clone(b)
		if ix.LoadFragment(n, b) != nil {
			return
		}
		own := string(b[len(ix.fragRecs[n])*adStrsBytes:])
		for i := n * 3; i < min(n*3+3, ix.Len()); i++ {
			for fl := range numStrFields {
				if s := ix.field(i, fl); !strings.Contains(own, s) {
					t.Fatalf("ad %d string %d %q is not among the fragment's strings", i, fl, s)
				}
			}
		}
		for _, q := range []Query{{Text: "lg handy"}, {Text: "nokia", Dist: DistNone}, {Page: true, Text: "Apple iPhone 5"}} {
			ix.AppendResponse(nil, ix.Match(&q), &LinkOptions{Fields: ^Fields(0)})
		}
	})
}

// putCRC rewrites a shard's checksum after a test changed its bytes.
func putCRC(b []byte) {
	binary.LittleEndian.PutUint32(b[16:], crc32c(b[headerSize:]))
}
