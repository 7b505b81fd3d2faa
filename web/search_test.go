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

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/chromedp/chromedp"
)

var (
	// submitSearch, called with q and dist, fills in the demo search
	// page's form and submits it.
	//
	//go:embed testdata/search/submit.js
	submitSearch string
	// searchResults, called with q, waits until the demo search page has
	// shown the results of q and gives each result's title and link.
	//
	//go:embed testdata/search/results.js
	searchResults string
	// searchJSON, called with q and dist, is adlink.search's answer, as
	// JSON, with the fields the demo search page asks for.
	//
	//go:embed testdata/search/search_json.js
	searchJSON string
	// jsonp, called with a URL, calls it as a JSONP script with the
	// callback my.ads and resolves to the answer.
	//
	//go:embed testdata/search/jsonp.js
	jsonp string
	//go:embed testdata/search/dist.js
	searchDist string
	//go:embed testdata/search/location.js
	locationSearch string
	//go:embed testdata/search/back.js
	historyBack string
	// searchError, called with q and options, is the message adlink.search
	// fails with.
	//
	//go:embed testdata/search/search_error.js
	searchError string
)

// TestSearchPageEqualsServer: the demo search page matches in the page and
// shows what /v2/search/link answers for the same query and market.
func TestSearchPageEqualsServer(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	for _, tc := range []struct{ q, dist string }{
		{"kopfhörer", "high"}, {"iphone 15", "high"}, {"lg handy verkaufen", "high"}, {"samsung galaxy", "low"}, {"laptop 16 GB", "none"},
	} {
		evalCall[bool](t, br, submitSearch, tc.q, tc.dist)
		shown := evalCall[[][2]string](t, br, searchResults, tc.q)
		v := url.Values{"q": {tc.q}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"},
			"ctx.dist": {tc.dist}, "fields": {"price,logoad_type"}}
		body := get(t, b.URL+"/v2/search/link?"+v.Encode())
		var server struct {
			Link []struct{ Title, Ad string }
		}
		if err := json.Unmarshal(body, &server); err != nil {
			t.Fatal(err)
		}
		if len(server.Link) == 0 {
			t.Errorf("%q: the server has no ads; the test compares nothing", tc.q)
		}
		if len(shown) != len(server.Link) {
			t.Errorf("%q: page shows %d ads, server answers %d", tc.q, len(shown), len(server.Link))
			continue
		}
		for i, l := range server.Link {
			page, srv := shown[i][1], l.Ad
			if !strings.Contains(page, "&tok=") || !strings.Contains(srv, "&sig=") {
				t.Errorf("%q #%d: the page's link must carry the site token, the server's its signature: %s, %s", tc.q, i, page, srv)
			}
			if shown[i][0] != l.Title || unsigned(page) != unsigned(srv) {
				t.Errorf("%q #%d: page %q %s, server %q %s", tc.q, i, shown[i][0], page, l.Title, srv)
			}
		}
		// And the whole answer, every field, as the page's code sees it.
		local := evalCall[string](t, br, searchJSON, tc.q, tc.dist)
		if a, s := unsignedJSON(t, []byte(local)), unsignedJSON(t, body); !reflect.DeepEqual(a, s) {
			t.Errorf("%q: adlink.search gives %s\nserver %s", tc.q, local, body)
		}
	}
	br.noConsoleErrors(t)
}

// TestJSONPFromScriptTag: a classic <script> JSONP call works, and an error
// arrives the same way with its status in the body.
func TestJSONPFromScriptTag(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.do(t, chromedp.Navigate(b.URL+"/demo/index.html"))
	type answer struct {
		HTTPStatus int `json:"http_status"`
		Link       []struct{ Title, Ad string }
		Error      struct{ Code string }
	}
	call := func(q url.Values) answer {
		return evalCall[answer](t, br, jsonp, b.URL+"/v2/search/link?"+q.Encode())
	}
	ok := call(url.Values{"q": {"handy"}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"}, "callback": {"my.ads"}})
	if ok.HTTPStatus != 200 || len(ok.Link) == 0 || !strings.HasPrefix(ok.Link[0].Ad, b.URL+"/v1/redirect?type=search&") ||
		!strings.Contains(ok.Link[0].Ad, "&sig=") {
		t.Errorf("JSONP answer %+v", ok)
	}
	bad := call(url.Values{"q": {"handy"}, "api_key": {"nobody"}, "site_id": {"demo"}, "callback": {"my.ads"}})
	if bad.HTTPStatus != http.StatusUnauthorized || bad.Error.Code == "" {
		t.Errorf("JSONP error %+v", bad)
	}
	br.noConsoleErrors(t)
}

// TestSearchPageAddress: the demo search page searches what its address
// says, puts each search into the address, and going back shows the
// search before.
func TestSearchPageAddress(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	titles := func(q, dist string) []string {
		v := url.Values{"q": {q}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"}, "ctx.dist": {dist}}
		var server struct{ Link []struct{ Title string } }
		if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?"+v.Encode()), &server); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range server.Link {
			out = append(out, l.Title)
		}
		if len(out) == 0 {
			t.Fatalf("%q: the server has no ads; the test compares nothing", q)
		}
		return out
	}
	shown := func(q string) []string {
		var out []string
		for _, r := range evalCall[[][2]string](t, br, searchResults, q) {
			out = append(out, r[0])
		}
		return out
	}
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html?q="+url.QueryEscape("kopfhörer")+"&ctx.dist=low"))
	if got, want := shown("kopfhörer"), titles("kopfhörer", "low"); !reflect.DeepEqual(got, want) {
		t.Errorf("from the address: %q, want %q", got, want)
	}
	if d := eval[string](t, br, searchDist); d != "low" {
		t.Errorf("ctx.dist from the address: %q, want low", d)
	}
	evalCall[bool](t, br, submitSearch, "iphone 15", "high")
	if got, want := shown("iphone 15"), titles("iphone 15", "high"); !reflect.DeepEqual(got, want) {
		t.Errorf("submitted: %q, want %q", got, want)
	}
	if s := eval[string](t, br, locationSearch); s != "?q=iphone+15&ctx.dist=high" {
		t.Errorf("address after a search: %q", s)
	}
	eval[bool](t, br, historyBack)
	if got, want := shown("kopfhörer"), titles("kopfhörer", "low"); !reflect.DeepEqual(got, want) {
		t.Errorf("back: %q, want %q", got, want)
	}
	br.noConsoleErrors(t)
}

// TestSearchErrorNamesParameter: adlink.search with a market the server
// refuses fails with the server's own message, naming the parameter, as
// /v2/search/link does, not only the manifest's status.
func TestSearchErrorNamesParameter(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	for _, tc := range []struct {
		options map[string]string
		server  url.Values
	}{
		{map[string]string{"loc": "deu"}, url.Values{"loc": {"deu"}}},
		{map[string]string{"loc": "de", "lang": "deutsch"}, url.Values{"loc": {"de"}, "lang": {"deutsch"}}},
		{map[string]string{"loc": "de", "lang": "ge"}, url.Values{"loc": {"de"}, "lang": {"ge"}}},
	} {
		v := url.Values{"q": {"handy"}, "api_key": {"demo"}, "site_id": {"demo"}}
		for k, vs := range tc.server {
			v[k] = vs
		}
		var server struct{ Error struct{ Message string } }
		if err := json.Unmarshal(getStatus(t, b.URL+"/v2/search/link?"+v.Encode(), http.StatusBadRequest), &server); err != nil {
			t.Fatal(err)
		}
		if server.Error.Message == "" {
			t.Fatalf("%v: the server gives no message; the test compares nothing", tc.options)
		}
		if got, want := evalCall[string](t, br, searchError, "handy", tc.options), "adlink: "+server.Error.Message; got != want {
			t.Errorf("%v: adlink.search fails with %q, want %q", tc.options, got, want)
		}
	}
}

//go:embed testdata/search/result_token.js
var resultToken string

// TestSearchPageClickBills: a reader who searches on the demo search page
// (adlink.search, matched in the page) and clicks a result once it was in
// view bills the click, and the result's impression is counted: the page
// has its results reported as the widget's own ads are, else their links
// carry only the site token and every click is unverified.
func TestSearchPageClickBills(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	rd := asReader(t, br, b, b.URL)
	start := time.Now()
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html?q=iphone+15"))
	if shown := evalCall[[][2]string](t, br, searchResults, "iphone 15"); len(shown) == 0 {
		t.Fatal("the search page shows no results")
	}
	ctx, cancel := context.WithTimeout(br.ctx, 20*time.Second)
	href, err := chromedp.Run(ctx, chromedp.Poll[string](resultToken, chromedp.WithPollingTimeout(15*time.Second)))
	cancel()
	if err != nil {
		t.Fatalf("the first result never got its click token: %v", err)
	}
	time.Sleep(config.Default().ClickMinDelay) // a reader is no faster
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	adID := u.Query().Get("adId")
	br.do(t, chromedp.Click("#results a.result"))
	rd.landed(t)
	if logged := rd.clicksOn(b, adID, start); len(logged) != 1 || !logged[0].Billable || logged[0].Type != "search" || logged[0].Criterion == "" {
		t.Errorf("a reader's click on a search result in view: %+v, want one billable search click with its criterion", logged)
	}
	imps := 0
	b.imps.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(i clicks.Impression) error {
		if i.AdID == adID && i.IP == rd.ip {
			imps++
		}
		return nil
	})
	if imps != 1 {
		t.Errorf("impressions of the clicked result: %d, want 1", imps)
	}
	br.noConsoleErrors(t)
}
