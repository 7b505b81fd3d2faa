package main

import (
	"bytes"
	"net/url"
	"reflect"
	"testing"

	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

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
			for _, p := range contract.ParseQuery(req, nil) {
				got[p.Name] = append(got[p.Name], p.Value)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: %q, net/url %q", req, got, want)
			}
		}
	})
}
