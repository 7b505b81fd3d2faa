package partners

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStaticSite(t *testing.T) {
	ps, err := Load(filepath.Join("..", "..", "testdata", "partners.example.json"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewStatic(WithDemo(ps))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, site string
		want      error
	}{
		{"demo", "demo", nil},
		{"k-9f2c7a1e", "tech-blog", nil},
		{"k-3b8d0e55", "reviews", nil},
		{"nope", "demo", ErrUnknownKey},
		{"", "", ErrUnknownKey},
		{"demo", "tech-blog", ErrForeignSite},
		{"k-3b8d0e55", "tech-blog", ErrForeignSite},
	}
	for _, tt := range tests {
		site, err := reg.Site(context.Background(), tt.key, tt.site)
		if !errors.Is(err, tt.want) {
			t.Errorf("Site(%q, %q) error = %v, want %v", tt.key, tt.site, err, tt.want)
		}
		if err == nil && site.ID != tt.site {
			t.Errorf("Site(%q, %q) = %+v", tt.key, tt.site, site)
		}
	}
}

func TestHasHost(t *testing.T) {
	s := Site{ID: "x", Domains: []string{"example.de"}}
	for host, want := range map[string]bool{
		"example.de": true, "EXAMPLE.de.": true, "www.example.de": true,
		"badexample.de": false, "example.de.evil.com": false, "": false,
	} {
		if got := s.HasHost(host); got != want {
			t.Errorf("HasHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestNewStaticReportsEveryProblem(t *testing.T) {
	_, err := NewStatic([]Partner{
		{APIKey: ""},
		{APIKey: "a", Sites: []Site{{ID: "s", Domains: []string{"a.de"}}, {ID: "s", Domains: []string{"b.de"}}}},
		{APIKey: "a"},
		{APIKey: "b", Sites: []Site{{ID: "t"}}},
	})
	if err == nil {
		t.Fatal("NewStatic accepted bad partners")
	}
	for _, want := range []string{"partner 0", `site "s" twice`, `api_key "a" twice`, `site "t": no domains`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

// TestNewStaticRefusesDomainsIDNARefuses: a domain IDNA refuses would
// never match a page, whose host is judged in A-labels: the partner is
// refused, naming it, its site and the domain; either spelling of a name
// IDNA takes is accepted.
func TestNewStaticRefusesDomainsIDNARefuses(t *testing.T) {
	_, err := NewStatic([]Partner{
		{APIKey: "k", Sites: []Site{{ID: "blog", Domains: []string{"ok.example", "a_ä.example", "bücher.example", "xn--bcher-kva.example"}}}},
		{APIKey: "k2", Sites: []Site{{ID: "shop", Domains: []string{"ä\u200d.example"}}}},
	})
	if err == nil {
		t.Fatal("NewStatic accepted domains IDNA refuses")
	}
	for _, want := range []string{`partner "k" site "blog": domain "a_ä.example"`, `partner "k2" site "shop": domain "ä\u200d.example"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "bücher") || strings.Contains(err.Error(), "ok.example") {
		t.Errorf("error names a good domain:\n%v", err)
	}
}

// TestNewStaticRefusesDomainsNoHostIs: a URL, a host with its port or a
// wildcard pasted as a domain would never match a page's host either; an
// address, IPv6 too, and a name with an underscore are hosts.
func TestNewStaticRefusesDomainsNoHostIs(t *testing.T) {
	bad := []string{"https://blog.example/", "blog.example/", "blog.example:8080", "*.blog.example", "user@blog.example", "blog example", "[::1]"}
	good := []string{"blog.example", "127.0.0.1", "::1", "my_host.example", "localhost"}
	_, err := NewStatic([]Partner{{APIKey: "k", Sites: []Site{{ID: "blog", Domains: append(slices.Clone(good), bad...)}}}})
	if err == nil {
		t.Fatal("NewStatic accepted domains that are no host name")
	}
	for _, d := range bad {
		if want := fmt.Sprintf(`partner "k" site "blog": domain %q: `, d); !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %s:\n%v", want, err)
		}
	}
	for _, d := range good {
		if strings.Contains(err.Error(), fmt.Sprintf("domain %q", d)) {
			t.Errorf("error names the good domain %q:\n%v", d, err)
		}
	}
}

func TestLoadRejectsUnknownFields(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(p, []byte(`{"partners":[{"apikey":"x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil {
		t.Fatal("Load accepted a misspelt field")
	}
}

// TestParseRefusesAllButOneObject: an empty file, one with more after its
// object (a file being written, two run together), or one without the
// list, is refused naming the file, not read as no partners or as its
// first object.
func TestParseRefusesAllButOneObject(t *testing.T) {
	const one = `{"partners":[{"api_key":"k","sites":[{"id":"s","domains":["a.example"]}]}]}`
	for b, want := range map[string]string{
		"":                      `partners file p.json: empty; want {"partners":[...]}`,
		" \n\t":                 `partners file p.json: empty; want {"partners":[...]}`,
		one + "\n" + one:        `partners file p.json: more after the object that ends at byte 75; want one {"partners":[...]}`,
		one + `,"partners":[]}`: `partners file p.json: more after the object that ends at byte 75; want one {"partners":[...]}`,
		"null":                  `partners file p.json: no "partners" list; want {"partners":[...]}`,
		"{}":                    `partners file p.json: no "partners" list; want {"partners":[...]}`,
		`{"partners":null}`:     `partners file p.json: no "partners" list; want {"partners":[...]}`,
	} {
		if ps, err := Parse("p.json", []byte(b)); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, %v; want %q", b, ps, err, want)
		}
	}
	if ps, err := Parse("p.json", []byte("\n"+one+"\n\n")); err != nil || len(ps) != 1 {
		t.Errorf("one object between blank lines: %v %v, want its partner", ps, err)
	}
}

func TestWithDemo(t *testing.T) {
	if ps := WithDemo(nil); len(ps) != 1 || ps[0].APIKey != "demo" {
		t.Errorf("WithDemo(nil) = %+v, want the demo partner", ps)
	}
	other := Partner{APIKey: "k", Sites: []Site{{ID: "s", Domains: []string{"example.com"}}}}
	if ps := WithDemo([]Partner{other}); len(ps) != 2 || ps[0].APIKey != "k" || ps[1].APIKey != "demo" {
		t.Errorf("WithDemo = %+v, want k, then the demo partner", ps)
	}
	// A file's partner is numbered in NewStatic's problems as the file has
	// it, the demo added or not.
	file := []Partner{other, {Sites: other.Sites}, other}
	for _, ps := range [][]Partner{file, WithDemo(file)} {
		_, err := NewStatic(ps)
		if err == nil || !strings.Contains(err.Error(), "partner 1: api_key is empty") || !strings.Contains(err.Error(), `partner 2: api_key "k" twice`) {
			t.Errorf("NewStatic of %d partners: %v, want partner 1's empty key and partner 2's twice", len(ps), err)
		}
	}
	own := Partner{APIKey: "demo", Name: "our own demo", Sites: []Site{{ID: "demo", Domains: []string{"demo.example.com"}}}}
	if ps := WithDemo([]Partner{other, own}); len(ps) != 2 || ps[1].Name != own.Name {
		t.Errorf("WithDemo = %+v, want the file's demo partner in place of Demo", ps)
	}
}

func TestStaticLimits(t *testing.T) {
	ps, err := Load(filepath.Join("..", "..", "testdata", "partners.example.json"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewStatic(WithDemo(ps))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	def := Limits{RequestsPerSecond: 20, Burst: 40, PagesPerSecond: 0.5, PageBurst: 20}
	demo, err := reg.Limits(ctx, "demo")
	if err != nil || demo.Or(def) != def {
		t.Errorf("demo limits = %+v, %v; want the defaults", demo.Or(def), err)
	}
	own, err := reg.Limits(ctx, "k-3b8d0e55")
	want := Limits{RequestsPerSecond: 100, Burst: 200, PagesPerSecond: 2, PageBurst: 50}
	if err != nil || own.Or(def) != want {
		t.Errorf("k-3b8d0e55 limits = %+v, %v; want %+v", own.Or(def), err, want)
	}
	if _, err := reg.Limits(ctx, "nope"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v, want ErrUnknownKey", err)
	}
	partial := Limits{Burst: 7}.Or(def)
	if partial.Burst != 7 || partial.RequestsPerSecond != 20 {
		t.Errorf("partial limits = %+v, want burst 7 and the default rate", partial)
	}
	bad := Demo()
	bad.Limits.Burst = -1
	if _, err := NewStatic([]Partner{bad}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative limit: %v, want an error", err)
	}
}

// FuzzParse: whatever a partners file holds, Parse and NewStatic never
// panic, an error names the file, and a registry made resolves each of
// its partners' sites.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"partners":[{"api_key":"k","sites":[{"id":"s","domains":["a.example"]}]}]}`))
	f.Add([]byte(`{"partners":[{"api_key":"k","sites":[]},{"api_key":"k","sites":[]}]}`))
	f.Add([]byte(`{"partners":[{"api_key":"k",`))
	f.Add([]byte(" \n"))
	f.Add([]byte(`{"partners":[]} {"partners":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := Parse("p.json", b)
		if err != nil {
			if !strings.Contains(err.Error(), "partners file p.json") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if _, err := Parse("p.json", append(b[:len(b):len(b)], "{}"...)); err == nil {
			t.Fatalf("%q and an object after it parsed, want one object only", b)
		}
		s, err := NewStatic(ps)
		if err != nil {
			return
		}
		for _, p := range ps {
			for _, site := range p.Sites {
				if _, err := s.Site(context.Background(), p.APIKey, site.ID); err != nil {
					t.Fatalf("partner %q site %q: %v", p.APIKey, site.ID, err)
				}
			}
		}
	})
}
