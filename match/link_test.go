package match

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

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
