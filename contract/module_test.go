package contract

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/adlink/adlink/match"
)

func TestParseQueryAgreesWithNetURL(t *testing.T) {
	for _, s := range []string{
		"q=lg+handy&loc=DE", "q=%C3%84rger%20%2B1", "a=1&&b=&c", "q=%zz%4", "k%3D=v%26", "x=1&x=2",
		// Escaped names and values one after another share a buffer.
		"a%41=%42%43&b+c=d+e&%66=%67&plain=v&z=%E2%82%AC+%E2%82%AC",
	} {
		want, err := url.ParseQuery(s)
		got := url.Values{}
		for _, p := range ParseQuery(s, nil) {
			got[p.Name] = append(got[p.Name], p.Value)
		}
		if err != nil {
			// net/url drops a pair with a bad escape; we keep it as
			// written, and agree on the rest.
			for k := range got {
				if _, ok := want[k]; !ok {
					delete(got, k)
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q, net/url %q", s, got, want)
		}
	}
}

func TestParseModuleDefaults(t *testing.T) {
	l, problems := ParseModule("q=+handy+&api_key=k&site_id=s&redirect_url=http://r/&loc=DE&lang=use_locale&ad_type=product+coupon&q_operator=and", false, nil)
	if problems != nil {
		t.Fatal(problems)
	}
	want := match.Query{Text: "handy", Country: "de", Operator: match.OpAnd, Dist: match.DistNone,
		Kinds: match.Kinds(0).Add(match.KindProduct).Add(match.KindCoupon), Size: match.DefaultSize,
		DistinctAdvertiser: match.DefaultDistinctAdvertiser}
	if !reflect.DeepEqual(l.Query, want) {
		t.Errorf("query %+v, want %+v", l.Query, want)
	}
	if o := l.Links; o.Base != "http://r" || o.Type != TypeSearch || o.APIKey != "k" || o.SiteID != "s" {
		t.Errorf("links %+v", o)
	}
	_, problems = ParseModule("text=x&api_key=k&site_id=s&redirect_url=r&fields=gtin", true, nil)
	if len(problems) != 1 || problems[0].Param != "fields" {
		t.Errorf("page fields=gtin: %v", problems)
	}
}

func TestParseModuleToken(t *testing.T) {
	base := "q=handy&api_key=k&site_id=s&redirect_url=http://r"
	l, problems := ParseModule(base+"&tok=k1.17.AbC_-9", false, nil)
	if problems != nil || l.Links.Tok != "k1.17.AbC_-9" {
		t.Fatalf("%v, tok %q", problems, l.Links.Tok)
	}
	o := l.Links.Options()
	got := o.ClickBase + string(o.ClickQuery(nil, "a.example", "advertiser", "handy"))
	if want := "http://r/v1/redirect?type=search&adId=a.example&adType=advertiser&api_key=k&site_id=s&criterionId=handy&tok=k1.17.AbC_-9"; got != want {
		t.Errorf("click URL %s, want %s", got, want)
	}
	if l, _ := ParseModule(base, false, nil); l.Links.Tok != "" {
		t.Error("a request without tok has one")
	}
	for _, bad := range []string{"a%26b%3Dc", "k1.1.x%20y", strings.Repeat("a", 129), "%3Cscript%3E"} {
		_, problems := ParseModule(base+"&tok="+bad, true, nil)
		if len(problems) != 1 || problems[0].Param != "tok" || problems[0].Code != CodeInvalidParameter {
			t.Errorf("tok=%s: %v", bad, problems)
		}
	}
}

// FuzzModuleReadsAsServer: the module reads a search as the server does,
// the same query and links or the same problems, but for what is either's
// own: callback, redirect_url and tok, and use_geo and use_locale, which
// the page resolves before it asks.
func FuzzModuleReadsAsServer(f *testing.F) {
	for _, s := range []string{
		"q=lg+handy&api_key=demo&site_id=demo&loc=use_geo&lang=DE",
		"q=nokia&api_key=demo&site_id=demo&fields=price,logoad_type&logo.dim=90X90&ad_type=product+coupon&yk_tag=a:b",
		"q=%FF&size=-1&loc=deu&ctx.dist=low&q_operator=and&q=x",
		"q=%C3%84&api_key=%20&site_id=s&distinct_advertiser=11&fields=x,,gtin",
		"q=x&api_key=k&site_id=s&size=0000000005&distinct_advertiser=000000000001&loc=xx",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil || MalformedQuery(raw) != "" {
			return
		}
		delete(v, "callback")
		delete(v, "tok")
		v["redirect_url"] = []string{"http://r"}
		server, sp := ParseSearch(v)
		module, mp := ParseModule(v.Encode(), false, nil)
		if !reflect.DeepEqual(sp, mp) {
			t.Fatalf("%q: the server's problems %v, the module's %v", raw, sp, mp)
		}
		if sp != nil {
			return
		}
		if server.Query.Country == UseGeo {
			server.Query.Country = ""
		}
		if server.Query.Lang == UseLocale {
			server.Query.Lang = ""
		}
		server.Links.Base = "http://r"
		if !reflect.DeepEqual(server, module) {
			t.Fatalf("%q: the server reads\n%+v, the module\n%+v", raw, server, module)
		}
	})
}

// TestParseModuleExclude reads the manifest's advertiser groups, and
// refuses anything else, naming exclude.
func TestParseModuleExclude(t *testing.T) {
	base := "q=handy&api_key=k&site_id=s&redirect_url=http://r"
	l, problems := ParseModule(base+"&exclude=3%2C17,0", false, nil)
	if problems != nil || !reflect.DeepEqual(l.Query.Exclude, []uint32{3, 17, 0}) {
		t.Fatalf("%v %v", l.Query.Exclude, problems)
	}
	if l, _ := ParseModule(base+"&exclude=", false, nil); l.Query.Exclude != nil {
		t.Errorf("empty exclude: %v", l.Query.Exclude)
	}
	for _, bad := range []string{"3,", ",3", "3,,4", "a", "-1", "1234567890", "3;4", "+3"} {
		_, problems := ParseModule(base+"&exclude="+url.QueryEscape(bad), true, nil)
		if len(problems) != 1 || problems[0].Param != "exclude" {
			t.Errorf("exclude=%q: %v", bad, problems)
		}
	}
}
