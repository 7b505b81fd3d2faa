//go:build !wasip1

package contract

import (
	"bytes"
	"net/url"
	"testing"

	"github.com/adlink/adlink/match"
)

// FuzzServerOptions: the server's click URL writer writes what Options'
// writes, its '&'s as JSON's \u0026, after any bytes already in dst
// (left as they are), and its signature hook is given the same query
// bytes, '&' and all.
func FuzzServerOptions(f *testing.F) {
	f.Add("search", "de mo", "s/1", "x:y", "k1.2.x", "a.example", "advertiser", "lg handy", true)
	f.Add("intext", "", "", "", "", "", "", "", false)
	f.Add("a&b", "ü=1", "#?", "&&", "t", "id&<>", "product", "über & unter", true)
	f.Fuzz(func(t *testing.T, typ, apiKey, siteID, ykTag, tok, adID, adType, criterion string, signed bool) {
		var seen [2][]byte
		links := func(k int) Links {
			l := Links{Base: "https://r.example", Type: typ, APIKey: apiKey, SiteID: siteID, YkTag: ykTag, Tok: tok}
			if signed {
				l.Sign = func(dst, query []byte) []byte {
					seen[k] = append([]byte(nil), query...)
					return append(dst, "&sig="+string(rune('a'+len(query)%26))...)
				}
			}
			return l
		}
		want, got := links(0).Options(), links(1).ServerOptions()
		if got.ClickBase != want.ClickBase || got.Context != want.Context || got.Fields != want.Fields || got.LogoDim != want.LogoDim {
			t.Fatalf("options %+v, want %+v", got, want)
		}
		// The same query, its '&'s as JSON holds them.
		w := want.ClickQuery([]byte("prefix&"), adID, adType, criterion)
		w = append([]byte("prefix&"), bytes.ReplaceAll(w[len("prefix&"):], []byte("&"), []byte(`\u0026`))...)
		g := got.ClickQuery([]byte("prefix&"), adID, adType, criterion)
		if !bytes.Equal(g, w) {
			t.Fatalf("click query %q, want %q", g, w)
		}
		if !bytes.Equal(seen[1], seen[0]) {
			t.Fatalf("signed %q, want %q", seen[1], seen[0])
		}
	})
}

// TestServerResponse: the server's link entries, by ServerOptions and
// match's AppendServerResponse, are the module's, by Options and
// AppendResponse, signed or not.
func TestServerResponse(t *testing.T) {
	ads := []match.Ad{
		{ID: "a&1", Kind: match.KindProduct, Title: "LG Handy <neu>", Keywords: []string{"lg handy"}, Logo: "https://i/{dim}.png",
			Landing: "https://a.example/", Advertiser: "a.example", Markets: []match.Market{{Country: "de", Lang: "de"}}},
		{ID: "b", Kind: match.KindAdvertiser, Title: "Handy & mehr", Keywords: []string{"handy"},
			Landing: "https://b.example/", Advertiser: "b.example", Markets: []match.Market{{Country: "de", Lang: "de"}}},
	}
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(dst, query []byte) []byte { return append(dst, "&sig="+url.QueryEscape(string(query))...) }
	for _, l := range []Links{
		{Base: "https://r.example", Type: TypeSearch, APIKey: "demo", SiteID: "demo"},
		{Base: `https://r.example/<&>`, Type: TypePage, APIKey: "k&y", SiteID: "s s", YkTag: "t&1", Tok: "a&b", Sign: sign,
			Fields: match.FieldPrice | match.FieldAdType, LogoDim: "90X90"},
	} {
		for _, q := range []string{"lg handy", "handy", "nichts"} {
			hits := ix.Match(&match.Query{Text: q, Dist: match.DistNone})
			mo, so := l.Options(), l.ServerOptions()
			want := ix.AppendResponse(nil, hits, &mo)
			got := ix.AppendServerResponse(nil, hits, &so)
			if !bytes.Equal(got, want) {
				t.Errorf("%q:\n got %s\nwant %s", q, got, want)
			}
		}
	}
}
