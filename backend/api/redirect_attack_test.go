package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestRedirectRefusesHostileLandings: the catalog refuses a landing URL
// that is not an absolute http or https URL, but the redirect checks the
// one it sends the browser to itself, so an ad that reached the index by
// another way cannot make it an open or a script redirect: every such
// landing is a 500 with no Location and no header of its own.
func TestRedirectRefusesHostileLandings(t *testing.T) {
	hostile := []string{
		"javascript:alert(1)",
		"JavaScript:alert(document.domain)//https://ok.example/",
		"data:text/html,<script>alert(1)</script>",
		"//evil.example/",
		"/\\evil.example/",
		"\\/evil.example",
		"https:evil.example",
		"https:/evil.example",
		"https:///evil.example",
		"https://brand.example@evil.example/",
		"https://brand.example:x@evil.example/",
		"https://ok.example/\r\nSet-Cookie: a=1",
		"https://ok.example/%0d%0a\nLocation: https://evil.example/",
		"https://ok.example/\x00",
		" https://ok.example/",
		"https://ok.example/ x",
		"ftp://ok.example/",
		"",
	}
	ads := fixture()
	ad := ads[0]
	ads = ads[:0:0]
	for i, l := range hostile {
		a := ad
		a.ID = "hostile" + itoa(i) + ".example"
		a.Advertiser = a.ID
		a.Landing = l
		ads = append(ads, a)
	}
	good := ad
	good.ID, good.Advertiser, good.Landing = "good.example", "good.example", "HTTPS://good.example/p?q=1#top"
	ads = append(ads, good)
	env := newEnv(t, ads)
	for i, l := range hostile {
		id := "hostile" + itoa(i) + ".example"
		res := env.get(t, clickQuery("adId", id, "adType", ad.Kind.String()), nil, "")
		readBody(t, res)
		if res.StatusCode != http.StatusInternalServerError || res.Header.Get("Location") != "" || res.Header.Get("Set-Cookie") != "" {
			t.Errorf("landing %q: %d, Location %q, Set-Cookie %q", l, res.StatusCode, res.Header.Get("Location"), res.Header.Get("Set-Cookie"))
		}
	}
	res := env.get(t, clickQuery("adId", good.ID, "adType", good.Kind.String()), nil, "")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != good.Landing {
		t.Errorf("good landing: %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	if strings.Contains(res.Header.Get("Location"), "\n") {
		t.Errorf("Location %q", res.Header.Get("Location"))
	}
}
