package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/adlink/adlink/backend/clicks"
)

// TestBudgetSpentInPage: once handy-bestkauf.de's daily budget is spent,
// the page's own matcher leaves its ads out, as the manifest says and the
// server does, with the server's bytes.
func TestBudgetSpentInPage(t *testing.T) {
	br := newBrowser(t)
	b := spent.start(t)
	v := url.Values{"q": {"lg handy"}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"},
		"ctx.dist": {"high"}, "fields": {"price,logoad_type"}}
	search := func() []byte { return get(t, b.URL+"/v2/search/link?"+v.Encode()) }
	var before struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(search(), &before); err != nil {
		t.Fatal(err)
	}
	clicked := false
	for _, l := range before.Link {
		if !strings.Contains(l.Ad, "adId=handy-bestkauf.de") || clicked {
			continue
		}
		req, err := http.NewRequest(http.MethodGet, l.Ad, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		clicks.Navigation.Header(req.Header)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil || res.StatusCode != http.StatusFound {
			t.Fatalf("click: %v %v", res, err)
		}
		res.Body.Close()
		clicked = true
	}
	if !clicked {
		t.Fatalf("handy-bestkauf.de not in the server's answer before its budget is spent: %+v", before)
	}
	server := search()
	if strings.Contains(string(server), "handy-bestkauf.de") {
		t.Fatalf("the server still shows handy-bestkauf.de: %s", server)
	}

	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	page := evalCall[string](t, br, searchJSON, "lg handy", "high")
	if strings.Contains(page, "handy-bestkauf.de") {
		t.Errorf("the page shows handy-bestkauf.de after its budget is spent: %s", page)
	}
	if got, want := unsignedJSON(t, []byte(page)), unsignedJSON(t, server); !reflect.DeepEqual(got, want) {
		t.Errorf("page %s\nserver %s", page, server)
	}
}
