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
	for _, s := range []string{"deu", "1", "d", "ü1", ""} {
		_, msg := ParseCountry(s)
		bad("loc="+s, msg, "loc must be")
	}
	if v, msg := ParseLang(UseLocale); v != UseLocale || msg != "" {
		t.Errorf("use_locale: %q %q", v, msg)
	}
	_, msg = ParseLang("german")
	bad("lang=german", msg, "lang must be")
	if f, msgs := ParseFields("price, logoad_type,,", SearchFieldNames); len(msgs) != 0 || f != match.FieldPrice|match.FieldLogo|match.FieldAdType {
		t.Errorf("fields: %v %v", f, msgs)
	}
	if _, msgs := ParseFields("price,colour,gtin", PageFieldNames); len(msgs) != 2 {
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
		if v, msg := ParseCountry(s); msg == "" && v != UseGeo && !alpha2.MatchString(v) {
			t.Fatalf("loc %q accepted as %q", s, v)
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
