package contract

import (
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/adlink/adlink/match"
)

var callbackRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$`)

func TestValidCallback(t *testing.T) {
	tests := map[string]bool{
		"cb": true, "jQuery3_1": true, "$": true, "_": true, "a.b.c": true, "$.x_$1": true, "A9": true,
		strings.Repeat("a", 64): true,
		"":                      false, "alert(1);x": false, "a-b": false, "1a": false, "a..b": false, ".a": false, "a.": false,
		"a.1b": false, "a b": false, "a\u00e9": false, "a;": false, "a[0]": false, "a\x00": false,
		strings.Repeat("a", 65): false, "</script>": false,
	}
	for s, want := range tests {
		if got := ValidCallback(s); got != want {
			t.Errorf("ValidCallback(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzCallback(f *testing.F) {
	for _, s := range []string{"cb", "a.b", "alert(1);x", "a-b", "a..b", "$1", "1a", strings.Repeat("x", 65), "é", "a.b.", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ValidCallback(s)
		if want := len(s) <= MaxCallback && callbackRE.MatchString(s); got != want {
			t.Fatalf("ValidCallback(%q) = %v, the rule says %v", s, got, want)
		}
		if got && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.") != "" {
			t.Fatalf("ValidCallback accepted %q", s)
		}
	})
}

func parseSearch(t testing.TB, raw string) (Link, []Problem) {
	t.Helper()
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return ParseSearch(v)
}

func TestParseSearchDefaults(t *testing.T) {
	l, problems := parseSearch(t, "q=+lg+handy+&api_key=demo&site_id=demo&_=1700000000&fields=&loc=")
	if problems != nil {
		t.Fatal(problems)
	}
	want := Link{
		Query: match.Query{Text: "lg handy", Size: match.DefaultSize, DistinctAdvertiser: match.DefaultDistinctAdvertiser,
			Operator: match.OpOr, Dist: match.DistHigh},
		Links: Links{Type: TypeSearch, APIKey: "demo", SiteID: "demo"},
	}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("ParseSearch = %+v, want %+v", l, want)
	}
}

func TestParseSearchValues(t *testing.T) {
	l, problems := parseSearch(t, "q=handy&api_key=k&site_id=s&callback=a.b&loc=DE&lang=EN&fields=price,+gtin,logoad_type&"+
		"logo.dim=90x90&ad_type=product+coupon&q_operator=and&yk_tag=a:b-c_d&size=50&distinct_advertiser=10")
	if problems != nil {
		t.Fatal(problems)
	}
	want := Link{
		Query: match.Query{Text: "handy", Country: "de", Lang: "en", Kinds: match.Kinds(0).Add(match.KindProduct).Add(match.KindCoupon),
			Operator: match.OpAnd, Dist: match.DistNone, Size: 50, DistinctAdvertiser: 10},
		Links: Links{Type: TypeSearch, APIKey: "k", SiteID: "s", YkTag: "a:b-c_d", LogoDim: "90X90",
			Fields: match.FieldPrice | match.FieldGTIN | match.FieldLogo | match.FieldAdType},
		Callback: "a.b",
	}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("ParseSearch =\n%+v, want\n%+v", l, want)
	}
}

// Leading zeros read one way in size and distinct_advertiser, however
// many; loc=xx is no country.
func TestParseSearchLeadingZerosAndCountry(t *testing.T) {
	for _, q := range []string{"size=05&distinct_advertiser=02", "size=0000000005&distinct_advertiser=00000000000000000002"} {
		l, problems := parseSearch(t, "q=handy&api_key=k&site_id=s&"+q)
		if problems != nil || l.Query.Size != 5 || l.Query.DistinctAdvertiser != 2 {
			t.Errorf("%s: size %d distinct_advertiser %d, %v", q, l.Query.Size, l.Query.DistinctAdvertiser, problems)
		}
	}
	_, problems := parseSearch(t, "q=handy&api_key=k&site_id=s&loc=xx&distinct_advertiser=99999999999999999999999")
	if len(problems) != 2 || problems[0].Param != "loc" || problems[1].Param != "distinct_advertiser" ||
		problems[0].Message != `loc must be a two-letter ISO 3166 country code (de, US) or use_geo, not "xx"` {
		t.Errorf("loc=xx and a huge distinct_advertiser: %v", problems)
	}
}

// Every bad parameter is reported, in the order the parse reads them.
func TestParseSearchProblems(t *testing.T) {
	_, problems := parseSearch(t, "q=a&q=b&site_id=s&callback=a-b&loc=deu&size=0&ctx.dist=far")
	var got []string
	for _, p := range problems {
		got = append(got, p.Code+" "+p.Param)
	}
	want := []string{"invalid_parameter q", "missing_parameter api_key", "invalid_parameter callback",
		"invalid_parameter loc", "invalid_parameter ctx.dist", "invalid_parameter size"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Message)
	}
	if j := Join(problems); j.Code != CodeInvalidParameter || j.Param != "q" || j.Message != strings.Join(msgs, "; ") {
		t.Errorf("Join = %+v", j)
	}
}

func TestParsePage(t *testing.T) {
	canonical := func(raw string) (string, string) {
		if raw == "bad" {
			return "", "url is bad"
		}
		return "https://" + raw + "/", ""
	}
	v, _ := url.ParseQuery("url=blog.example&api_key=k&site_id=s&loc=use_geo&lang=xx&fields=logo&ad_type=product&size=99")
	pg, problems := ParsePage(v, canonical)
	if problems != nil {
		t.Fatal(problems)
	}
	want := Page{URL: "https://blog.example/", Link: Link{
		Query: match.Query{Page: true, Country: UseGeo, Kinds: match.Kinds(0).Add(match.KindProduct)},
		Links: Links{Type: TypePage, APIKey: "k", SiteID: "s", Fields: match.FieldLogo},
	}}
	if !reflect.DeepEqual(pg, want) {
		t.Errorf("ParsePage =\n%+v, want\n%+v", pg, want)
	}
	if q := pg.PageQuery("T", "x"); q.Title != "T" || q.Text != "x" || !q.Page || q.Kinds != want.Query.Kinds {
		t.Errorf("PageQuery %+v", q)
	}
	v, _ = url.ParseQuery("url=bad&api_key=k&site_id=s&fields=gtin&ad_type=coupon")
	_, problems = ParsePage(v, canonical)
	if len(problems) != 3 || !reflect.DeepEqual(problems[0], Problem{Code: CodeInvalidParameter, Param: "url", Message: "url is bad"}) ||
		problems[1].Param != "fields" || problems[2].Param != "ad_type" {
		t.Errorf("problems %+v", problems)
	}
}

func TestParseManifest(t *testing.T) {
	v, _ := url.ParseQuery("api_key=k&site_id=s&loc=CH&lang=use_locale&callback=cb")
	m, problems := ParseManifest(v)
	if want := (Manifest{APIKey: "k", SiteID: "s", Callback: "cb", Country: "ch", Lang: UseLocale}); problems != nil || m != want {
		t.Errorf("ParseManifest = %+v %v, want %+v", m, problems, want)
	}
}

func TestParseRedirect(t *testing.T) {
	v, _ := url.ParseQuery("type=intext&adId=a.example&adType=product&api_key=k&site_id=s&criterionId=lg+handy&yk_tag=t:1&d=AbC_-9&exp=1&sig=k1.x&tok=t")
	r, problems := ParseRedirect(v)
	want := Redirect{Type: TypePage, AdID: "a.example", AdType: match.KindProduct, APIKey: "k", SiteID: "s",
		Criterion: "lg handy", YkTag: "t:1", D: "AbC_-9", Exp: "1", Sig: "k1.x", Tok: "t"}
	if problems != nil || r != want {
		t.Errorf("ParseRedirect = %+v %v, want %+v", r, problems, want)
	}
	v, _ = url.ParseQuery("type=x&adType=banner&api_key=k&site_id=s&criterionId=%FF")
	_, problems = ParseRedirect(v)
	var got []string
	for _, p := range problems {
		got = append(got, p.Param)
	}
	if want := []string{"type", "adId", "adType", "criterionId"}; !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
}

// FuzzParseSearch checks that parameters that pass validation are in
// range, and that every problem names a parameter and says something.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{
		"q=lg+handy&api_key=demo&site_id=demo",
		"q=handy&api_key=demo&site_id=demo&callback=cb&loc=use_geo&lang=use_locale",
		"q=nokia&api_key=demo&site_id=demo&fields=price,logoad_type&logo.dim=90X90&ad_type=product+coupon",
		"q=nokia+schwarz&api_key=demo&site_id=demo&q_operator=and&size=50&distinct_advertiser=1&yk_tag=a:b",
		"q=handy&api_key=demo&site_id=demo&ctx.dist=low&q_operator=and",
		"q=%FF&api_key=demo&site_id=demo&size=-1&loc=deu&callback=a-b",
		"q=a&q=b&api_key=nope&site_id=demo&callback=x.y",
		"q=%zz;&api_key",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		l, problems := ParseSearch(v)
		for _, p := range problems {
			if p.Param == "" || p.Message == "" || p.Code != CodeInvalidParameter && p.Code != CodeMissingParameter {
				t.Fatalf("ParseSearch(%q) problem %+v", raw, p)
			}
		}
		if problems == nil {
			checkSearch(t, raw, &l)
		}
	})
}

func checkSearch(t *testing.T, raw string, l *Link) {
	t.Helper()
	q := &l.Query
	bad := func(what string) { t.Fatalf("ParseSearch(%q) accepted %s: %+v", raw, what, l) }
	switch {
	case q.Text == "" || !utf8.ValidString(q.Text) || len(q.Text) > match.MaxQueryBytes || strings.TrimSpace(q.Text) != q.Text:
		bad("q")
	case l.Links.APIKey == "" || l.Links.SiteID == "":
		bad("no key or site")
	case l.Callback != "" && !ValidCallback(l.Callback):
		bad("callback")
	case q.Country != "" && q.Country != UseGeo && !alpha2.MatchString(q.Country):
		bad("loc")
	case q.Lang != "" && q.Lang != UseLocale && !alpha2.MatchString(q.Lang):
		bad("lang")
	case l.Links.YkTag != "" && !regexp.MustCompile(`^[A-Za-z0-9_:-]{1,64}$`).MatchString(l.Links.YkTag):
		bad("yk_tag")
	case q.Size < 1 || q.Size > match.MaxSize:
		bad("size")
	case q.DistinctAdvertiser < 1 || q.DistinctAdvertiser > match.MaxDistinctAdvertiser:
		bad("distinct_advertiser")
	case q.Operator == match.OpAnd && q.Dist != match.DistNone:
		bad("and without ctx.dist=none")
	case l.Links.LogoDim != "" && !slices.Contains(match.LogoDims, l.Links.LogoDim):
		bad("logo.dim")
	}
}
