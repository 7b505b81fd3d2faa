package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-json"

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
		if got := validCallback(s); got != want {
			t.Errorf("validCallback(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzCallback(f *testing.F) {
	for _, s := range []string{"cb", "a.b", "alert(1);x", "a-b", "a..b", "$1", "1a", strings.Repeat("x", 65), "é", "a.b.", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := validCallback(s)
		if want := len(s) <= maxCallback && callbackRE.MatchString(s); got != want {
			t.Fatalf("validCallback(%q) = %v, the rule says %v", s, got, want)
		}
		if got && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.") != "" {
			t.Fatalf("validCallback accepted %q", s)
		}
	})
}

func TestParseSearchDefaults(t *testing.T) {
	v, _ := url.ParseQuery("q=+lg+handy+&api_key=demo&site_id=demo&_=1700000000&fields=&loc=")
	p, err := parseSearch(v)
	if err != nil {
		t.Fatal(err)
	}
	want := searchParams{Q: "lg handy", APIKey: "demo", SiteID: "demo", Size: match.DefaultSize,
		DistinctAdvertiser: match.DefaultDistinctAdvertiser, Operator: match.OpOr, Dist: match.DistHigh}
	if p != want {
		t.Errorf("parseSearch = %+v, want %+v", p, want)
	}
}

func TestParseSearchValues(t *testing.T) {
	v, _ := url.ParseQuery("q=handy&api_key=k&site_id=s&callback=a.b&loc=DE&lang=EN&fields=price,+gtin,logoad_type&" +
		"logo.dim=90x90&ad_type=product+coupon&q_operator=and&yk_tag=a:b-c_d&size=50&distinct_advertiser=10")
	p, err := parseSearch(v)
	if err != nil {
		t.Fatal(err)
	}
	want := searchParams{Q: "handy", APIKey: "k", SiteID: "s", Callback: "a.b", Loc: "de", Lang: "en",
		Fields: match.FieldPrice | match.FieldGTIN | match.FieldLogo | match.FieldAdType, LogoDim: "90X90",
		Kinds: match.Kinds(0).Add(match.KindProduct).Add(match.KindCoupon), Operator: match.OpAnd, Dist: match.DistNone,
		YkTag: "a:b-c_d", Size: 50, DistinctAdvertiser: 10}
	if p != want {
		t.Errorf("parseSearch =\n%+v, want\n%+v", p, want)
	}
}

func TestLocaleLang(t *testing.T) {
	tests := map[string]string{
		"":                                "",
		"de":                              "de",
		"de-DE,de;q=0.9,en;q=0.8":         "de",
		"en-US;q=0.5, fr;q=0.7":           "fr",
		"*, es":                           "es",
		"i-klingon, deu, en":              "en",
		"en;q=0, de;q=0.1":                "de",
		"en;q=bogus":                      "",
		"EN-gb":                           "en",
		"zh-Hant-TW;q=0.9, pt-BR;q=1":     "pt",
		" de ; q = 0.3 , en ; q=0.2 ":     "de",
		strings.Repeat("x,", 2000) + "it": "it",
	}
	for h, want := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if h != "" {
			r.Header.Set("Accept-Language", h)
		}
		if got := localeLang(r); got != want {
			t.Errorf("localeLang(%.40q) = %q, want %q", h, got, want)
		}
	}
}

// FuzzParseSearch checks that any query string gets a well-formed answer:
// parameters that pass validation are in range, rejections are 400s naming
// a parameter, and the whole handler answers valid JSON or JSONP.
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
	env := newEnv(f, fixture())
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err == nil {
			p, err := parseSearch(v)
			if err != nil {
				e := asError(err)
				if e.Status != http.StatusBadRequest || e.Param == "" || e.Message == "" {
					t.Fatalf("parseSearch(%q) error %+v", raw, e)
				}
			} else {
				checkParams(t, raw, p)
			}
		}
		req := httptest.NewRequest(http.MethodGet, "/v2/search/link", nil)
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, req)
		res := rec.Result()
		body := readBody(t, res)
		switch res.StatusCode {
		case 200, 400, 401, 403:
		default:
			t.Fatalf("status %d for %q", res.StatusCode, raw)
		}
		if res.Header.Get("Content-Type") == "text/javascript; charset=utf-8" {
			i := strings.IndexByte(string(body), '(')
			if !strings.HasPrefix(string(body), "/**/") || i < 0 || !validCallback(string(body[4:i])) || !strings.HasSuffix(string(body), ");") {
				t.Fatalf("bad JSONP %q for %q", body, raw)
			}
			body = body[i+1 : len(body)-2]
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON %q for %q", body, raw)
		}
	})
}

func checkParams(t *testing.T, raw string, p searchParams) {
	t.Helper()
	bad := func(what string) { t.Fatalf("parseSearch(%q) accepted %s: %+v", raw, what, p) }
	switch {
	case p.Q == "" || !utf8.ValidString(p.Q) || len(p.Q) > match.MaxQueryBytes || strings.TrimSpace(p.Q) != p.Q:
		bad("q")
	case p.APIKey == "" || p.SiteID == "":
		bad("no key or site")
	case p.Callback != "" && !validCallback(p.Callback):
		bad("callback")
	case p.Loc != "" && p.Loc != locUseGeo && (!isAlpha2(p.Loc) || strings.ToLower(p.Loc) != p.Loc):
		bad("loc")
	case p.Lang != "" && p.Lang != langUseLocale && (!isAlpha2(p.Lang) || strings.ToLower(p.Lang) != p.Lang):
		bad("lang")
	case p.YkTag != "" && !regexp.MustCompile(`^[A-Za-z0-9_:-]{1,64}$`).MatchString(p.YkTag):
		bad("yk_tag")
	case p.Size < 1 || p.Size > match.MaxSize:
		bad("size")
	case p.DistinctAdvertiser < 1 || p.DistinctAdvertiser > match.MaxDistinctAdvertiser:
		bad("distinct_advertiser")
	case p.Operator == match.OpAnd && p.Dist != match.DistNone:
		bad("and without ctx.dist=none")
	case p.LogoDim != "" && !strings.Contains(strings.Join(match.LogoDims, ","), p.LogoDim):
		bad("logo.dim")
	}
}
