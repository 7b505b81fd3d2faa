package pages

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://Example.COM", "http://example.com/"},
		{"HTTPS://www.Example.com:443/a/B?x=1#frag", "https://www.example.com/a/B?x=1"},
		{"http://example.com:80/", "http://example.com/"},
		{"http://example.com:8080/", "http://example.com:8080/"},
		{"https://example.com:0443/p", "https://example.com/p"},
		{"http://example.com/p?utm_source=x&b=2&a=1&UTM_Medium=y&gclid=1&fbclid=2&msclkid=3&mc_eid=4&a=0", "http://example.com/p?a=0&a=1&b=2"},
		{"http://example.com/p?utm_source=x", "http://example.com/p"},
		{"http://example.com/a%20b?q=a+b&q=%C3%A4", "http://example.com/a%20b?q=%C3%A4&q=a+b"},
		{"http://example.com./", "http://example.com/"},
		{"  http://example.com/x  ", "http://example.com/x"},
		{"http://[::1]:8080/", "http://[::1]:8080/"},
		{"http://localhost:8080/demo/index.html?b&a", "http://localhost:8080/demo/index.html?a&b"},
		{"http://example.com/%c3%a4/%7Euser/%41?q=%c3%a4&r=%7e", "http://example.com/%C3%A4/~user/A?q=%C3%A4&r=~"},
		{"http://example.com/a/./b/../c/", "http://example.com/a/c/"},
		{"http://example.com/../../x", "http://example.com/x"},
		{"http://example.com/a/..", "http://example.com/"},
		{"http://example.com/a%2Fb", "http://example.com/a%2Fb"},
		// An internationalised host in A-labels, as location.href has it.
		{"http://Bücher.example/x", "http://xn--bcher-kva.example/x"},
		{"http://b%C3%BCcher.example/x", "http://xn--bcher-kva.example/x"},
		{"http://XN--BCHER-KVA.example/x", "http://xn--bcher-kva.example/x"},
		// A '%' that starts no escape is one; decoding "%41" after it
		// must not make a new escape of it.
		{"http://ex.de/?%%41a=1", "http://ex.de/?%25Aa=1"},
		{"http://ex.de/?b=%4&a=50%", "http://ex.de/?a=50%25&b=%254"},
	} {
		got, err := Canonical(c.in)
		if err != nil || got != c.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if again, err := Canonical(got); err != nil || again != got {
			t.Errorf("Canonical(%q) = %q, %v; want it unchanged", got, again, err)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, c := range []struct{ name, in, reason string }{
		{"missing", "", "is missing"},
		{"relative", "/page.html", "must be absolute"},
		{"scheme-relative", "//example.com/page", "must be absolute"},
		{"javascript", "javascript:alert(1)", `not "javascript"`},
		{"file", "file:///etc/passwd", `not "file"`},
		{"data", "data:text/html,<script>alert(1)</script>", `not "data"`},
		{"ftp", "ftp://example.com/file", `not "ftp"`},
		{"over 2 KB", "http://example.com/?" + strings.Repeat("a", 2100), "longer than 2048"},
		{"over 2 KB once escaped", "http://ex.de/" + strings.Repeat("ä", 700), "longer than 2048 bytes once escaped"},
		{"host IDNA refuses", "http://a_ä.example/", "invalid host"},
		{"host not UTF-8", "http://\x94\x94.de/", "invalid host"},
		{"user:pass", "http://user:pass@example.com/", "user name or password"},
		{"user only", "http://user@example.com/", "user name or password"},
		{"no host", "http:///path", "with a host"},
		{"bad port", "http://example.com:99999/", "invalid port"},
		{"bad host", "http://exa mple.com/", "not a valid URL"},
		{"empty last label", "http://example.com../", "invalid host"},
		{"empty label", "http://example..com/", "invalid host"},
		{"opaque", "http:example.com", "with a host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical(c.in)
			var be *BadURLError
			if !errors.As(err, &be) {
				t.Fatalf("Canonical(%q) = %q, %v; want a BadURLError", c.in, got, err)
			}
			if !strings.Contains(be.Error(), c.reason) || !strings.HasPrefix(be.Error(), "url ") {
				t.Fatalf("error %q, want it to name url and say %q", be.Error(), c.reason)
			}
		})
	}
}

func TestCheckDomain(t *testing.T) {
	domains := []string{"example.com", "Blog.Other.org", "localhost", "127.0.0.1", "München.example", "xn--bcher-kva.example"}
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"http://example.com/", true},
		{"https://www.example.com/a", true},
		{"https://a.b.example.com/a", true},
		{"https://blog.other.org/x", true},
		{"https://other.org/x", false},
		{"https://notexample.com/", false},
		{"https://example.com.evil.net/", false},
		{"http://localhost:8080/", true},
		{"http://127.0.0.1:8080/", true},
		{"http://1.127.0.0.1/", false},
		{"http://[::1]/", false},
		// An internationalised domain matches in either spelling.
		{"http://xn--mnchen-3ya.example/", true},
		{"http://www.münchen.example/", true},
		{"http://bücher.example/", true},
		{"http://xn--bcher-kva.example/", true},
		{"http://xn--mnchen-3ya.example.evil/", false},
	} {
		err := CheckDomain(c.url, domains)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrForeignDomain) {
			t.Errorf("CheckDomain(%s) = %v, want ok=%v", c.url, err, c.ok)
		}
	}
}

// FuzzCanonical checks that the canonicaliser never panics, accepts only
// http(s) URLs without credentials within the size limit, and is idempotent.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "HTTPS://Example.com:443/a?utm_source=x&b=1#f", "javascript:alert(1)",
		"http://user:pass@example.com/", "http://[::ffff:127.0.0.1]:80/", "//x", "http://a/%zz",
		"http://example.com/?a=%&b", "http://xn--mnchen-3ya.de/", "http://münchen.de/straße?q=ä",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := Canonical(raw)
		if err != nil {
			var be *BadURLError
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a BadURLError", err)
			}
			return
		}
		if len(raw) > MaxURLBytes {
			t.Fatalf("accepted %d bytes", len(raw))
		}
		u, err := url.Parse(c)
		if err != nil {
			t.Fatalf("canonical %q does not parse: %v", c, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Host == "" || u.Fragment != "" {
			t.Fatalf("canonical %q of %q", c, raw)
		}
		c2, err := Canonical(c)
		if err != nil || c2 != c {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", raw, c, c2, err)
		}
	})
}

// TestQueryRules: a canonical URL that leaves parameters out names them;
// one that changes or adds any names none; leaving named parameters out
// keeps a URL canonical.
func TestQueryRules(t *testing.T) {
	for _, c := range []struct {
		page, canonical string
		want            []string
	}{
		{"https://a.example/s?r=1", "https://a.example/s", []string{"r"}},
		{"https://a.example/s?id=7&r=1&x=2", "https://a.example/s?id=7", []string{"r", "x"}},
		{"https://a.example/s?r=1&r=2", "https://a.example/s", []string{"r"}},
		{"https://a.example/s?%72=1", "https://a.example/s", []string{"r"}},
		{"https://a.example/s?id=7&r=1", "https://a.example/s?id=8", nil}, // id varies
		{"https://a.example/s?r=1", "https://a.example/s?r=1&z=2", nil},   // adds z
		{"https://a.example/s?r=1", "https://a.example/t", nil},           // another path
		{"https://a.example/s?r=1", "https://b.example/s", nil},           // another host
		{"https://a.example/s?r=1", "https://a.example/s?r=1", nil},
	} {
		page, err1 := Canonical(c.page)
		canonical, err2 := Canonical(c.canonical)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got := droppedParams(page, canonical); !slices.Equal(got, c.want) {
			t.Errorf("droppedParams(%s, %s) = %q, want %q", page, canonical, got, c.want)
		}
	}
	for _, c := range []struct {
		in    string
		names []string
		want  string
	}{
		{"https://a.example/s?r=5", []string{"r"}, "https://a.example/s"},
		{"https://a.example/s?a=1&id=7&r=5", []string{"r", "a"}, "https://a.example/s?id=7"},
		{"https://a.example/s?%72%5B%5D=5&b=2", []string{"r[]"}, "https://a.example/s?b=2"},
		{"https://a.example/s?id=7", []string{"r"}, "https://a.example/s?id=7"},
	} {
		in, err := Canonical(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got := withoutParams(in, c.names)
		if got != c.want {
			t.Errorf("withoutParams(%s, %q) = %s, want %s", in, c.names, got, c.want)
		}
		if again, err := Canonical(got); err != nil || again != got {
			t.Errorf("withoutParams(%s) = %s is not canonical (%s, %v)", in, got, again, err)
		}
	}
	if k := ruleKey("https://a.example/s?id=7"); k != "https://a.example/s?" {
		t.Errorf("ruleKey = %s", k)
	}
	if c, err := Canonical("https://a.example/s?"); err != nil || c == ruleKey(c) {
		t.Errorf("a page URL %q, %v is a rule's key", c, err)
	}
}
