package main

import (
	"bytes"
	"net/url"
	"reflect"
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
		for _, p := range parseQuery(s, nil) {
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

func TestParseRequestDefaults(t *testing.T) {
	q, o, errs := parseRequest("q=+handy+&api_key=k&site_id=s&redirect_url=http://r/&loc=DE&lang=use_locale&ad_type=product+coupon&q_operator=and", false, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	want := match.Query{Text: "handy", Country: "de", Operator: match.OpAnd, Dist: match.DistNone,
		Kinds: match.Kinds(0).Add(match.KindProduct).Add(match.KindCoupon), Size: match.DefaultSize,
		DistinctAdvertiser: match.DefaultDistinctAdvertiser}
	if q != want {
		t.Errorf("query %+v, want %+v", q, want)
	}
	if o.RedirectURL != "http://r" || o.Context != match.ContextSearch || o.APIKey != "k" || o.SiteID != "s" {
		t.Errorf("options %+v", o)
	}
	_, _, errs = parseRequest("text=x&api_key=k&site_id=s&redirect_url=r&fields=gtin", true, nil)
	if len(errs) != 1 || errs[0].Param != "fields" {
		t.Errorf("page fields=gtin: %v", errs)
	}
}

// FuzzRequest: no request makes the parser or the answer panic.
func FuzzRequest(f *testing.F) {
	ix, err := match.Build(nil)
	if err != nil {
		f.Fatal(err)
	}
	m := matcher{ix: ix}
	f.Add("q=handy&api_key=a&site_id=b&redirect_url=c&size=3", false)
	f.Add("text=%FF%FE&title=x&fields=logo&logo.dim=90x90", true)
	f.Fuzz(func(t *testing.T, req string, page bool) {
		out := m.answer(req, page, nil)
		if len(out) == 0 || out[0] != '{' {
			t.Fatalf("answer %q", out)
		}
		// Where net/url refuses the query, so does the module; where it
		// reads it, the pairs are its pairs.
		want, err := url.ParseQuery(req)
		if refused := bytes.HasPrefix(out, []byte(`{"error":{"code":"invalid_parameter","message":"the query string is malformed: `)); err != nil && !refused {
			t.Fatalf("%q: net/url refuses it (%v), the module answers %s", req, err, out)
		}
		if err == nil {
			got := url.Values{}
			for _, p := range parseQuery(req, nil) {
				got[p.Name] = append(got[p.Name], p.Value)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: %q, net/url %q", req, got, want)
			}
		}
	})
}
