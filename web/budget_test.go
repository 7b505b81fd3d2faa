package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

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
		navigateTo(t, l.Ad)
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

//go:embed testdata/budget/count_shown.js
var countShown string

// TestEvenPacingInPage: an advertiser of even pacing a quarter of an
// hour's budget ahead of the day's line is shown in about as many of the
// page's own answers as of the server's: the manifest's share, drawn per
// match in the page. At 02:00 UTC with a tenth of the budget spent the
// share is (1/12 + 1/24 - 1/10) / (1/24) = 0.6.
func TestEvenPacingInPage(t *testing.T) {
	const adID, query, n = "AMAZON.1.B00JVL2X1I", "nokia handy", 200
	at := time.Now().UTC().Truncate(24 * time.Hour).Add(2 * time.Hour)
	// Its one ad of the query bids 0.60: one click is a tenth of 6.00.
	b, err := newBackend(backendOptions{now: func() time.Time { return at }, unlimited: true,
		advertisers: `{"advertisers":[{"id":"amazon.de","daily_budget":"6.00","currency":"EUR","pacing":"even"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	v := url.Values{"q": {query}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"}}
	search := func() []struct{ Ad string } {
		var a struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?"+v.Encode()), &a); err != nil {
			t.Fatal(err)
		}
		return a.Link
	}
	billed := false
	for _, l := range search() {
		if !strings.Contains(l.Ad, "adId="+adID+"&") {
			continue
		}
		navigateTo(t, l.Ad)
		b.clicks.Scan(context.Background(), at.Add(-time.Minute), at.Add(time.Minute), func(c clicks.Click) error {
			billed = billed || c.AdID == adID && c.Billable
			return nil
		})
		break
	}
	if !billed {
		t.Fatalf("%s not in the server's answer, or its click not billed, before it spent anything", adID)
	}
	var manifest struct {
		Pace []struct {
			Show float64
		}
	}
	if err := json.Unmarshal(get(t, b.URL+"/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de"), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest.Pace) != 1 || manifest.Pace[0].Show < 0.59 || manifest.Pace[0].Show > 0.61 {
		t.Errorf("manifest pace %+v, want one group shown 0.6", manifest.Pace)
	}
	server := 0
	for range n {
		for _, l := range search() {
			if strings.Contains(l.Ad, "adId="+adID+"&") {
				server++
			}
		}
	}
	br := newBrowser(t)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	page := evalCall[int](t, br, countShown, query, adID, n)
	// 0.6 of 200 is 120, a standard deviation about 7: 90 to 150 fails a
	// right share one time in millions.
	for name, got := range map[string]int{"server": server, "page": page} {
		if got < 90 || got > 150 {
			t.Errorf("the %s's answers showed %s in %d of %d, want about %d", name, adID, got, n, n*6/10)
		}
	}
}

// navigateTo follows the click URL ad as a reader's browser does, and
// fails t unless it answers its 302.
func navigateTo(t testing.TB, ad string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ad, nil)
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
}
