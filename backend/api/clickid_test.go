package api

import (
	"net/url"
	"testing"
)

// TestWithParam: the id goes last in the query, in place of one of its
// name (written escaped too), before the fragment; the rest stays as
// written, and the host never changes.
func TestWithParam(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://shop.example/p", "https://shop.example/p?ac=ID"},
		{"https://shop.example/p?", "https://shop.example/p?ac=ID"},
		{"https://shop.example/p?a=1&b=%20x", "https://shop.example/p?a=1&b=%20x&ac=ID"},
		{"https://shop.example/p?ac=old&a=1&ac", "https://shop.example/p?a=1&ac=ID"},
		{"https://shop.example/p?a%63=old&a=1", "https://shop.example/p?a=1&ac=ID"},
		{"https://shop.example/p?a=1#top?x=1", "https://shop.example/p?a=1&ac=ID#top?x=1"},
		{"https://shop.example/p#", "https://shop.example/p?ac=ID#"},
		{"https://shop.example/p?a=1&&b", "https://shop.example/p?a=1&&b&ac=ID"},
		{"https://shop.example/p?&a=1&", "https://shop.example/p?&a=1&ac=ID"},
		{"https://shop.example/p?a=1&ac=old&&b", "https://shop.example/p?a=1&&b&ac=ID"},
		{"https://shop.example/p?ac=old", "https://shop.example/p?ac=ID"},
		{"https://shop.example/p?a=1;b=2", "https://shop.example/p?a=1;b=2&ac=ID"},
	} {
		got := withParam(tt.in, "ac", "ID")
		if got != tt.want {
			t.Errorf("withParam(%q) = %q, want %q", tt.in, got, tt.want)
		}
		a, _ := url.Parse(tt.in)
		b, err := url.Parse(got)
		if err != nil || a.Host != b.Host || a.Scheme != b.Scheme || b.Query().Get("ac") != "ID" {
			t.Errorf("withParam(%q) = %q: host %q, query %v", tt.in, got, b.Host, b.Query())
		}
	}
}
