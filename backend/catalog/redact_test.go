package catalog

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedacted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://user:SECRET@shop.example/feed.xml", "https://shop.example/feed.xml"},
		{"https://SECRET@shop.example:8443/feed.xml#market=de-DE", "https://shop.example:8443/feed.xml#market=de-DE"},
		{"https://shop.example/feed.tsv?token=SECRET", "https://shop.example/feed.tsv?token=…"},
		{"https://shop.example/feed.tsv?shop=1&key=SECRET&SECRET&x=#format=tsv", "https://shop.example/feed.tsv?shop=…&key=…&…&…#format=tsv"},
		{"HTTPS://u:SECRET@shop.example/a@b/feed?=SECRET", "HTTPS://shop.example/a@b/feed?…"},
		{"https://u:SEC/RET@shop.example/feed", "https://…"}, // no URL: the password's '/' ends the host
		// The password's '/', '?' or '#' ends the host, which then parses:
		// host "u", port 12.
		{"https://u:12/34@shop.example/feed", "https://…"},
		{"https://u:12?SECRET@shop.example/feed", "https://…"},
		{"https://u:12#SECRET@shop.example/feed", "https://…"},
		{"https://u:@shop.example/feed", "https://shop.example/feed"},
		{"https://shop.example/@shop/feed.xml", "https://shop.example/@shop/feed.xml"},
		// A user name's '/' ends the host before the password, which
		// would show whole in the path.
		{"https://tenant/user:SECRET@shop.example/feed", "https://…"},
		{"https://tenant/user:SEC?RET@shop.example/feed", "https://…"},
		// An IPv6 host is never a user name ('[' is none's): an '@' after
		// it is the path's, with a port or without.
		{"http://[::1]/a@b", "http://[::1]/a@b"},
		{"http://[::1]:8080/a@b#market=de-DE", "http://[::1]:8080/a@b#market=de-DE"},
		{"https://shop.example/feed?since=00:00&mail=a@b.example", "https://shop.example/feed?since=…&mail=…"},
		{"feeds/de.jsonl#market=de-DE", "feeds/de.jsonl#market=de-DE"},
		{"/srv/feeds/a?b.csv", "/srv/feeds/a?b.csv"},
		{"file://u:SECRET@/etc/feed.xml", "file:///etc/feed.xml"},
	} {
		if got := Redacted(c.in); got != c.want {
			t.Errorf("Redacted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRedacted checks that a URL shows without its user info and query
// values, keeping its host and path, that a path shows as it is, and that
// a source shown shows the same again.
func FuzzRedacted(f *testing.F) {
	for _, s := range []string{"https://user:pass@shop.example/feed.xml", "https://shop.example/f.tsv?token=abc&x#market=de-DE",
		"http://[::1]:80/x?a=b", "feeds/a.jsonl", "s3://k@b/x?y", "https://u:p#q@h/", "ftp://h/%zz?a=%",
		"https://u:1/2@h/", "https://u:1?2@h/", "https://u:1#2@h/", "https://t/u:secretpw@h/", "http://[::1]:8080/a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Redacted(in)
		if again := Redacted(out); again != out {
			t.Fatalf("Redacted(%q) = %q, and again %q", in, out, again)
		}
		loc, frag, hasFrag := strings.Cut(in, "#")
		scheme, _, isURL := strings.Cut(loc, "://")
		if !isURL || !isScheme(scheme) {
			if out != in {
				t.Fatalf("the path %q shows as %q", in, out)
			}
			return
		}
		// A password cut short by a '/', '?' or '#' in it or in the user
		// name (one ending at none of '?' or '#', and no IPv6 host): no piece
		// of it shows.
		rest := in[len(scheme)+len("://"):]
		if authority := rest[:max(0, strings.IndexAny(rest+"/", "/?#"))]; !strings.Contains(authority, "@") {
			userinfo, _, _ := strings.Cut(rest, "@")
			user, password, hasPassword := strings.Cut(userinfo, ":")
			if hasPassword && strings.Contains(rest, "@") && !strings.ContainsAny(user, "?#[") {
				for _, piece := range strings.FieldsFunc(password, func(r rune) bool { return strings.ContainsRune("/?#", r) }) {
					if len(piece) >= 8 && strings.Contains(strings.TrimPrefix(out, scheme), piece) {
						t.Fatalf("Redacted(%q) = %q shows %q of the password", in, out, piece)
					}
				}
			}
		}
		u, err := url.Parse(loc)
		if err != nil || MisreadUserInfo(in) {
			if out != scheme+"://…" {
				t.Fatalf("the bad URL %q shows as %q", in, out)
			}
			return
		}
		// Without its user info, an '@' after the host may read as one
		// again (https://@:/@): then the scheme alone may show.
		end := len(rest)
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			end = i
		}
		host := rest[:end]
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			host = host[i+1:]
		}
		if out == scheme+"://…" && MisreadUserInfo(scheme+"://"+host+rest[end:]) {
			return
		}
		outLoc, outFrag, outHasFrag := strings.Cut(out, "#")
		if outFrag != frag || outHasFrag != hasFrag {
			t.Fatalf("Redacted(%q) = %q: the options changed", in, out)
		}
		v, err := url.Parse(outLoc)
		if err != nil {
			t.Fatalf("Redacted(%q) = %q, which does not parse: %v", in, out, err)
		}
		if v.User != nil || v.Host != u.Host || v.Path != u.Path || v.Scheme != u.Scheme {
			t.Fatalf("Redacted(%q) = %q: user %v, host %q, path %q", in, out, v.User, v.Host, v.Path)
		}
		for _, item := range strings.Split(v.RawQuery, "&") {
			if k, val, _ := strings.Cut(item, "="); item != "" && item != "…" && (k == "" || val != "…") {
				t.Fatalf("Redacted(%q) = %q: query item %q shows", in, out, item)
			}
		}
	})
}
