package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
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
		script := `new Promise((resolve, reject) => {
			document.getElementById('q').value = ` + jsString(tc.q) + `;
			document.getElementById('dist').value = ` + jsString(tc.dist) + `;
			document.getElementById('search').requestSubmit();
			const status = document.getElementById('status');
			const w = () => status.dataset.done === ` + jsString(tc.q) + ` ? resolve([...document.querySelectorAll('#results a.result')].map(a => [a.textContent, a.href])) : setTimeout(w, 5);
			w();
		})`
		shown := eval[[][2]string](t, br, script)
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
		local := eval[string](t, br, `adlink.search(`+jsString(tc.q)+`, {"ctx.dist": `+jsString(tc.dist)+`, fields: "price,logoad_type"}).then(JSON.stringify)`)
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
		return eval[answer](t, br, `new Promise((resolve, reject) => {
			window.my = {ads: resolve};
			const s = document.createElement('script');
			s.src = `+jsString(b.URL+"/v2/search/link?"+q.Encode())+`;
			s.onerror = () => reject(new Error('script failed'));
			document.head.appendChild(s);
		})`)
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
		return eval[[]string](t, br, `new Promise(resolve => {
			const w = () => document.getElementById('status').dataset.done === `+jsString(q)+` ? resolve([...document.querySelectorAll('#results a.result')].map(a => a.textContent)) : setTimeout(w, 5);
			w();
		})`)
	}
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html?q="+url.QueryEscape("kopfhörer")+"&ctx.dist=low"))
	if got, want := shown("kopfhörer"), titles("kopfhörer", "low"); !reflect.DeepEqual(got, want) {
		t.Errorf("from the address: %q, want %q", got, want)
	}
	if d := eval[string](t, br, `document.getElementById('dist').value`); d != "low" {
		t.Errorf("ctx.dist from the address: %q, want low", d)
	}
	eval[bool](t, br, `(document.getElementById('q').value = 'iphone 15', document.getElementById('dist').value = 'high', document.getElementById('search').requestSubmit(), true)`)
	if got, want := shown("iphone 15"), titles("iphone 15", "high"); !reflect.DeepEqual(got, want) {
		t.Errorf("submitted: %q, want %q", got, want)
	}
	if s := eval[string](t, br, `location.search`); s != "?q=iphone+15&ctx.dist=high" {
		t.Errorf("address after a search: %q", s)
	}
	eval[bool](t, br, `(history.back(), true)`)
	if got, want := shown("kopfhörer"), titles("kopfhörer", "low"); !reflect.DeepEqual(got, want) {
		t.Errorf("back: %q, want %q", got, want)
	}
	br.noConsoleErrors(t)
}
