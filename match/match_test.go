package match

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

var (
	de = Market{Country: "de", Lang: "de"}
	us = Market{Country: "us", Lang: "en"}
	gb = Market{Country: "gb", Lang: "en"}
)

// fixture is a small catalog with the seed's documented examples.
func fixture() []Ad {
	return []Ad{
		{ID: "handy-bestkauf.de", Kind: KindAdvertiser, Title: "handy-bestkauf.de - gebrauchte Handys verkaufen",
			Keywords: []string{"lg handy", "handy verkaufen"}, Landing: "https://handy-bestkauf.de/", Advertiser: "handy-bestkauf.de",
			Markets: []Market{de}, BidMicros: 450000},
		{ID: "AMAZON.1.B00JVL2X1I", Kind: KindProduct, Title: "Nokia Lumia 630 Smartphone 4,5 Zoll schwarz",
			Keywords: []string{"handy", "smartphone"}, Manufacturer: "Nokia", Model: "Lumia 630", Category: "Handy",
			GTIN: "6438158655587", PriceCents: 8999, Currency: "EUR", Logo: "https://img.example/nokia-{dim}.png",
			Landing: "https://www.amazon.de/dp/B00JVL2X1I", Advertiser: "amazon.de", Markets: []Market{de}, BidMicros: 300000},
		{ID: "EBAY.4.291181826279", Kind: KindProduct, Title: "Apple iPhone 5 16GB weiß",
			Manufacturer: "Apple", Model: "iPhone 5", Category: "Smartphone", PriceCents: 19900, Currency: "EUR",
			Logo: "https://img.example/iphone5-{dim}.png", Landing: "https://www.ebay.de/itm/291181826279",
			Advertiser: "ebay.de", Markets: []Market{de, us, gb}, BidMicros: 250000},
		{ID: "OTTO.2.555", Kind: KindProduct, Title: "Nokia Lumia 630 Dual-SIM", Manufacturer: "Nokia", Model: "Lumia 630",
			Category: "Handy", GTIN: "6438158655587", PriceCents: 9499, Currency: "EUR", Landing: "https://www.otto.de/p/555",
			Advertiser: "otto.de", Markets: []Market{de}, BidMicros: 200000},
		{ID: "mueller-mode.de", Kind: KindAdvertiser, Title: "Müller Mode - Jacken und Mäntel", Keywords: []string{"müller jacken", "wintermantel"},
			Landing: "https://mueller-mode.de/", Advertiser: "mueller-mode.de", Markets: []Market{de}, BidMicros: 100000},
		{ID: "COUPON.1.7", Kind: KindCoupon, Title: "10% off wireless headphones", Keywords: []string{"headphones coupon", "wireless headphones"},
			Landing: "https://audio.example/coupon", Advertiser: "audio.example", Markets: []Market{us, gb}, BidMicros: 50000},
		{ID: "BESTBUY.1.9", Kind: KindProduct, Title: "Sony WH-1000XM4 Wireless Noise Cancelling Headphones", Manufacturer: "Sony",
			Model: "WH-1000XM4", Category: "Headphones", Description: "Industry-leading noise cancellation, 30 hour battery.",
			PriceCents: 27999, Currency: "USD", Logo: "https://img.example/sony.png", Landing: "https://bestbuy.example/p/9",
			Advertiser: "bestbuy.example", Markets: []Market{us}, BidMicros: 400000},
		{ID: "batteries.example", Kind: KindAdvertiser, Title: "Batteries for every device", Keywords: []string{"aa batteries", "battery pack"},
			Landing: "https://batteries.example/", Advertiser: "batteries.example", Markets: []Market{us, gb}, BidMicros: 150000},
	}
}

func mustBuild(t testing.TB, ads []Ad) *Index {
	t.Helper()
	ix, err := Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func ids(ix *Index, hits []Hit) []string {
	var s []string
	for _, h := range hits {
		s = append(s, ix.Ad(h.Ad).ID)
	}
	return s
}

func TestSeedSearchExample(t *testing.T) {
	ix := mustBuild(t, fixture())
	hits := ix.Match(&Query{Text: "lg handy", Country: "de"})
	got := string(ix.AppendResponse(nil, hits[:2], &LinkOptions{Context: ContextSearch, ClickBase: "http://r.example/v1/redirect?", ClickQuery: clickQuery(ContextSearch, "1", "2", "")}))
	want := `{"link":[` +
		`{"title":"handy-bestkauf.de - gebrauchte Handys verkaufen","keywords":["lg handy"],"ad":"http://r.example/v1/redirect?type=search\u0026adId=handy-bestkauf.de\u0026adType=advertiser\u0026api_key=1\u0026site_id=2\u0026criterionId=lg+handy","display_type":["link"]},` +
		`{"title":"Nokia Lumia 630 Smartphone 4,5 Zoll schwarz","keywords":["handy"],"ad":"http://r.example/v1/redirect?type=search\u0026adId=AMAZON.1.B00JVL2X1I\u0026adType=product\u0026api_key=1\u0026site_id=2\u0026criterionId=handy","display_type":["widget"]}` +
		`]}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	var v struct {
		Link []struct{ Ad string }
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(v.Link[0].Ad)
	if err != nil || u.Query().Get("criterionId") != "lg handy" {
		t.Fatalf("ad URL %q does not decode: %v", v.Link[0].Ad, err)
	}
}

func TestSeedPageExample(t *testing.T) {
	ix := mustBuild(t, fixture())
	text := "Im Test: Das Apple iPhone 5 ist dünner als sein Vorgänger. Apple hat beim iPhone 5 vieles richtig gemacht."
	hits := ix.Match(&Query{Page: true, Title: "Testbericht", Text: text})
	if len(hits) == 0 || ix.Ad(hits[0].Ad).ID != "EBAY.4.291181826279" {
		t.Fatalf("hits %v", ids(ix, hits))
	}
	h := hits[0]
	if !slices.Equal(h.Keywords, []string{"Apple", "iPhone 5"}) || h.Criterion != "Apple iPhone 5" {
		t.Fatalf("keywords %q criterion %q", h.Keywords, h.Criterion)
	}
	js := string(ix.AppendLinks(nil, hits[:1], &LinkOptions{Context: ContextPage, ClickBase: "http://r/v1/redirect?", ClickQuery: clickQuery(ContextPage, "1", "2", "")}))
	for _, want := range []string{`criterionId=Apple+iPhone+5`, `type=intext`, `"display_type":["link","widget"]`} {
		if !strings.Contains(js, want) {
			t.Errorf("%s lacks %s", js, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, group := range [][]string{
		{"Müller", "Mueller", "muller", "MÜLLER"},
		{"Handy", "handy", "Handys", "HANDYS"},
		{"battery", "batteries"},
		{"laptop", "laptops", "Laptops"},
		{"Kopfhörer", "kopfhoerer", "Kopfhorer"},
		{"Fußball", "Fussball"},
		{"headphones", "headphone"},
		{"Tasche", "Taschen"},
		// A soft hyphen inside a word is a hyphenation hint, not a break.
		{"Handyhülle", "Handy\u00adhülle", "Handy\u00adhül\u00adle"},
		{"Handy hülle", "Handy\u00ad hülle", "\u00adHandy hülle\u00ad"},
	} {
		for _, s := range group[1:] {
			if Normalize(s) != Normalize(group[0]) {
				t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q", s, Normalize(s), group[0], Normalize(group[0]))
			}
		}
	}
	if Normalize("iPhone 5") == Normalize("iPhone 6") {
		t.Error("numbers must stay distinct")
	}
}

func TestUmlautMatches(t *testing.T) {
	ix := mustBuild(t, fixture())
	for _, q := range []string{"Müller Jacken", "mueller jacken", "muller jacke"} {
		if got := ids(ix, ix.Match(&Query{Text: q})); !slices.Contains(got, "mueller-mode.de") {
			t.Errorf("%q: %v", q, got)
		}
	}
}

func TestDistWidens(t *testing.T) {
	ix := mustBuild(t, fixture())
	q := "wireless noise headphones battery dual"
	var counts []int
	var prev []string
	for _, d := range []Dist{DistHigh, DistLow, DistNone} {
		got := ids(ix, ix.Match(&Query{Text: q, Dist: d, Size: MaxSize}))
		for _, id := range prev {
			if !slices.Contains(got, id) {
				t.Errorf("dist %d lost %s", d, id)
			}
		}
		prev = got
		counts = append(counts, len(got))
	}
	if !(counts[0] < counts[1] && counts[1] < counts[2]) {
		t.Fatalf("counts high/low/none = %v, want strictly widening", counts)
	}
}

func TestOperator(t *testing.T) {
	ix := mustBuild(t, fixture())
	or := ids(ix, ix.Match(&Query{Text: "nokia dual", Dist: DistNone}))
	and := ids(ix, ix.Match(&Query{Text: "nokia dual", Dist: DistNone, Operator: OpAnd}))
	if len(or) != 2 || !slices.Equal(and, []string{"OTTO.2.555"}) {
		t.Fatalf("or %v and %v", or, and)
	}
	if got := ix.Match(&Query{Text: "nokia zzzunknown", Dist: DistNone, Operator: OpAnd}); len(got) != 0 {
		t.Fatalf("and with an unknown term: %v", ids(ix, got))
	}
}

func TestFilters(t *testing.T) {
	ix := mustBuild(t, fixture())
	for _, tc := range []struct {
		q    Query
		want []string
	}{
		{Query{Text: "wireless headphones", Country: "gb"}, []string{"COUPON.1.7"}},
		{Query{Text: "wireless headphones", Country: "us", Kinds: Kinds(0).Add(KindProduct)}, []string{"BESTBUY.1.9"}},
		{Query{Text: "headphones", Lang: "de"}, nil},
		{Query{Text: "handy", Kinds: Kinds(0).Add(KindAdvertiser)}, nil},
		{Query{Text: "handy", Size: 1}, []string{"AMAZON.1.B00JVL2X1I"}},
	} {
		if got := ids(ix, ix.Match(&tc.q)); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: got %v want %v", tc.q, got, tc.want)
		}
	}
}

func TestDistinctAdvertiser(t *testing.T) {
	ix := mustBuild(t, fixture())
	// Amazon and Otto offer the same GTIN.
	two := ids(ix, ix.Match(&Query{Text: "nokia lumia 630"}))
	one := ids(ix, ix.Match(&Query{Text: "nokia lumia 630", DistinctAdvertiser: 1}))
	if len(two) != 2 || len(one) != 1 {
		t.Fatalf("default %v, distinct=1 %v", two, one)
	}
}

func TestFieldsJSON(t *testing.T) {
	ix := mustBuild(t, fixture())
	hits := ix.Match(&Query{Text: "nokia lumia 630"})
	o := &LinkOptions{Context: ContextSearch, ClickBase: "https://r/v1/redirect?", ClickQuery: clickQuery(ContextSearch, "k", "s", "camp:1"),
		Fields: FieldPrice | FieldAdType | FieldGTIN | FieldManufacturer, LogoDim: "90X90"}
	var v struct {
		Link []map[string]any
	}
	if err := json.Unmarshal(ix.AppendResponse(nil, hits, o), &v); err != nil {
		t.Fatal(err)
	}
	first, second := v.Link[0], v.Link[1]
	if p := first["price"].(map[string]any); p["amount"] != "89.99" || p["currency"] != "EUR" {
		t.Errorf("price %v", first["price"])
	}
	if first["logo"] != "https://img.example/nokia-90x90.png" || first["ad_type"] != "product" || first["gtin"] != "6438158655587" {
		t.Errorf("entry %v", first)
	}
	if _, ok := second["logo"]; ok {
		t.Errorf("logo on an ad without one: %v", second)
	}
	if !strings.Contains(first["ad"].(string), "&yk_tag=camp%3A1") {
		t.Errorf("ad %v", first["ad"])
	}
}

func TestJSONEscaping(t *testing.T) {
	for _, s := range []string{"a\"b\\c", "<script>&", "\u2028\u2029", "bad\xffutf8", "tab\tnl\n\x01"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		want, _ := json.Marshal(s)
		if !bytes.Equal(b, want) {
			t.Errorf("%q: got %s, encoding/json %s", s, b, want)
		}
	}
}

func FuzzJSONString(f *testing.F) {
	f.Add("x<y>\u2028")
	f.Add("a plain run of ascii, then <tags> & \"quotes\" \\ and \x01 \xff\u2029é after")
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> invalid JSON %s", s, b)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); got != want && bytes.Equal([]byte(s), []byte(want)) {
			t.Fatalf("%q round trips to %q", s, got)
		}
		// Skipping plain bytes eight at a time changes nothing: the same
		// string written in pieces too short for it, cut only between two
		// ASCII bytes (where decoding cannot differ), gives the same bytes.
		var pieces []byte
		for start, k := 0, 1; k <= len(s); k++ {
			if k == len(s) || k-start >= 7 && s[k-1] < utf8.RuneSelf && s[k] < utf8.RuneSelf {
				pieces = appendJSONChars(pieces, s[start:k])
				start = k
			}
		}
		if whole := appendJSONChars(nil, s); !bytes.Equal(whole, pieces) {
			t.Fatalf("%q: %s whole, %s in pieces", s, whole, pieces)
		}
	})
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build([]Ad{{ID: "a"}, {ID: "a"}}); err == nil {
		t.Error("duplicate id accepted")
	}
	if _, err := Build([]Ad{{}}); err == nil {
		t.Error("empty id accepted")
	}
	if _, err := Build([]Ad{{ID: "a", Kind: 9}}); err == nil {
		t.Error("bad kind accepted")
	}
}

func TestAdRoundTrip(t *testing.T) {
	ads := fixture()
	ix := mustBuild(t, ads)
	for i, want := range ads {
		got := ix.Ad(i)
		// The index keeps a bid rounded (TestRoundBid).
		want.BidMicros = int64(roundBid(want.BidMicros))
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			t.Errorf("ad %d:\n%s\n%s", i, gj, wj)
		}
		if j, ok := ix.Lookup(want.ID); !ok || j != i {
			t.Errorf("Lookup(%q) = %d, %v", want.ID, j, ok)
		}
	}
	if _, ok := ix.Lookup("nope.example"); ok {
		t.Error("Lookup found an unknown id")
	}
}

// TestRoundBid: the index keeps a bid's three leading bits, rounded to the
// nearest, so a shard shows a bid's band and not the bid; a bid that
// fits three bits stays as it is, and no bid leaves [0, 2^32-1].
func TestRoundBid(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want uint32
	}{
		{-5, 0}, {0, 0}, {7, 7}, {8, 8}, {9, 10}, {10, 10}, {11, 12}, {15, 16},
		{450_000, 458_752}, {500_000, 524_288}, {400_000, 393_216},
		{350_000, 327_680}, {300_000, 327_680}, {1 << 40, 7 << 29}, {1<<32 - 1, 7 << 29},
	} {
		if got := roundBid(c.in); got != c.want {
			t.Errorf("roundBid(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	// Every rounded bid has at most three significant bits, and lies
	// within an eighth of the bid (half a step of the finest band).
	for b := int64(1); b < 1<<32; b = b*37/29 + 1 {
		r := roundBid(b)
		if r>>(bits.TrailingZeros32(r)) >= 8 {
			t.Fatalf("roundBid(%d) = %d has more than three significant bits", b, r)
		}
		if d := int64(r) - b; (d*8 > b || -d*8 > b) && b <= maxBid {
			t.Fatalf("roundBid(%d) = %d is further than an eighth away", b, r)
		}
	}
}

// randomText makes page-like text from the catalog's words and noise.
func randomText(r *rand.Rand, words []string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString([]string{" ", " ", " ", ", ", ". ", "\n", "-"}[r.IntN(7)])
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

func TestReduceKeepsPageAnswer(t *testing.T) {
	ix := mustBuild(t, fixture())
	words := strings.Fields("Apple iPhone 5 Nokia Lumia 630 handy Handys LG lg Handy der die das und test wireless headphones Sony WH-1000XM4 Müller Jacken Mueller batteries AA battery pack smartphone")
	r := rand.New(rand.NewPCG(1, 2))
	o := &LinkOptions{Context: ContextPage, ClickBase: "r/v1/redirect?", ClickQuery: clickQuery(ContextPage, "", "", "")}
	for range 300 {
		title, text := randomText(r, words, 1+r.IntN(8)), randomText(r, words, r.IntN(200))
		rt, rx := ix.Reduce(title, text)
		full := ix.AppendLinks(nil, ix.Match(&Query{Page: true, Title: title, Text: text}), o)
		red := ix.AppendLinks(nil, ix.Match(&Query{Page: true, Title: rt, Text: rx}), o)
		if !bytes.Equal(full, red) {
			t.Fatalf("title %q text %q\nreduced %q / %q\nfull    %s\nreduced %s", title, text, rt, rx, full, red)
		}
		if len(rx) > len(text) {
			t.Fatalf("reduced text grew")
		}
	}
}

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

func FuzzMatch(f *testing.F) {
	ix := mustBuild(f, fixture())
	f.Add("lg handy", "", uint8(0), false)
	f.Add("Apple iPhone 5. Apple", "iPhone", uint8(2), true)
	f.Fuzz(func(t *testing.T, text, title string, opt uint8, page bool) {
		q := &Query{Text: text, Title: title, Page: page, Dist: Dist(opt % 3), Operator: Operator(opt >> 2 & 1)}
		a := ix.AppendResponse(nil, ix.Match(q), &LinkOptions{})
		if !json.Valid(a) {
			t.Fatalf("invalid JSON %s", a)
		}
		if page {
			rt, rx := ix.Reduce(title, text)
			b := ix.AppendResponse(nil, ix.Match(&Query{Page: true, Title: rt, Text: rx}), &LinkOptions{})
			if !bytes.Equal(a, b) {
				t.Fatalf("reduce changed the answer:\n%s\n%s", a, b)
			}
		}
	})
}

func TestLn(t *testing.T) {
	for _, x := range []float64{1e-9, 0.3, 1, 2, 2.718281828459045, 10, 12345.678, 1e12} {
		if got, want := ln(x), mathLog(x); got-want > 1e-12*max(1, want) || want-got > 1e-12*max(1, -want) {
			t.Errorf("ln(%v) = %v, want %v", x, got, want)
		}
	}
}

func mathLog(x float64) float64 { return math.Log(x) }

// putCRC rewrites a shard's checksum after a test changed its bytes.
func putCRC(b []byte) {
	binary.LittleEndian.PutUint32(b[16:], crc32c(b[headerSize:]))
}

func TestSynonymsAndCompounds(t *testing.T) {
	ads := []Ad{
		{ID: "n", Kind: KindProduct, Title: "HP EliteBook Notebook 14 inch", Category: "notebook", Markets: []Market{us}},
		{ID: "h", Kind: KindProduct, Title: "Jabra Evolve Headset", Category: "headset", Markets: []Market{us}},
		{ID: "c", Kind: KindProduct, Title: "Notebook sleeve", Category: "notebook sleeve", Markets: []Market{us}},
	}
	ix := mustBuild(t, ads)
	if got := ids(ix, ix.Match(&Query{Text: "laptop", Dist: DistNone})); len(got) != 2 || !slices.Contains(got, "n") {
		t.Errorf("laptop: %v, want the notebook and the sleeve", got)
	}
	hits := ix.Match(&Query{Text: "head set", Dist: DistNone})
	if got := ids(ix, hits); !slices.Equal(got, []string{"h"}) || !slices.Equal(hits[0].Keywords, []string{"head", "set"}) {
		t.Errorf("head set: %v %v", got, hits)
	}
	if got := ix.Match(&Query{Text: "laptop", Dist: DistNone, Operator: OpAnd}); len(got) != 2 {
		t.Errorf("and over a synonym: %v", ids(ix, got))
	}
	if got := ix.Match(&Query{Text: "laptop zzz", Dist: DistNone, Operator: OpAnd}); len(got) != 0 {
		t.Errorf("and with an unknown word: %v", ids(ix, got))
	}
}

func TestKeywordsLeaveOutInnerCriteria(t *testing.T) {
	ads := fixture()
	ads[2].Keywords = []string{"iphone"} // the iPhone 5 is also known as "iPhone"
	ix := mustBuild(t, ads)
	hits := ix.Match(&Query{Page: true, Text: "Das iPhone im Test: Apple hat beim iPhone 5 vieles richtig gemacht."})
	if len(hits) == 0 || !slices.Equal(hits[0].Keywords, []string{"Apple", "iPhone 5"}) {
		t.Fatalf("keywords %v", hits)
	}
}

// TestHostileInputsStayCheap feeds the inputs that once made matching
// quadratic: an ad with thousands of bid phrases all named on a page, a
// brand thousands of criteria start with, a query repeating one word. It
// checks the answers' shape; a regression shows as a test that takes
// seconds instead of milliseconds.
func TestHostileInputsStayCheap(t *testing.T) {
	var kws []string
	var page strings.Builder
	for i := range 2000 {
		kws = append(kws, "kw"+itoa(i))
	}
	for range 16 {
		for _, k := range kws {
			page.WriteString(k + " ")
		}
	}
	ads := []Ad{{ID: "many.example", Kind: KindAdvertiser, Title: "Many", Keywords: kws, Markets: []Market{us}}}
	for i := range 3000 {
		ads = append(ads, Ad{ID: "TV." + itoa(i), Kind: KindProduct, Title: "tv", Manufacturer: "Samsung", Keywords: []string{"tv x" + itoa(i), "samsung x" + itoa(i)}, Markets: []Market{us}})
	}
	ix := mustBuild(t, ads)
	hits := ix.Match(&Query{Page: true, Text: page.String()})
	if len(hits) == 0 || len(hits[0].Keywords) != maxKeywords {
		t.Fatalf("page of bid phrases: %d hits, keywords %v", len(hits), hits)
	}
	brand := strings.Repeat("samsung ", MaxPageBytes/8)
	if hits := ix.Match(&Query{Page: true, Text: brand}); len(hits) == 0 {
		t.Fatal("a page naming the brand found nothing")
	}
	if _, text := ix.Reduce("", brand); strings.Count(text, "\n") >= maxOccurrences {
		t.Fatalf("reduced text keeps %d passages", strings.Count(text, "\n")+1)
	}
	q := strings.Repeat("tv ", MaxQueryBytes/3)
	hits = ix.Match(&Query{Text: q, Dist: DistLow})
	if len(hits) == 0 || len(hits[0].Keywords) != 1 {
		t.Fatalf("repeated word: %v", hits)
	}
}

// The logo URL a response carries is written in place; it must be the JSON
// string of LogoURL, whatever the template holds.
func TestAppendLogoURLEqualsLogoURL(t *testing.T) {
	tmpls := []string{
		"", "https://cdn.example/logo.png", "https://cdn.example/{dim}/logo.png",
		"{dim}", "x{dim}{dim}y", "{di", "a{Dim}b", `q"<&>\{dim}` + "\u2028é\xff",
		"\xe2\x82{dim}\xac", "a\xe2{dim}", "{dim}\x82b", "https://x/{dim}?a=1&b=\n",
	}
	for _, tmpl := range tmpls {
		for _, dim := range append(LogoDims, "", "AbC", "é\"X\\") {
			want := appendJSONString(nil, LogoURL(tmpl, dim))
			got := append(appendLogoURL([]byte{'"'}, tmpl, dim), '"')
			if string(got) != string(want) {
				t.Errorf("appendLogoURL(%q, %q) = %s, want %s", tmpl, dim, got, want)
			}
		}
	}
}

func TestMarketString(t *testing.T) {
	for m, want := range map[Market]string{
		{Country: "de", Lang: "de"}: "de-DE",
		{Country: "ch"}:             "CH", // a country's own shard
	} {
		if got := m.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", m, got, want)
		}
		if back, ok := ParseMarket(want); m.Lang != "" && (!ok || back != m) {
			t.Errorf("ParseMarket(%q) = %v, %v", want, back, ok)
		}
	}
}

// TestSoftHyphenKeyword: a word the page hyphenates with soft hyphens
// matches, and its keyword and criterion read as the word does.
func TestSoftHyphenKeyword(t *testing.T) {
	ix := mustBuild(t, []Ad{{ID: "case.de", Kind: KindAdvertiser, Title: "Hüllen", Keywords: []string{"Handyhülle"},
		Advertiser: "case.de", Markets: []Market{de}, BidMicros: 100000}})
	for _, page := range []bool{false, true} {
		hits := ix.Match(&Query{Page: page, Text: "Eine Handy\u00adhül\u00adle für das Telefon"})
		if len(hits) != 1 || !slices.Equal(hits[0].Keywords, []string{"Handyhülle"}) || hits[0].Criterion != "Handyhülle" {
			t.Errorf("page %v: %+v, want the ad with keyword and criterion \"Handyhülle\"", page, hits)
		}
	}
}

// TestScratchReused: scratch goes back to the pool all zero after every
// kind of query, and a query on reused scratch answers as one on fresh
// scratch does. Its slots replace maps, and a slot left set would change
// the next query's answer.
func TestScratchReused(t *testing.T) {
	ads := fixture()
	reused, fresh := mustBuild(t, ads), mustBuild(t, ads)
	words := strings.Fields("Apple iPhone 5 Nokia Lumia 630 handy Handys LG lg Handy gebrauchte test wireless headphones Sony WH-1000XM4 Müller Jacken batteries AA battery pack smartphone")
	r := rand.New(rand.NewPCG(3, 4))
	o := &LinkOptions{ClickBase: "r/v1/redirect?", ClickQuery: clickQuery("", "", "", ""), Fields: ^Fields(0)}
	for i := range 600 {
		q := Query{Text: randomText(r, words, 1+r.IntN(12)), Size: 1 + r.IntN(20), DistinctAdvertiser: 1 + r.IntN(3)}
		switch i % 5 {
		case 0:
			q.Page, q.Title = true, randomText(r, words, r.IntN(4))
		case 1:
			q.Dist = DistLow
		case 2:
			q.Dist = DistNone
		case 3:
			q.Dist, q.Operator = DistNone, OpAnd
		}
		got := reused.AppendLinks(nil, reused.Match(&q), o)
		fresh.scratches = nil
		want := fresh.AppendLinks(nil, fresh.Match(&q), o)
		if !bytes.Equal(got, want) {
			t.Fatalf("query %+v on reused scratch:\n%s\nfresh:\n%s", q, got, want)
		}
		if len(reused.scratches) != 1 {
			t.Fatalf("%d scratches pooled after one query at a time", len(reused.scratches))
		}
		sc := reused.scratches[0]
		for name, dirty := range map[string]bool{
			"critSlot": slices.ContainsFunc(sc.critSlot, func(v int32) bool { return v != 0 }),
			"adSlot":   slices.ContainsFunc(sc.adSlot, func(v int32) bool { return v != 0 }),
			"acc":      slices.ContainsFunc(sc.acc, func(v float64) bool { return v != 0 }),
			"mask":     slices.ContainsFunc(sc.mask, func(v uint32) bool { return v != 0 }),
		} {
			if dirty {
				t.Fatalf("query %+v left scratch %s dirty", q, name)
			}
		}
	}
}
