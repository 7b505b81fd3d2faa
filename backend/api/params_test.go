package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/contract"
)

func TestLocaleLang(t *testing.T) {
	tests := map[string]string{
		"":                                "",
		"de":                              "de",
		"de-DE,de;q=0.9,en;q=0.8":         "de",
		"en-US;q=0.5, fr;q=0.7":           "fr",
		"*, es":                           "es",
		"i-klingon, deu, en":              "en",
		"en;q=0, de;q=0.1":                "de",
		"en;q=bogus":                      "",
		"EN-gb":                           "en",
		"xx-YY, qq, de;q=0.5":             "de",
		"xx":                              "",
		"zh-Hant-TW;q=0.9, pt-BR;q=1":     "pt",
		" de ; q = 0.3 , en ; q=0.2 ":     "de",
		strings.Repeat("x,", 2000) + "it": "it",
	}
	for h, want := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if h != "" {
			r.Header.Set("Accept-Language", h)
		}
		if got := localeLang(r); got != want {
			t.Errorf("localeLang(%.40q) = %q, want %q", h, got, want)
		}
	}
}

// The error body contract writes, with the server's fields, is the one
// the server's JSON encoder wrote for the same error.
func TestErrorBodyIsJSONs(t *testing.T) {
	type detail struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Param     string `json:"param,omitempty"`
		RequestID string `json:"request_id,omitempty"`
		Limit     string `json:"limit,omitempty"`
		Retry     int64  `json:"retry_after,omitempty"`
	}
	for _, e := range []*Error{
		{Code: CodeInvalidParameter, Param: "q", Message: `q is "<b>" & "\xff" ` + "\u2028\x01\t"},
		{Code: CodeInternal, Message: "internal error"},
		{Code: CodeRateLimited, Param: "api_key", Message: "too many requests", Limit: "api_key_prefix", RetryAfter: 2},
		{Code: CodeQueueFull, Message: "too many pages", RetryAfter: 3600},
		{Code: CodeRateLimited, Message: "too many", Limit: `a "<b>" \xff`},
	} {
		for _, id := range []string{"", "0af1-3"} {
			want, err := json.Marshal(struct {
				Error detail `json:"error"`
			}{detail{e.Code, e.Message, e.Param, id, e.Limit, e.RetryAfter}})
			if err != nil {
				t.Fatal(err)
			}
			if got := e.bodyWithID(id); string(got) != string(want) {
				t.Errorf("body %s, want %s", got, want)
			}
		}
	}
}

// FuzzSearchHandler checks that any query string gets a well-formed
// answer: rejections are 400s naming a parameter, and the whole handler
// answers valid JSON or JSONP.
func FuzzSearchHandler(f *testing.F) {
	for _, s := range []string{
		"q=lg+handy&api_key=demo&site_id=demo",
		"q=handy&api_key=demo&site_id=demo&callback=cb&loc=use_geo&lang=use_locale",
		"q=nokia&api_key=demo&site_id=demo&fields=price,logoad_type&logo.dim=90X90&ad_type=product+coupon",
		"q=%FF&api_key=demo&site_id=demo&size=-1&loc=deu&callback=a-b",
		"q=a&q=b&api_key=nope&site_id=demo&callback=x.y",
		"q=%zz;&api_key",
		"",
	} {
		f.Add(s)
	}
	env := newEnv(f, fixture())
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest(http.MethodGet, "/v2/search/link", nil)
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, req)
		res := rec.Result()
		body := readBody(t, res)
		switch res.StatusCode {
		case 200, 401, 403:
		case 400:
			var e errorResponse
			if err := json.Unmarshal(body, &e); err == nil && (e.Error.Message == "" || e.Error.Param == "" && !strings.HasPrefix(e.Error.Message, "the query string is malformed")) {
				t.Fatalf("400 %s for %q", body, raw)
			}
		default:
			t.Fatalf("status %d for %q", res.StatusCode, raw)
		}
		if res.Header.Get("Content-Type") == "text/javascript; charset=utf-8" {
			i := strings.IndexByte(string(body), '(')
			if !strings.HasPrefix(string(body), "/**/") || i < 0 || !contract.ValidCallback(string(body[4:i])) || !strings.HasSuffix(string(body), ");") {
				t.Fatalf("bad JSONP %q for %q", body, raw)
			}
			body = body[i+1 : len(body)-2]
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON %q for %q", body, raw)
		}
	})
}

// TestHugeListsAnswerBriefly: a fields or ad_type list of thousands of bad
// items, within the URL's bound, is one 400 that names the parameter and
// its first bad item, not every one: a message per item made an answer of
// megabytes, and joining them cost the server time quadratic in the items.
func TestHugeListsAnswerBriefly(t *testing.T) {
	env := newEnv(t, fixture())
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	bad := strings.TrimSuffix(strings.Repeat("a,", 10000), ",")
	page := "url=http%3A%2F%2Flocalhost%2Fp&api_key=demo&site_id=demo"
	for _, c := range []struct{ target, param string }{
		{"/v2/search/link?q=x&api_key=demo&site_id=demo&fields=" + bad, "fields"},
		{"/v2/search/link?q=x&api_key=demo&site_id=demo&ad_type=" + strings.ReplaceAll(bad, ",", "+"), "ad_type"},
		{"/v2/page/link?" + page + "&fields=" + bad, "fields"},
		{"/v2/page/link?" + page + "&ad_type=" + bad, "ad_type"},
		{"/v2/search/link?q=x&api_key=demo&site_id=demo&callback=cb&fields=price," + bad, "fields"},
	} {
		res, err := http.Get(srv.URL + c.target)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, res)
		var e struct {
			Error struct{ Param, Message string }
		}
		if i := strings.IndexByte(string(body), '{'); i >= 0 {
			json.Unmarshal([]byte(strings.TrimSuffix(string(body[i:]), ");")), &e)
		}
		if e.Error.Param != c.param || strings.Count(e.Error.Message, `"a" is not one`) != 1 || len(body) > 1<<10 {
			t.Errorf("%.60s...: %s, %d bytes (%.200s), want a message naming %s and its first bad item", c.target, res.Status, len(body), body, c.param)
		}
	}
}
