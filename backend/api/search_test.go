package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// errorResponse is the DESIGN.md error body.
type errorResponse struct {
	HTTPStatus int `json:"http_status"`
	Error      struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Param   string `json:"param"`
		// Limit and RetryAfter are a 429's bucket and its wait.
		Limit      string `json:"limit"`
		RetryAfter int    `json:"retry_after"`
	} `json:"error"`
}

func TestSearchBadInput(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		query  string // raw query string
		status int
		code   string
		param  string
	}{
		{"missing q", "api_key=demo&site_id=demo", 400, CodeMissingParameter, "q"},
		{"empty q", "q=&api_key=demo&site_id=demo", 400, CodeMissingParameter, "q"},
		{"blank q", "q=+%09+&api_key=demo&site_id=demo", 400, CodeMissingParameter, "q"},
		{"missing api_key", "q=handy&site_id=demo", 400, CodeMissingParameter, "api_key"},
		{"missing site_id", "q=handy&api_key=demo", 400, CodeMissingParameter, "site_id"},
		{"unknown api_key", "q=handy&api_key=nope&site_id=demo", 401, CodeUnknownAPIKey, "api_key"},
		{"site not the key's", "q=handy&api_key=k2&site_id=demo", 403, CodeForeignSite, "site_id"},
		{"loc=deu", "q=handy&api_key=demo&site_id=demo&loc=deu", 400, CodeInvalidParameter, "loc"},
		{"loc=1", "q=handy&api_key=demo&site_id=demo&loc=1", 400, CodeInvalidParameter, "loc"},
		{"loc=d1", "q=handy&api_key=demo&site_id=demo&loc=d1", 400, CodeInvalidParameter, "loc"},
		{"lang=german", "q=handy&api_key=demo&site_id=demo&lang=german", 400, CodeInvalidParameter, "lang"},
		{"lang=ge", "q=handy&api_key=demo&site_id=demo&lang=ge", 400, CodeInvalidParameter, "lang"},
		{"fields=price,colour", "q=handy&api_key=demo&site_id=demo&fields=price,colour", 400, CodeInvalidParameter, "fields"},
		{"logo.dim=80X80", "q=handy&api_key=demo&site_id=demo&logo.dim=80X80", 400, CodeInvalidParameter, "logo.dim"},
		{"ad_type=banner", "q=handy&api_key=demo&site_id=demo&ad_type=banner", 400, CodeInvalidParameter, "ad_type"},
		{"ad_type=product banner", "q=handy&api_key=demo&site_id=demo&ad_type=product+banner", 400, CodeInvalidParameter, "ad_type"},
		{"q_operator=xor", "q=handy&api_key=demo&site_id=demo&q_operator=xor", 400, CodeInvalidParameter, "q_operator"},
		{"q_operator=and&ctx.dist=high", "q=handy&api_key=demo&site_id=demo&q_operator=and&ctx.dist=high", 400, CodeInvalidParameter, "q_operator"},
		{"q_operator=and&ctx.dist=low", "q=handy&api_key=demo&site_id=demo&ctx.dist=low&q_operator=and", 400, CodeInvalidParameter, "q_operator"},
		{"ctx.dist=medium", "q=handy&api_key=demo&site_id=demo&ctx.dist=medium", 400, CodeInvalidParameter, "ctx.dist"},
		{"size=0", "q=handy&api_key=demo&site_id=demo&size=0", 400, CodeInvalidParameter, "size"},
		{"size=-1", "q=handy&api_key=demo&site_id=demo&size=-1", 400, CodeInvalidParameter, "size"},
		{"size=51", "q=handy&api_key=demo&site_id=demo&size=51", 400, CodeInvalidParameter, "size"},
		{"size=abc", "q=handy&api_key=demo&site_id=demo&size=abc", 400, CodeInvalidParameter, "size"},
		{"size=+5", "q=handy&api_key=demo&site_id=demo&size=%2B5", 400, CodeInvalidParameter, "size"},
		{"size=99999999999999999999", "q=handy&api_key=demo&site_id=demo&size=99999999999999999999", 400, CodeInvalidParameter, "size"},
		{"distinct_advertiser=0", "q=handy&api_key=demo&site_id=demo&distinct_advertiser=0", 400, CodeInvalidParameter, "distinct_advertiser"},
		{"distinct_advertiser=11", "q=handy&api_key=demo&site_id=demo&distinct_advertiser=11", 400, CodeInvalidParameter, "distinct_advertiser"},
		{"distinct_advertiser=x", "q=handy&api_key=demo&site_id=demo&distinct_advertiser=x", 400, CodeInvalidParameter, "distinct_advertiser"},
		{"yk_tag=<script>", "q=handy&api_key=demo&site_id=demo&yk_tag=%3Cscript%3E", 400, CodeInvalidParameter, "yk_tag"},
		{"yk_tag 65 characters", "q=handy&api_key=demo&site_id=demo&yk_tag=" + long(65), 400, CodeInvalidParameter, "yk_tag"},
		{"callback=alert(1);x", "q=handy&api_key=demo&site_id=demo&callback=alert(1)%3Bx", 400, CodeInvalidParameter, "callback"},
		{"callback=a-b", "q=handy&api_key=demo&site_id=demo&callback=a-b", 400, CodeInvalidParameter, "callback"},
		{"callback 65 characters", "q=handy&api_key=demo&site_id=demo&callback=" + long(65), 400, CodeInvalidParameter, "callback"},
		{"callback=a..b", "q=handy&api_key=demo&site_id=demo&callback=a..b", 400, CodeInvalidParameter, "callback"},
		{"q of 10 KB", "q=" + long(10<<10) + "&api_key=demo&site_id=demo", 400, CodeInvalidParameter, "q"},
		{"q of 1025 bytes", "q=" + long(1025) + "&api_key=demo&site_id=demo", 400, CodeInvalidParameter, "q"},
		{"invalid UTF-8 in q", "q=handy%FF%FE&api_key=demo&site_id=demo", 400, CodeInvalidParameter, "q"},
		{"repeated q", "q=handy&q=phone&api_key=demo&site_id=demo", 400, CodeInvalidParameter, "q"},
		{"repeated api_key", "q=handy&api_key=demo&api_key=demo&site_id=demo", 400, CodeInvalidParameter, "api_key"},
		{"repeated size", "q=handy&api_key=demo&site_id=demo&size=2&size=2", 400, CodeInvalidParameter, "size"},
		{"repeated loc", "q=handy&api_key=demo&site_id=demo&loc=de&loc=us", 400, CodeInvalidParameter, "loc"},
		{"repeated callback", "q=handy&api_key=demo&site_id=demo&callback=a&callback=b", 400, CodeInvalidParameter, "callback"},
		{"malformed escape", "q=%zz&api_key=demo&site_id=demo", 400, CodeInvalidParameter, ""},
		{"several problems, first named", "q=handy&api_key=demo&site_id=demo&loc=deu&size=0", 400, CodeInvalidParameter, "loc"},
	}
	env := newEnv(t, fixture())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := env.get(t, "/v2/search/link?"+tt.query, nil, "")
			body := readBody(t, res)
			if res.StatusCode != tt.status {
				t.Errorf("status = %d, want %d\n%s", res.StatusCode, tt.status, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Errorf("Access-Control-Allow-Origin = %q", got)
			}
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if e.Error.Code != tt.code || e.Error.Param != tt.param {
				t.Errorf("code, param = %q, %q; want %q, %q", e.Error.Code, e.Error.Param, tt.code, tt.param)
			}
			if !strings.Contains(e.Error.Message, tt.param) {
				t.Errorf("message %q does not name %s", e.Error.Message, tt.param)
			}
			if len(body) > 1024 {
				t.Errorf("error body is %d bytes; it should not echo the input", len(body))
			}
			if e.HTTPStatus != 0 {
				t.Errorf("plain JSON has http_status %d", e.HTTPStatus)
			}
		})
	}
}

// An error message names every bad parameter with its allowed values.
func TestSearchErrorNamesEveryParameter(t *testing.T) {
	env := newEnv(t, fixture())
	res := env.get(t, "/v2/search/link?q=handy&api_key=demo&site_id=demo&loc=deu&size=0&ad_type=banner&logo.dim=1X1", nil, "")
	var e errorResponse
	if err := json.Unmarshal(readBody(t, res), &e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"loc", "use_geo", "size", "1 to 50", "ad_type", "advertiser, product, coupon", "logo.dim", "90X90"} {
		if !strings.Contains(e.Error.Message, want) {
			t.Errorf("message %q lacks %q", e.Error.Message, want)
		}
	}
}

func TestSearchJSONP(t *testing.T) {
	env := newEnv(t, fixture())
	tests := []struct {
		name     string
		query    string
		callback string
		status   int // the status it would have had, copied into the body
	}{
		{"links", "q=lg+handy&api_key=demo&site_id=demo&loc=de", "cb", 200},
		{"dotted callback", "q=handy&api_key=demo&site_id=demo&fields=price,logo", "jQuery3_1.$cb.on_0", 200},
		{"no ads", "q=zzqqxx&api_key=demo&site_id=demo", "cb", 200},
		{"bad parameter", "q=handy&api_key=demo&site_id=demo&size=0", "cb", 400},
		{"unknown key", "q=handy&api_key=nope&site_id=demo", "cb", 401},
		{"foreign site", "q=handy&api_key=k2&site_id=demo", "cb", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := env.get(t, "/v2/search/link?"+tt.query, nil, "")
			want := readBody(t, plain)
			if plain.StatusCode != tt.status {
				t.Fatalf("plain status %d, want %d", plain.StatusCode, tt.status)
			}
			res := env.get(t, "/v2/search/link?"+tt.query+"&callback="+url.QueryEscape(tt.callback), nil, "")
			got := readBody(t, res)
			if res.StatusCode != http.StatusOK {
				t.Errorf("JSONP status = %d, want 200", res.StatusCode)
			}
			for k, v := range map[string]string{
				"Content-Type":                "text/javascript; charset=utf-8",
				"X-Content-Type-Options":      "nosniff",
				"Access-Control-Allow-Origin": "*",
			} {
				if res.Header.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, res.Header.Get(k), v)
				}
			}
			wrapped := "/**/" + tt.callback + `({"http_status":` + itoa(tt.status) + "," + string(want[1:]) + ");"
			if string(got) != wrapped {
				t.Errorf("JSONP body\n%s\nwant\n%s", got, wrapped)
			}
		})
	}
}

// TestV2UnknownPathAsTheAPI: a path under /v2 that names no endpoint (a
// typo, /v2/search/links) answers its 404 as the API answers: readable by
// a page's fetch from any origin, and as JSONP to a script tag with a
// callback, whose status is in the body. Elsewhere a 404 stays plain.
func TestV2UnknownPathAsTheAPI(t *testing.T) {
	ts := httptest.NewServer(newEnv(t, fixture()).handler)
	defer ts.Close()
	get := func(target string) (*http.Response, string) {
		t.Helper()
		res, err := http.Get(ts.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(readBody(t, res))
	}
	res, body := get("/v2/search/links?q=handy&api_key=demo&site_id=demo")
	if res.StatusCode != http.StatusNotFound || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(body, `"code":"not_found"`) || !strings.Contains(body, "/v2/search/links") {
		t.Errorf("fetch: %d, Access-Control-Allow-Origin %q, %s", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"), body)
	}
	res, jsonp := get("/v2/search/links?q=handy&api_key=demo&site_id=demo&callback=cb")
	if want := "/**/cb({\"http_status\":404," + body[1:] + ");"; res.StatusCode != http.StatusOK || jsonp != want ||
		res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("JSONP: %d %q\n%s\nwant\n%s", res.StatusCode, res.Header.Get("Content-Type"), jsonp, want)
	}
	// A callback that is no function name leaves the plain 404.
	if res, _ := get("/v2/search/links?callback=alert(1)"); res.StatusCode != http.StatusNotFound {
		t.Errorf("invalid callback: %d, want 404", res.StatusCode)
	}
	res, _ = get("/nope?callback=cb")
	if res.StatusCode != http.StatusNotFound || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/nope: %d, Access-Control-Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// No ads is 200 with an empty array, never null and never an error.
func TestSearchNoAds(t *testing.T) {
	env := newEnv(t, fixture())
	res := env.get(t, "/v2/search/link?q=zzqqxx&api_key=demo&site_id=demo", nil, "")
	if body := readBody(t, res); res.StatusCode != 200 || string(body) != `{"link":[]}` {
		t.Errorf("%d %s", res.StatusCode, body)
	}
}

// The seed's documented example, byte for byte.
func TestSearchSeedExample(t *testing.T) {
	env := newEnv(t, fixture())
	res := env.get(t, "/v2/search/link?q=lg+handy&api_key=demo&site_id=demo&loc=de&size=2", nil, "")
	got := readBody(t, res)
	want := `{"link":[` +
		`{"title":"handy-bestkauf.de - gebrauchte Handys verkaufen","keywords":["lg handy"],"ad":"https://r.example/v1/redirect?type=search\u0026adId=handy-bestkauf.de\u0026adType=advertiser\u0026api_key=demo\u0026site_id=demo\u0026criterionId=lg+handy","display_type":["link"]},` +
		`{"title":"Nokia Lumia 630 Smartphone 4,5 Zoll schwarz","keywords":["handy"],"ad":"https://r.example/v1/redirect?type=search\u0026adId=AMAZON.1.B00JVL2X1I\u0026adType=product\u0026api_key=demo\u0026site_id=demo\u0026criterionId=handy","display_type":["widget"]}` +
		`]}`
	if res.StatusCode != 200 || string(got) != want {
		t.Errorf("%d\n%s\nwant\n%s", res.StatusCode, got, want)
	}
}

func TestSearchAdType(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=handy+zubehör+phone+case&size=50&distinct_advertiser=10&ctx.dist=low"
	all := env.search(t, q, nil, "")
	kinds := map[match.Kind]bool{}
	for _, l := range all {
		kinds[fixtureAd(t, l.click.Get("adId")).Kind] = true
	}
	if len(kinds) != 3 {
		t.Fatalf("baseline has kinds %v, want all three: %v", kinds, adIDs(all))
	}
	tests := []struct {
		adType string
		want   []match.Kind
	}{
		{"product", []match.Kind{match.KindProduct}},
		{"advertiser", []match.Kind{match.KindAdvertiser}},
		{"coupon", []match.Kind{match.KindCoupon}},
		{"product coupon", []match.Kind{match.KindProduct, match.KindCoupon}},
		{"product+coupon", []match.Kind{match.KindProduct, match.KindCoupon}},
		{"advertiser,coupon", []match.Kind{match.KindAdvertiser, match.KindCoupon}},
		{"advertiser,product,coupon", []match.Kind{match.KindAdvertiser, match.KindProduct, match.KindCoupon}},
	}
	for _, tt := range tests {
		t.Run(tt.adType, func(t *testing.T) {
			links := env.search(t, q+"&ad_type="+url.QueryEscape(tt.adType), nil, "")
			seen := map[match.Kind]bool{}
			for _, l := range links {
				k := fixtureAd(t, l.click.Get("adId")).Kind
				seen[k] = true
				if !slices.Contains(tt.want, k) {
					t.Errorf("%s is a %s", l.click.Get("adId"), k)
				}
				if l.click.Get("adType") != k.String() {
					t.Errorf("adType %q for a %s", l.click.Get("adType"), k)
				}
			}
			if len(seen) != len(tt.want) {
				t.Errorf("kinds %v, want each of %v: %v", seen, tt.want, adIDs(links))
			}
		})
	}
}

func TestSearchSize(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=handy+phone+smartphone+nokia&ctx.dist=none&distinct_advertiser=10"
	all := env.search(t, q+"&size=50", nil, "")
	if len(all) <= match.DefaultSize {
		t.Fatalf("baseline has %d ads; the test needs more than %d", len(all), match.DefaultSize)
	}
	tests := []struct {
		size string
		want int
	}{
		{"", match.DefaultSize},
		{"1", 1},
		{"2", 2},
		{"10", 10},
		{"50", len(all)},
	}
	for _, tt := range tests {
		t.Run("size="+tt.size, func(t *testing.T) {
			query := q
			if tt.size != "" {
				query += "&size=" + tt.size
			}
			got := adIDs(env.search(t, query, nil, ""))
			if len(got) != tt.want {
				t.Errorf("%d ads, want %d: %v", len(got), tt.want, got)
			}
			if !slices.Equal(got, adIDs(all)[:len(got)]) {
				t.Errorf("size changed the order: %v, all %v", got, adIDs(all))
			}
		})
	}
}

func TestSearchDistinctAdvertiser(t *testing.T) {
	env := newEnv(t, fixture())
	offers := 0 // ads in the fixture with nokiaGTIN
	for _, a := range fixture() {
		if a.GTIN == nokiaGTIN {
			offers++
		}
	}
	tests := []struct {
		param string
		want  int // ads of the offer returned
	}{
		{"", min(match.DefaultDistinctAdvertiser, offers)},
		{"1", 1},
		{"2", 2},
		{"10", offers},
	}
	for _, tt := range tests {
		t.Run("distinct_advertiser="+tt.param, func(t *testing.T) {
			query := "q=nokia+lumia+630&size=50"
			if tt.param != "" {
				query += "&distinct_advertiser=" + tt.param
			}
			links := env.search(t, query, nil, "")
			advertisers := map[string]bool{}
			for _, l := range links {
				if a := fixtureAd(t, l.click.Get("adId")); a.GTIN == nokiaGTIN {
					advertisers[a.Advertiser] = true
				}
			}
			if len(advertisers) != tt.want {
				t.Errorf("%d advertisers deliver the offer, want %d: %v", len(advertisers), tt.want, adIDs(links))
			}
		})
	}
}

func TestSearchLoc(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+smartphone+phone+handy&size=50&distinct_advertiser=10"
	all := env.search(t, q, nil, "")
	for _, tt := range []struct{ loc, country string }{{"de", "de"}, {"DE", "de"}, {"us", "us"}, {"Gb", "gb"}} {
		t.Run(tt.loc, func(t *testing.T) {
			links := env.search(t, q+"&loc="+tt.loc, nil, "")
			if len(links) == 0 || len(links) == len(all) {
				t.Fatalf("loc=%s gives %d of %d ads; it should filter", tt.loc, len(links), len(all))
			}
			for _, l := range links {
				if a := fixtureAd(t, l.click.Get("adId")); !hasMarket(a, tt.country, "") {
					t.Errorf("%s does not run in %s", a.ID, tt.country)
				}
			}
			var want []string
			for _, l := range all {
				if hasMarket(fixtureAd(t, l.click.Get("adId")), tt.country, "") {
					want = append(want, l.click.Get("adId"))
				}
			}
			if got := adIDs(links); !sameSet(got, want) {
				t.Errorf("loc=%s: %v, want the %s ads %v", tt.loc, got, tt.country, want)
			}
		})
	}
}

func TestSearchLang(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+smartphone+phone+handy&size=50&distinct_advertiser=10"
	for _, lang := range []string{"de", "en", "EN"} {
		t.Run(lang, func(t *testing.T) {
			links := env.search(t, q+"&lang="+lang, nil, "")
			if len(links) == 0 {
				t.Fatal("no ads")
			}
			for _, l := range links {
				if a := fixtureAd(t, l.click.Get("adId")); !hasMarket(a, "", strings.ToLower(lang)) {
					t.Errorf("%s is not in %s", a.ID, lang)
				}
			}
		})
	}
	if links := env.search(t, q+"&lang=fr", nil, ""); len(links) != 0 {
		t.Errorf("lang=fr: %v, want none", adIDs(links))
	}
}

func TestSearchUseGeo(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+smartphone+phone+handy&size=50&distinct_advertiser=10"
	unfiltered := adIDs(env.search(t, q, nil, ""))
	tests := []struct {
		name    string
		remote  string
		header  http.Header
		country string // "" means no country filter
	}{
		{"trusted proxy DE", "127.0.0.1:5000", header("CF-IPCountry", "DE"), "de"},
		{"trusted proxy gb", "127.0.0.1:5000", header("CF-IPCountry", "gb"), "gb"},
		{"trusted IPv6 proxy US", "[::1]:5000", header("CF-IPCountry", "US"), "us"},
		{"untrusted peer", "198.51.100.4:5000", header("CF-IPCountry", "DE"), ""},
		{"unknown country XX", "127.0.0.1:5000", header("CF-IPCountry", "XX"), ""},
		{"Tor T1", "127.0.0.1:5000", header("CF-IPCountry", "T1"), ""},
		{"no country EU", "127.0.0.1:5000", header("CF-IPCountry", "EU"), ""},
		{"no header", "127.0.0.1:5000", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := env.get(t, "/v2/search/link?api_key=demo&site_id=demo&loc=use_geo&"+q, tt.header, tt.remote)
			if v := res.Header.Get("Vary"); v != "CF-IPCountry" {
				t.Errorf("Vary = %q, want CF-IPCountry", v)
			}
			got := adIDs(env.search(t, q+"&loc=use_geo", tt.header, tt.remote))
			if tt.country == "" {
				if !slices.Equal(got, unfiltered) {
					t.Errorf("got %v, want the unfiltered %v", got, unfiltered)
				}
				return
			}
			want := adIDs(env.search(t, q+"&loc="+tt.country, nil, ""))
			if !slices.Equal(got, want) || slices.Equal(got, unfiltered) {
				t.Errorf("got %v, want loc=%s's %v", got, tt.country, want)
			}
		})
	}
}

func TestSearchUseLocale(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+smartphone+phone+handy&size=50&distinct_advertiser=10"
	unfiltered := adIDs(env.search(t, q, nil, ""))
	tests := []struct {
		acceptLanguage string
		lang           string // "" means no language filter
	}{
		{"en-GB,en;q=0.9,de;q=0.8", "en"},
		{"de-DE,de;q=0.9,en;q=0.5", "de"},
		{"en;q=0.2, de;q=0.9", "de"},
		{"*;q=1, DE-at;q=0.5", "de"},
		{"fr-FR,fr;q=0.9", "fr"},
		{"*", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.acceptLanguage, func(t *testing.T) {
			var h http.Header
			if tt.acceptLanguage != "" {
				h = header("Accept-Language", tt.acceptLanguage)
			}
			res := env.get(t, "/v2/search/link?api_key=demo&site_id=demo&lang=use_locale&"+q, h, "")
			if v := res.Header.Get("Vary"); v != "Accept-Language" {
				t.Errorf("Vary = %q, want Accept-Language", v)
			}
			got := adIDs(env.search(t, q+"&lang=use_locale", h, ""))
			want := unfiltered
			if tt.lang != "" {
				want = adIDs(env.search(t, q+"&lang="+tt.lang, nil, ""))
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestSearchFields(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+lumia+630&size=50&distinct_advertiser=10"
	t.Run("price", func(t *testing.T) {
		links := env.search(t, q+"&fields=price", nil, "")
		var with, without int
		for _, l := range links {
			a := fixtureAd(t, l.click.Get("adId"))
			switch {
			case a.PriceCents > 0 && l.Price == nil:
				t.Errorf("%s has a price but no price field", a.ID)
			case a.PriceCents == 0 && l.Price != nil:
				t.Errorf("%s has no price but a price field %+v", a.ID, *l.Price)
			case l.Price != nil:
				with++
				if want := centsString(a.PriceCents); l.Price.Amount != want || l.Price.Currency != a.Currency {
					t.Errorf("%s price %+v, want %s %s", a.ID, *l.Price, want, a.Currency)
				}
			default:
				without++
			}
			if l.Logo != "" || l.GTIN != "" || l.AdType != "" {
				t.Errorf("%s has fields it was not asked for: %+v", a.ID, l)
			}
		}
		if with == 0 || without == 0 {
			t.Errorf("%d ads with price, %d without; the test needs both", with, without)
		}
	})
	t.Run("gtin,ad_type", func(t *testing.T) {
		links := env.search(t, q+"&fields=gtin,ad_type", nil, "")
		for _, l := range links {
			a := fixtureAd(t, l.click.Get("adId"))
			if l.GTIN != a.GTIN || l.AdType != a.Kind.String() || l.Price != nil {
				t.Errorf("%s: gtin %q ad_type %q price %v", a.ID, l.GTIN, l.AdType, l.Price)
			}
		}
	})
	t.Run("logoad_type", func(t *testing.T) {
		links := env.search(t, q+"&fields=logoad_type", nil, "")
		for _, l := range links {
			a := fixtureAd(t, l.click.Get("adId"))
			if l.AdType != a.Kind.String() || (l.Logo != "") != (a.Logo != "") {
				t.Errorf("%s: ad_type %q logo %q", a.ID, l.AdType, l.Logo)
			}
		}
	})
}

func centsString(c int64) string {
	s := itoa(int(c / 100))
	r := int(c % 100)
	if r < 10 {
		return s + ".0" + itoa(r)
	}
	return s + "." + itoa(r)
}

func TestSearchLogoDim(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+lumia+630+smartphone&size=50&distinct_advertiser=10"
	for _, dim := range []string{"90X90", "90x90", "150X150"} {
		t.Run(dim, func(t *testing.T) {
			links := env.search(t, q+"&logo.dim="+dim, nil, "")
			var templated int
			for _, l := range links {
				a := fixtureAd(t, l.click.Get("adId"))
				want := strings.ReplaceAll(a.Logo, "{dim}", strings.ToLower(dim))
				if l.Logo != want {
					t.Errorf("%s logo %q, want %q", a.ID, l.Logo, want)
				}
				if strings.Contains(a.Logo, "{dim}") {
					templated++
				}
			}
			if templated == 0 {
				t.Error("no ad with a sized logo; the test proves nothing")
			}
		})
	}
}

func TestSearchQOperator(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=nokia+schwarz&size=50&distinct_advertiser=10"
	or := adIDs(env.search(t, q+"&ctx.dist=none", nil, ""))
	orExplicit := adIDs(env.search(t, q+"&ctx.dist=none&q_operator=or", nil, ""))
	and := adIDs(env.search(t, q+"&ctx.dist=none&q_operator=and", nil, ""))
	andImplied := adIDs(env.search(t, q+"&q_operator=and", nil, ""))
	if !slices.Equal(or, orExplicit) {
		t.Errorf("default %v differs from q_operator=or %v", or, orExplicit)
	}
	if !slices.Equal(and, andImplied) {
		t.Errorf("q_operator=and without ctx.dist %v differs from with ctx.dist=none %v", andImplied, and)
	}
	if len(and) == 0 || len(and) >= len(or) || !subset(and, or) {
		t.Errorf("and %v should be a smaller, non-empty part of or %v", and, or)
	}
	for _, id := range and {
		a := fixtureAd(t, id)
		text := strings.ToLower(a.Title + " " + a.Description + " " + a.Manufacturer)
		if !strings.Contains(text, "nokia") || !strings.Contains(text, "schwarz") {
			t.Errorf("and returned %s, which lacks a term", id)
		}
	}
}

func TestSearchCtxDist(t *testing.T) {
	env := newEnv(t, fixture())
	const q = "q=dual+sim+handy&size=50&distinct_advertiser=10"
	high := adIDs(env.search(t, q, nil, ""))
	highExplicit := adIDs(env.search(t, q+"&ctx.dist=high", nil, ""))
	low := adIDs(env.search(t, q+"&ctx.dist=low", nil, ""))
	none := adIDs(env.search(t, q+"&ctx.dist=none", nil, ""))
	if !slices.Equal(high, highExplicit) {
		t.Errorf("default %v differs from ctx.dist=high %v", high, highExplicit)
	}
	if len(high) == 0 || !(len(high) < len(low) && len(low) < len(none)) {
		t.Errorf("counts do not widen: high %d, low %d, none %d", len(high), len(low), len(none))
	}
	if !subset(high, low) || !subset(low, none) {
		t.Errorf("not high ⊆ low ⊆ none:\nhigh %v\nlow  %v\nnone %v", high, low, none)
	}
}

func TestSearchYkTag(t *testing.T) {
	env := newEnv(t, fixture())
	for _, tag := range []string{"partner_7:summer-26", "x", strings.Repeat("Z", 64)} {
		t.Run(tag, func(t *testing.T) {
			links := env.search(t, "q=handy&yk_tag="+tag, nil, "")
			if len(links) == 0 {
				t.Fatal("no ads")
			}
			for _, l := range links {
				if l.click.Get("yk_tag") != tag || !strings.HasSuffix(l.Ad, "&yk_tag="+url.QueryEscape(tag)) {
					t.Errorf("ad %s does not carry yk_tag %s", l.Ad, tag)
				}
			}
		})
	}
	for _, l := range env.search(t, "q=handy", nil, "") {
		if l.click.Has("yk_tag") {
			t.Errorf("ad %s has a yk_tag nobody gave", l.Ad)
		}
	}
}

// Every click URL carries the request's key and site and points at the
// configured redirect address.
func TestSearchClickURL(t *testing.T) {
	env := newEnv(t, fixture())
	for _, l := range env.search(t, "q=blog+handy&api_key=k2&site_id=blog&size=50", nil, "") {
		u, _ := url.Parse(l.Ad)
		if u.Scheme+"://"+u.Host+u.Path != "https://r.example/v1/redirect" {
			t.Errorf("click URL %s", l.Ad)
		}
		c := l.click
		if c.Get("type") != "search" || c.Get("api_key") != "k2" || c.Get("site_id") != "blog" || c.Get("criterionId") == "" {
			t.Errorf("click URL %s", l.Ad)
		}
	}
}

// fakeIndexes serves one index for de-DE and another for everything else,
// so a test can see which one answered.
type fakeIndexes struct {
	AllFn func() *match.Index
	ForFn func(country, lang string) *match.Index
}

var _ market.Indexes = (*fakeIndexes)(nil)

func (f *fakeIndexes) All() *match.Index                     { return f.AllFn() }
func (f *fakeIndexes) Bid(string) int64                      { return 0 }
func (f *fakeIndexes) For(country, lang string) *match.Index { return f.ForFn(country, lang) }

func TestSearchAnswersFromMarketIndex(t *testing.T) {
	full, err := match.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	// The de-DE "shard" has one ad only, so its answers are recognisable.
	shard, err := match.Build([]match.Ad{fixtureAd(t, "handyladen.de")})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	env := newEnv(t, fixture())
	env.handler = NewServer(Deps{
		Config: config.Default(),
		Indexes: &fakeIndexes{
			AllFn: func() *match.Index { return full },
			ForFn: func(country, lang string) *match.Index {
				asked = append(asked, country+"-"+lang)
				if country == "de" && lang == "de" {
					return shard
				}
				return nil
			},
		},
		Partners: testPartners(t),
		Clicks:   &clickRecorder{},
	})
	tests := []struct {
		query  string
		header http.Header
		remote string
		want   []string // ad ids
		asked  string   // market asked for, if any
	}{
		{query: "q=handy&loc=de&lang=de", want: []string{"handyladen.de"}, asked: "de-de"},
		{query: "q=handy&loc=DE&lang=use_locale", header: header("Accept-Language", "de-DE"), want: []string{"handyladen.de"}, asked: "de-de"},
		{query: "q=handy&loc=use_geo&lang=de", header: header("CF-IPCountry", "DE"), remote: "127.0.0.1:1", want: []string{"handyladen.de"}, asked: "de-de"},
		// The catalog has no at-DE market: the full index answers.
		{query: "q=handy&loc=at&lang=de", want: []string{}},
		// Its ads run in Germany in German only, so a country alone names de-DE.
		{query: "q=handy&loc=de", want: []string{"handyladen.de"}, asked: "de-de"},
		// A language alone names the one market in it.
		{query: "q=handy&lang=de", want: []string{"handyladen.de"}, asked: "de-de"},
		// No market runs in Czech: the whole catalog, filtered by it, has no ads.
		{query: "q=handy&lang=cs", want: []string{}},
		// Two markets run in English: the whole catalog, filtered by it.
		{query: "q=headphones&lang=en", want: adIDsOf(full, full.Match(&match.Query{Text: "headphones", Lang: "en"}))},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			asked = nil
			got := adIDs(env.search(t, tt.query, tt.header, tt.remote))
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if tt.asked != "" && !slices.Equal(asked, []string{tt.asked}) {
				t.Errorf("asked for markets %v, want %s", asked, tt.asked)
			}
			if tt.asked == "" && len(asked) != 0 {
				t.Errorf("asked for markets %v without a full market", asked)
			}
		})
	}
}

// The market's own index answers byte for byte like that market's shard
// would in the page.
func TestSearchMarketAnswerIsTheShards(t *testing.T) {
	env := newEnv(t, fixture())
	res := env.get(t, "/v2/search/link?q=nokia+handy&api_key=demo&site_id=demo&loc=de&lang=de&fields=price,logo", nil, "")
	got := readBody(t, res)
	shard := env.indexes.For("de", "de")
	if shard == nil {
		t.Fatal("no de-DE index")
	}
	want := shard.AppendResponse(nil, shard.Match(&match.Query{Text: "nokia handy", Country: "de", Lang: "de",
		Size: match.DefaultSize, DistinctAdvertiser: match.DefaultDistinctAdvertiser}),
		linkOptions(&contract.Links{Base: "https://r.example", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo",
			Fields: match.FieldPrice | match.FieldLogo}))
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// A country whose ads run in several languages has an index of its own:
// a search that names the country alone (and the page context, which has
// no lang) answers from it, byte for byte as the page's shard of it.
func TestSearchCountryAnswerIsTheShards(t *testing.T) {
	chDE, chFR := match.Market{Country: "ch", Lang: "de"}, match.Market{Country: "ch", Lang: "fr"}
	ads := fixture()
	for i := range ads {
		if slices.Contains(ads[i].Markets, mDE) {
			ads[i].Markets = append(ads[i].Markets, chDE)
		}
	}
	ads = append(ads, match.Ad{ID: "natel.example.ch", Kind: match.KindAdvertiser, Title: "Natel - téléphones mobiles",
		Keywords: []string{"handy", "natel", "téléphone"}, Landing: "https://natel.example.ch/", Advertiser: "natel.example.ch",
		Markets: []match.Market{chFR}, BidMicros: 500000})
	env := newEnv(t, ads)
	ch := env.indexes.For("ch", "")
	if ch == nil || ch.Len() != 8 {
		t.Fatalf("the ch index: %v, want the 7 ads in de-CH and the one in fr-CH", ch)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	rec := &recordingIndexes{Indexes: env.indexes}
	env.handler = NewServer(Deps{Config: cfg, Indexes: rec, Partners: testPartners(t), Clicks: &clickRecorder{}})
	got := readBody(t, env.get(t, "/v2/search/link?q=nokia+handy&api_key=demo&site_id=demo&loc=ch&fields=price,logo", nil, ""))
	if asked := rec.take(); !slices.Equal(asked, []string{"ch-"}) {
		t.Errorf("asked for %v, want the country's index, ch-", asked)
	}
	want := ch.AppendResponse(nil, ch.Match(&match.Query{Text: "nokia handy", Country: "ch",
		Size: match.DefaultSize, DistinctAdvertiser: match.DefaultDistinctAdvertiser}),
		linkOptions(&contract.Links{Base: "https://r.example", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo",
			Fields: match.FieldPrice | match.FieldLogo}))
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte("natel.example.ch")) || !bytes.Contains(got, []byte("handyladen.de")) {
		t.Errorf("got\n%s\nwant\n%s (both languages' ads)", got, want)
	}
}

// linkOptions are l's options, for a test's one use.
func linkOptions(l *contract.Links) *match.LinkOptions {
	o := l.Options()
	return &o
}

func adIDsOf(ix *match.Index, hits []match.Hit) []string {
	var ids []string
	for _, h := range hits {
		ids = append(ids, ix.Ad(h.Ad).ID)
	}
	return ids
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && subset(a, b) && subset(b, a)
}
