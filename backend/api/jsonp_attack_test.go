package api

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/goccy/go-json"
)

// TestJSONPCallbackAttacks: a callback that is not a plain dotted name
// (line separators U+2028/9, markup, a statement, over 64 characters) is
// refused by name with a plain JSON 400 that no script runs; a name that
// is one (constructor, __proto__) only names what is called. Every JSONP
// answer is served so that nothing sniffs it as HTML, and a value the
// answer echoes cannot end the script or the string it sits in.
func TestJSONPCallbackAttacks(t *testing.T) {
	env := newEnv(t, fixture())
	const search = "/v2/search/link?q=handy&api_key=demo&site_id=demo"
	for _, cb := range []string{
		"cb\u2028alert(1)", "cb\u2029", "\u2028", "a\u00a0b", "cb</script><script>alert(1)//",
		"alert(1)//", "a.b(1)", "cb\r\nSet-Cookie:x=1", "a\x00", "(cb)", "a['b']", "1cb",
		strings.Repeat("a", 65), "a." + strings.Repeat("b", 63), "-->", "<!--",
	} {
		t.Run(url.QueryEscape(cb), func(t *testing.T) {
			res := env.get(t, search+"&callback="+url.QueryEscape(cb), nil, "")
			body := readBody(t, res)
			if res.StatusCode != http.StatusBadRequest || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", res.Header.Get("X-Content-Type-Options"))
			}
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Param != "callback" {
				t.Fatalf("error %+v (%v), want one naming callback\n%s", e.Error, err, body)
			}
			if strings.ContainsAny(string(body), "<>\u2028\u2029\r\n") {
				t.Errorf("the error echoes markup or a line break: %s", body)
			}
		})
	}
	// A callback the query string cuts with ';' never reaches the answer.
	res := env.get(t, search+"&callback=cb;alert(1)", nil, "")
	if body := readBody(t, res); res.StatusCode != http.StatusBadRequest || strings.HasPrefix(string(body), "/**/") {
		t.Errorf("callback=cb;alert(1): %d %s", res.StatusCode, body)
	}
	for _, cb := range []string{"constructor", "__proto__", "Object.prototype.toString", "$", strings.Repeat("a", 64)} {
		res := env.get(t, search+"&callback="+url.QueryEscape(cb), nil, "")
		body := string(readBody(t, res))
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(body, "/**/"+cb+`({"http_status":200,`) || !strings.HasSuffix(body, "});") {
			t.Errorf("callback %q: %d %.80s", cb, res.StatusCode, body)
		}
		for k, v := range map[string]string{
			"Content-Type":           "text/javascript; charset=utf-8",
			"X-Content-Type-Options": "nosniff",
			"Content-Disposition":    "attachment; filename=f.txt",
		} {
			if got := res.Header.Get(k); got != v {
				t.Errorf("callback %q: %s %q, want %q", cb, k, got, v)
			}
		}
	}
	// An error that quotes the client's value, written as JSONP: neither
	// "</script>" nor a line separator comes out raw.
	hostile := "</script><script>alert(1)</script>\u2028\u2029"
	for _, target := range []string{
		search + "&loc=" + url.QueryEscape(hostile) + "&callback=cb",
		"/v2/page/link?api_key=demo&site_id=demo&url=" + url.QueryEscape("http://a.example/"+hostile) + "&callback=cb",
		"/v2/shards?api_key=demo&site_id=demo&loc=" + url.QueryEscape(hostile) + "&callback=cb",
	} {
		res := env.get(t, target, nil, "")
		body := string(readBody(t, res))
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(body, "/**/cb(") {
			t.Errorf("%s: %d %s", target, res.StatusCode, body)
			continue
		}
		if strings.ContainsAny(body, "<>\u2028\u2029") {
			t.Errorf("%s: markup or a line separator raw in the JSONP answer: %s", target, body)
		}
	}
}
