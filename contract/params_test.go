package contract

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/adlink/adlink/match"
)

// alpha2 is a lower-case two-letter code.
var alpha2 = regexp.MustCompile(`^[a-z]{2}$`)

// iso3166 lists the assigned ISO 3166-1 alpha-2 codes.
const iso3166 = "ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bl bm bn bo bq br bs bt bv bw by bz " +
	"ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg eh er es et fi fj fk fm fo fr " +
	"ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im in io iq ir is it je jm jo jp " +
	"ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md me mf mg mh mk ml mm mn mo mp mq mr ms mt " +
	"mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw " +
	"sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st sv sx sy sz tc td tf tg th tj tk tl tm tn to tr tt tv tw tz " +
	"ua ug um us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw"

// TestCountries: loc accepts exactly the codes of the list, in either
// case.
func TestCountries(t *testing.T) {
	list := strings.Fields(iso3166)
	if len(list) != 249 {
		t.Fatalf("the list has %d codes", len(list))
	}
	want := map[string]bool{}
	for _, c := range list {
		want[c] = true
	}
	for a := byte('a'); a <= 'z'; a++ {
		for b := byte('a'); b <= 'z'; b++ {
			for _, s := range []string{string([]byte{a, b}), string([]byte{a - 32, b}), string([]byte{a - 32, b - 32})} {
				v, msg := ParseCountry(s)
				if got := msg == ""; got != want[string([]byte{a, b})] || IsCountry(s) != got {
					t.Errorf("loc=%s: %q %q, IsCountry %v", s, v, msg, IsCountry(s))
				} else if got && v != string([]byte{a, b}) {
					t.Errorf("loc=%s read as %q", s, v)
				}
			}
		}
	}
	for _, s := range []string{"", "d", "deu", "d\x00", "@a", "a[", "\xc4e", "d1"} {
		if IsCountry(s) {
			t.Errorf("IsCountry(%q)", s)
		}
	}
}

// iso639 lists the ISO 639-1 codes, then those withdrawn that pages and
// older software still write (iw for he, in for id, ...).
const (
	iso639 = "aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz " +
		"ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu " +
		"ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my " +
		"na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so " +
		"sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"
	iso639Withdrawn = "bh in iw ji jw mo sh"
)

// TestLanguages: lang accepts exactly the codes of the lists, in either
// case, as loc accepts only countries: a two-letter typo (ge for de) is
// refused, not answered with no ads.
func TestLanguages(t *testing.T) {
	list := strings.Fields(iso639)
	if len(list) != 183 {
		t.Fatalf("the list has %d codes", len(list))
	}
	want := map[string]bool{}
	for _, c := range append(list, strings.Fields(iso639Withdrawn)...) {
		want[c] = true
	}
	for a := byte('a'); a <= 'z'; a++ {
		for b := byte('a'); b <= 'z'; b++ {
			for _, s := range []string{string([]byte{a, b}), string([]byte{a - 32, b}), string([]byte{a - 32, b - 32})} {
				v, msg := ParseLang(s)
				if got := msg == ""; got != want[string([]byte{a, b})] {
					t.Errorf("lang=%s: %q %q", s, v, msg)
				} else if got && v != string([]byte{a, b}) {
					t.Errorf("lang=%s read as %q", s, v)
				} else if !got && !strings.HasPrefix(msg, "lang must be a two-letter ISO 639-1 language code") {
					t.Errorf("lang=%s: message %q", s, msg)
				}
			}
		}
	}
}

func TestParamRules(t *testing.T) {
	ok := func(what, msg string) {
		t.Helper()
		if msg != "" {
			t.Errorf("%s refused: %s", what, msg)
		}
	}
	bad := func(what, msg, names string) {
		t.Helper()
		if !strings.Contains(msg, names) {
			t.Errorf("%s: message %q does not name %q", what, msg, names)
		}
	}
	v, msg := ParseCountry("DE")
	ok("loc=DE", msg)
	if v != "de" {
		t.Errorf("loc=DE read as %q", v)
	}
	for _, s := range []string{"deu", "1", "d", "ü1", "", "xx", "XX", "zz", "uk", "eu", "aa"} {
		_, msg := ParseCountry(s)
		bad("loc="+s, msg, "loc must be a two-letter ISO 3166 country code (de, US) or use_geo, not ")
	}
	for _, s := range []string{"uk", "UK", "Uk"} {
		_, msg := ParseCountry(s)
		bad("loc="+s, msg, "(the United Kingdom is gb)")
	}
	if v, msg := ParseLang(UseLocale); v != UseLocale || msg != "" {
		t.Errorf("use_locale: %q %q", v, msg)
	}
	_, msg = ParseLang("german")
	bad("lang=german", msg, "lang must be")
	if f, msgs := ParseFields("price, logoad_type,,", SearchFieldNames); len(msgs) != 0 || f != match.FieldPrice|match.FieldLogo|match.FieldAdType {
		t.Errorf("fields: %v %v", f, msgs)
	}
	// The first bad item is named, as one bad value of any parameter is.
	if _, msgs := ParseFields("price,colour,gtin", PageFieldNames); len(msgs) != 1 || !strings.Contains(msgs[0], `"colour" is not one`) {
		t.Errorf("page fields colour and gtin: %v", msgs)
	}
	if d, msg := ParseLogoDim("90x90"); d != "90X90" || msg != "" {
		t.Errorf("logo.dim=90x90: %q %q", d, msg)
	}
	_, msg = ParseLogoDim("80X80")
	bad("logo.dim=80X80", msg, "75X75")
	if k, msgs := ParseKinds("product coupon", SearchKindNames); len(msgs) != 0 || !k.Has(match.KindCoupon) || k.Has(match.KindAdvertiser) {
		t.Errorf("product coupon: %v %v", k, msgs)
	}
	if _, msgs := ParseKinds("coupon", PageKindNames); len(msgs) != 1 {
		t.Errorf("coupon in the page context accepted")
	}
	for _, tc := range []struct {
		op, dist   string
		o          match.Operator
		d          match.Dist
		param, has string
	}{
		{"", "", match.OpOr, match.DistHigh, "", ""},
		{"and", "", match.OpAnd, match.DistNone, "", ""},
		{"and", "none", match.OpAnd, match.DistNone, "", ""},
		{"or", "low", match.OpOr, match.DistLow, "", ""},
		{"and", "high", 0, 0, "q_operator", "ctx.dist=none"},
		{"xor", "", 0, 0, "q_operator", "xor"},
		{"", "medium", 0, 0, "ctx.dist", "medium"},
	} {
		o, d, param, msg := ParseOperator(tc.op, tc.dist)
		if o != tc.o || d != tc.d || param != tc.param || !strings.Contains(msg, tc.has) || (tc.has == "") != (msg == "") {
			t.Errorf("%q/%q: %v %v %q %q", tc.op, tc.dist, o, d, param, msg)
		}
	}
	for _, s := range []string{"<script>", "", strings.Repeat("a", 65), "a b"} {
		_, msg := ParseYkTag(s)
		bad("yk_tag="+s, msg, "yk_tag must be")
	}
	for _, s := range []string{"0", "-1", "51", "abc", "1e1", " 5", "00051"} {
		_, msg := ParseCount("size", s, 1, match.MaxSize)
		bad("size="+s, msg, "from 1 to 50")
	}
	if n, msg := ParseCount("size", "050", 1, match.MaxSize); n != 50 || msg != "" {
		t.Errorf("size=050: %d %q", n, msg)
	}
	// Leading zeros count for nothing, however many; a long number is
	// refused, not wrapped round to one in range.
	for _, s := range []string{"5", "05", "0000000005", strings.Repeat("0", 1000) + "5"} {
		if n, msg := ParseCount("size", s, 1, match.MaxSize); n != 5 || msg != "" {
			t.Errorf("size=%.20s...: %d %q", s, n, msg)
		}
	}
	for _, s := range []string{"0000000000", "+5", "-05", "05 ", "0x5", "1" + strings.Repeat("0", 19),
		"18446744073709551621", "9223372036854775813", strings.Repeat("9", 100), "00000000051"} {
		_, msg := ParseCount("size", s, 1, match.MaxSize)
		bad("size="+s, msg, "size must be a whole number from 1 to 50")
	}
	if _, msg := ParseText(strings.Repeat("x", match.MaxQueryBytes+1)); !strings.Contains(msg, "bytes long") {
		t.Errorf("long q: %q", msg)
	}
	if _, msg := ParseText("bad\xff"); msg == "" {
		t.Error("invalid UTF-8 accepted")
	}
}

// FuzzParamRules checks that every rule either accepts a value it can
// return or names the parameter, and never panics.
func FuzzParamRules(f *testing.F) {
	for _, s := range []string{"de", "use_geo", "price,logo", "90X90", "product coupon", "and", "5", "tag:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, msg := ParseCountry(s); msg == "" && v != UseGeo && (!alpha2.MatchString(v) || !IsCountry(v)) {
			t.Fatalf("loc %q accepted as %q", s, v)
		}
		if v, msg := ParseLang(s); msg == "" && v != UseLocale && !alpha2.MatchString(v) {
			t.Fatalf("lang %q accepted as %q", s, v)
		}
		if _, msgs := ParseFields(s, SearchFieldNames); len(msgs) > 0 && !strings.HasPrefix(msgs[0], "fields") {
			t.Fatalf("fields message %q", msgs[0])
		}
		if _, msgs := ParseKinds(s, SearchKindNames); len(msgs) > 0 && !strings.HasPrefix(msgs[0], "ad_type") {
			t.Fatalf("ad_type message %q", msgs[0])
		}
		if n, msg := ParseCount("size", s, 1, match.MaxSize); msg == "" && (n < 1 || n > match.MaxSize) {
			t.Fatalf("size %q accepted as %d", s, n)
		}
		if v, msg := ParseYkTag(s); msg == "" && v != s {
			t.Fatalf("yk_tag %q changed to %q", s, v)
		}
		if v, msg := ParseText(s); msg == "" && (!utf8.ValidString(v) || len(v) > match.MaxQueryBytes) {
			t.Fatalf("q %q accepted as %q", s, v)
		}
		ParseOperator(s, s)
		ParseLogoDim(s)
	})
}

func TestMalformedQuery(t *testing.T) {
	const pre = "the query string is malformed: "
	for q, want := range map[string]string{
		"":                                    "",
		"q=lg+handy&loc=DE&&x":                "",
		"q=%C3%84rger%20%2b":                  "",
		"q=%zz&api_key=demo":                  pre + `invalid URL escape "%zz"`,
		"q=a%4":                               pre + `invalid URL escape "%4"`,
		"q=100%":                              pre + `invalid URL escape "%"`,
		"%g1=x&q=%zz":                         pre + `invalid URL escape "%g1"`,       // the name first
		"q=%\xff\xfeok":                       pre + `invalid URL escape "%\xff\xfe"`, // bytes that are no UTF-8
		"q=%\xe2\x82\xac":                     pre + `invalid URL escape "%\xe2\x82"`, // a character cut
		"q=%\u00e4":                           pre + `invalid URL escape "%ä"`,
		"q=%\x01":                             pre + `invalid URL escape "%\x01"`,
		"q=a;b":                               pre + "invalid semicolon separator in query",
		"q=%zz&x=;":                           pre + "invalid semicolon separator in query", // ';' wins, as in net/url
		"q=%zz&callback=alert(1);":            pre + "invalid semicolon separator in query",
		strings.Repeat("&", MaxQueryParams-1): "",
		strings.Repeat("&", MaxQueryParams) + "q=%zz;":   pre + "number of URL query parameters exceeded limit",
		"q=x" + strings.Repeat("&a=1", MaxQueryParams-1): "",
		"q=x" + strings.Repeat("&a=1", MaxQueryParams):   pre + "number of URL query parameters exceeded limit",
	} {
		if got := MalformedQuery(q); got != want {
			t.Errorf("MalformedQuery(%q) = %q, want %q", q, got, want)
		}
	}
}

// FuzzMalformedQuery: MalformedQuery refuses exactly the query strings
// url.ParseQuery refuses (below its limit on pairs), and for a bad escape
// names the one net/url names.
func FuzzMalformedQuery(f *testing.F) {
	for _, s := range []string{"q=handy&loc=de", "q=%zz", "a=%4&b=;", "%e4=%C3%A4", "q=%\xff1", "k=v;w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := MalformedQuery(s)
		_, err := url.ParseQuery(s)
		if (got == "") != (err == nil) || err != nil && got != "the query string is malformed: "+err.Error() && !errors.As(err, new(url.EscapeError)) {
			t.Fatalf("%q: MalformedQuery %q, net/url %v", s, got, err)
		}
		var esc url.EscapeError
		if errors.As(err, &esc) && got != "the query string is malformed: invalid URL escape "+match.Quote(string(esc)) {
			t.Fatalf("%q: MalformedQuery %q, net/url %v", s, got, err)
		}
	})
}
