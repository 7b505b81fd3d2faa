//go:build !wasip1

package contract

import (
	"bytes"
	"testing"
)

// FuzzServerOptions: the server's click URL writer writes what Options'
// writes, after any bytes already in dst, and its signature hook is given
// the same query bytes.
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
		w := want.ClickQuery([]byte("prefix"), adID, adType, criterion)
		g := got.ClickQuery([]byte("prefix"), adID, adType, criterion)
		if !bytes.Equal(g, w) {
			t.Fatalf("click query %q, want %q", g, w)
		}
		if !bytes.Equal(seen[1], seen[0]) {
			t.Fatalf("signed %q, want %q", seen[1], seen[0])
		}
	})
}
