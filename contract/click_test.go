package contract

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/adlink/adlink/match"
)

func FuzzQueryEscape(f *testing.F) {
	for _, s := range []string{"lg handy", "a&b=c", "ü/ß?#", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := string(AppendQueryEscape(nil, s)); got != url.QueryEscape(s) {
			t.Fatalf("%q: %q != %q", s, got, url.QueryEscape(s))
		}
	})
}

// The link entries carry the seed's click URL, escaped for JSON, the
// site token or signature last.
func TestLinksClickURL(t *testing.T) {
	ads := []match.Ad{{ID: "a.example", Kind: match.KindAdvertiser, Title: "A", Keywords: []string{"lg handy"},
		Landing: "https://a.example/", Advertiser: "a.example", Markets: []match.Market{{Country: "de", Lang: "de"}}}}
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	hits := ix.Match(&match.Query{Text: "lg handy"})
	for _, tc := range []struct {
		links Links
		want  string
	}{
		{Links{Base: "https://r.example", Type: TypeSearch, APIKey: "de mo", SiteID: "s/1", YkTag: "x:y"},
			`"https://r.example/v1/redirect?type=search\u0026adId=a.example\u0026adType=advertiser\u0026api_key=de+mo\u0026site_id=s%2F1\u0026criterionId=lg+handy\u0026yk_tag=x%3Ay"`},
		{Links{Base: `r"<`, Type: TypePage, Tok: "k1.2.x", Sign: func(dst, query []byte) []byte {
			return append(dst, "&n="+url.QueryEscape(string(query))...)
		}},
			`"r\"\u003c/v1/redirect?type=intext\u0026adId=a.example\u0026adType=advertiser\u0026api_key=\u0026site_id=\u0026criterionId=lg+handy\u0026tok=k1.2.x` +
				`\u0026n=type%3Dintext%26adId%3Da.example%26adType%3Dadvertiser%26api_key%3D%26site_id%3D%26criterionId%3Dlg%2Bhandy%26tok%3Dk1.2.x"`},
	} {
		o := tc.links.Options()
		var v struct {
			Link []struct{ Ad json.RawMessage }
		}
		if err := json.Unmarshal(ix.AppendResponse(nil, hits, &o), &v); err != nil || len(v.Link) != 1 {
			t.Fatalf("%v %+v", err, v)
		}
		if got := string(v.Link[0].Ad); got != tc.want {
			t.Errorf("ad %s, want %s", got, tc.want)
		}
	}
}
