package clicks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/store"
)

func TestIsBot(t *testing.T) {
	for ua, want := range map[string]bool{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36":                                   false,
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36 Edg/131.0":                         false,
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1":       false,
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/440.0]":         false,
		"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36":    false,
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0":                                                                        false,
		"Mozilla/5.0 (Windows NT 10.0; Trident/7.0; rv:11.0) like Gecko":                                                                                false,
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                                                                      true,
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/131.0.0.0 Safari/537.36": true,
		"Mozilla/5.0 (compatible; bingbot/2.0)": true,
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0 Safari/537.36":                 true,
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36 Lighthouse":              true,
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 puppeteer": true,
		"Mozilla/5.0 (compatible; Barracuda Sentinel (EE))":                                                                         true,
		"Barracuda Sentinel (EE)": true,
		"Mozilla/5.0":             true,
		"Mozilla/5.0 ()":          true,
		"x":                       true,
		"WhatsApp/2.23.20.0":      true,
		"WhatsApp/2.23":           true,
		"ms-office":               true,
		"Mozilla/4.0 (compatible; ms-office; MSOffice 16)": true,
		"\u0441url/8.0": true, // a Cyrillic es
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firef\u043ex/133.0": true,
		"curl/8.5.0":                       true,
		"Wget/1.21":                        true,
		"python-requests/2.32":             true,
		"Go-http-client/1.1":               true,
		"Baiduspider":                      true,
		"facebookexternalhit/1.1":          true,
		"Mozilla/5.0 AhrefsBot/7.0":        true,
		"Mozilla/5.0 (compatible) Crawler": true,
		"":                                 true,
		"   ":                              true,
	} {
		if got := IsBot(ua); got != want {
			t.Errorf("IsBot(%q) = %v, want %v", ua, got, want)
		}
		if got := IsBot(ua); got != want { // from the cache
			t.Errorf("IsBot(%q) again = %v, want %v", ua, got, want)
		}
	}
}

func TestNetwork(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.1":                 "192.0.2.1",
		"::ffff:192.0.2.1":          "192.0.2.1",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::/64",
		"2001:db8:1:2::ffff":        "2001:db8:1:2::/64",
		"2001:db8:1:2::1%z1":        "2001:db8:1:2::/64",
		"fe80::1%eth0":              "fe80::/64",
		"::ffff:192.0.2.1%z9":       "192.0.2.1",
		"2001:db8:1:3::1":           "2001:db8:1:3::/64",
		"not an address":            "not an address",
		" 198.51.100.7 ":            "198.51.100.7",
		"2001:0db8:0001:0002::0001": "2001:db8:1:2::/64",
		// 6to4: the /48 of 192.0.2.1, whichever /64 of it.
		"2002:c000:201::1":        "192.0.2.1",
		"2002:c000:201:ffff:1::9": "192.0.2.1",
		"2002:c000:201:1::1%z1":   "192.0.2.1",
		"2002:c000:202::1":        "192.0.2.2",
		"2003:c000:201::1":        "2003:c000:201::/64",
		// Teredo: the client 192.0.2.1 (its bits flipped), whichever
		// server, flags and port.
		"2001:0:4136:e378:8000:63bf:3fff:fdfe": "192.0.2.1",
		"2001:0:ffff:1:0:1:3fff:fdfe%z":        "192.0.2.1",
		"2001:0:4136:e378:8000:63bf:3fff:fdfd": "192.0.2.2",
		"2001:1:4136:e378:8000:63bf:3fff:fdfe": "2001:1:4136:e378::/64",
	} {
		if got := Network(ip); got != want {
			t.Errorf("Network(%q) = %q, want %q", ip, got, want)
		}
	}
}

func TestPrefix(t *testing.T) {
	for ip, want := range map[string]string{
		"2001:db8:1:2:3:4:5:6":     "2001:db8:1::/48",
		"2001:db8:1:ffff::1%z":     "2001:db8:1::/48",
		"2001:db8:2::1":            "2001:db8:2::/48",
		"192.0.2.1":                "192.0.2.0/24",
		"192.0.2.255":              "192.0.2.0/24",
		"192.0.3.1":                "192.0.3.0/24",
		"::ffff:192.0.2.1":         "192.0.2.0/24",
		"2002:c000:201:7::1":       "192.0.2.0/24", // 6to4: its IPv4 address's
		"2001:0:1:2:3:4:3fff:fd00": "192.0.2.0/24", // Teredo: its client's
		"not an address":           "",
	} {
		if got := Prefix(ip); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", ip, got, want)
		}
		if v4 := IsIPv4Prefix(want); v4 != strings.Contains(want, ".") {
			t.Errorf("IsIPv4Prefix(%q) = %v", want, v4)
		}
	}
}

// ImpressionNetworks: an IPv4 client, a 6to4 one and any client with the
// bound off are keyed by their Network; the /64s of one /48 share at most
// shares keys, spread over all of them; another /48 has keys of its own.
// The network it gives beside the key is always Network's.
func TestImpressionNetworks(t *testing.T) {
	key := func(ip string, shares int) string {
		t.Helper()
		n, k := ImpressionNetworks(ip, shares)
		if n != Network(ip) {
			t.Errorf("ImpressionNetworks(%q, %d) gives network %q, want Network's %q", ip, shares, n, Network(ip))
		}
		return k
	}
	for ip, want := range map[string]string{
		"192.0.2.1":                "192.0.2.1",
		"::ffff:192.0.2.1":         "192.0.2.1",
		"2002:c000:201:7::1":       "192.0.2.1",
		"2001:0:1:2:3:4:3fff:fdfe": "192.0.2.1",
		"not an address":           "not an address",
	} {
		if got := key(ip, 8); got != want {
			t.Errorf("ImpressionNetworks(%q, 8) keys %q, want %q", ip, got, want)
		}
	}
	if got := key("2001:db8:1:2::1", 0); got != "2001:db8:1:2::/64" {
		t.Errorf("with no bound: %q, want the /64", got)
	}
	keys := map[string]int{}
	for i := range 4096 {
		k := key(fmt.Sprintf("2001:db8:1:%x::%x", i, i), 8)
		if !strings.HasPrefix(k, "2001:db8:1::/48#") {
			t.Fatalf("a /64 of 2001:db8:1::/48 keyed %q", k)
		}
		keys[k]++
	}
	if len(keys) != 8 {
		t.Errorf("4,096 /64s of a /48 made %d keys, want 8", len(keys))
	}
	for k, n := range keys {
		if n < 4096/8/2 {
			t.Errorf("key %q holds %d of 4,096 /64s: the hash does not spread them", k, n)
		}
	}
	if a, b := key("2001:db8:1:5::1", 8), key("2001:db8:1:5::2", 8); a != b {
		t.Errorf("two addresses of one /64: %q and %q", a, b)
	}
	if a := key("2001:db8:2:5::1", 8); keys[a] != 0 {
		t.Errorf("another /48 shares key %q", a)
	}
}

func TestIntent(t *testing.T) {
	h := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	const (
		chrome  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		edge    = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"
		webview = "Mozilla/5.0 (Linux; Android 14; Pixel 8; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.0.0 Mobile Safari/537.36"
		firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
		safari  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
		crios   = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1"
		fxios   = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/133.0 Mobile/15E148 Safari/605.1.15"
	)
	nav := []string{"Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}
	tests := []struct {
		name string
		h    http.Header
		ua   string
		want string
	}{
		{"a click in Chromium", h(append(nav, "Sec-Fetch-User", "?1", "Sec-Fetch-Site", "cross-site")...), chrome, ""},
		{"a click in Firefox", h(append(nav, "Sec-Fetch-User", "?1")...), firefox, ""},
		// Safari and the browsers of iOS send no Sec-Fetch-User at all.
		{"a click in Safari", h(nav...), safari, ""},
		{"a click in Chrome on iOS", h(nav...), crios, ""},
		{"a click in Firefox on iOS", h(nav...), fxios, ""},
		{"a navigation without Sec-Fetch-User, no user agent", h(nav...), "", ""},
		// Chromium and Firefox send it for every navigation a person starts:
		// without it, the page's script navigated.
		{"a script's navigation in Chromium", h(nav...), chrome, ReasonNotNavigation},
		{"a script's navigation in Edge", h(nav...), edge, ReasonNotNavigation},
		{"a script's navigation in Android's WebView", h(nav...), webview, ReasonNotNavigation},
		{"a script's navigation in Firefox", h(nav...), firefox, ReasonNotNavigation},
		{"no Fetch Metadata", h(), chrome, ReasonNoIntent},
		{"only Sec-Fetch-Site", h("Sec-Fetch-Site", "cross-site"), chrome, ReasonNoIntent},
		{"a hidden image", h("Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image"), safari, ReasonNotNavigation},
		{"a frame", h("Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "iframe"), safari, ReasonNotNavigation},
		{"a fetch", h("Sec-Fetch-Mode", "cors", "Sec-Fetch-Dest", "empty"), safari, ReasonNotNavigation},
		{"Sec-Fetch-User ?0", h(append(nav, "Sec-Fetch-User", "?0")...), safari, ReasonNotNavigation},
		{"speculation rules prefetch", h(append(nav, "Sec-Purpose", "prefetch")...), chrome, ReasonPrefetch},
		{"prerender", h(append(nav, "Sec-Purpose", "prefetch;prerender")...), chrome, ReasonPrefetch},
		{"old Purpose header", h(append(nav, "Purpose", "prefetch")...), chrome, ReasonPrefetch},
		{"Firefox link prefetch", h("X-Moz", "prefetch"), firefox, ReasonPrefetch},
		{"Safari preview", h(append(nav, "X-Purpose", "preview")...), safari, ReasonPrefetch},
		{"prefetch without Fetch Metadata", h("Purpose", "Prefetch"), chrome, ReasonPrefetch},
	}
	for _, tt := range tests {
		if got := IntentOf(tt.h).Reason(tt.ua); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	sent := http.Header{}
	Navigation.Header(sent)
	if got := IntentOf(sent); got.Reason(chrome) != "" || got != Navigation {
		t.Errorf("Navigation's headers read back as %+v", got)
	}
}

func testWindows(t *testing.T) *BoltWindows {
	t.Helper()
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w, err := NewWindows(db)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestJudge(t *testing.T) {
	ks := testKeys(t, "k1")
	p := sample()
	exp, sig := ks.Sign(&p, testDecision, t0.Add(48*time.Hour))
	tok := ks.Token(p.APIKey, p.SiteID, t0.Add(time.Hour))
	const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	click := func(ip, ua string, at time.Duration) *Click {
		return &Click{Time: t0.Add(at), AdID: p.AdID, AdType: p.AdType, Type: p.Type, APIKey: p.APIKey, SiteID: p.SiteID,
			Criterion: p.Criterion, YkTag: p.YkTag, IP: ip, UserAgent: ua}
	}
	j := &Judge{Keys: ks, Windows: testWindows(t)}
	image := Intent{Mode: "no-cors", Dest: "image"}
	tests := []struct {
		name   string
		c      *Click
		auth   Auth
		intent Intent
		refuse string
		want   string
	}{
		// Clicks that do not bill take no window: the navigation after
		// them still bills.
		{"hidden image", click("192.0.2.1", browser, 0), Auth{D: testDecision, Exp: exp, Sig: sig}, image, "", ReasonNotNavigation},
		{"prefetch", click("192.0.2.1", browser, 0), Auth{D: testDecision, Exp: exp, Sig: sig}, Intent{Mode: "navigate", Dest: "document", Purpose: "prefetch"}, "", ReasonPrefetch},
		{"no intent", click("192.0.2.1", browser, 0), Auth{D: testDecision, Exp: exp, Sig: sig}, Intent{}, "", ReasonNoIntent},
		{"signed", click("192.0.2.1", browser, 0), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, "", ""},
		{"repeat", click("192.0.2.1", browser, 10*time.Second), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, "", ReasonRepeat},
		{"repeat from the same /32 mapped", click("::ffff:192.0.2.1", browser, time.Hour), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, "", ReasonRepeat},
		{"token alone proves no ad was shown", click("192.0.2.2", browser, 0), Auth{Tok: tok}, Navigation, "", ReasonUnverified},
		{"signature emptied, token added", click("192.0.2.11", browser, 0), Auth{D: testDecision, Tok: tok}, Navigation, "", ReasonUnverified},
		{"token expired", click("192.0.2.3", browser, time.Hour), Auth{Tok: tok}, Navigation, "", ReasonExpired},
		{"unsigned", click("192.0.2.4", browser, 0), Auth{}, Navigation, "", ReasonUnsigned},
		{"bot", click("192.0.2.5", "curl/8.5.0", 0), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, "", ReasonBot},
		{"partner gone", click("192.0.2.6", browser, 0), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, ReasonPartner, ReasonPartner},
		{"forged beats bot", click("192.0.2.7", "curl/8.5.0", 0), Auth{D: testDecision, Exp: exp, Sig: sig + "x"}, Navigation, "", ReasonForged},
		{"sig wins over tok", click("192.0.2.8", browser, 0), Auth{D: testDecision, Exp: exp, Sig: "k1.x", Tok: tok}, Navigation, "", ReasonForged},
		{"bot beats intent", click("192.0.2.9", "x", 0), Auth{D: testDecision, Exp: exp, Sig: sig}, image, "", ReasonBot},
		{"a day less a second later", click("192.0.2.1", browser, 24*time.Hour-time.Second), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, "", ReasonRepeat},
		{"a day later", click("192.0.2.1", browser, 24*time.Hour), Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, "", ""},
	}
	for _, tt := range tests {
		if err := j.Judge(t.Context(), tt.c, tt.auth, tt.intent, tt.refuse); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.c.Reason != tt.want || tt.c.Billable != (tt.want == "") {
			t.Errorf("%s: billable %v reason %q, want %q", tt.name, tt.c.Billable, tt.c.Reason, tt.want)
		}
	}
	var none Judge
	c := click("192.0.2.10", browser, 0)
	if err := none.Judge(t.Context(), c, Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, ""); err != nil || c.Billable || c.Reason != ReasonUnsigned {
		t.Errorf("without keys: %v %q %v", c.Billable, c.Reason, err)
	}
}

// One IPv4 address clicking 20 ads twice, 31 s apart, bills each ad once;
// 15 addresses of one /64, with and without zones, bill one click.
func TestJudgeWindowsByNetwork(t *testing.T) {
	ks := testKeys(t, "k1")
	j := &Judge{Keys: ks, Windows: testWindows(t), NetworkDailyClicks: 100}
	judge := func(ad, ip string, at time.Duration) *Click {
		p := sample()
		p.AdID = ad
		exp, sig := ks.Sign(&p, testDecision, t0.Add(time.Hour))
		c := &Click{Time: t0.Add(at), AdID: ad, AdType: p.AdType, Type: p.Type, APIKey: p.APIKey, SiteID: p.SiteID,
			Criterion: p.Criterion, YkTag: p.YkTag, IP: ip, UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"}
		if err := j.Judge(t.Context(), c, Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, ""); err != nil {
			t.Fatal(err)
		}
		return c
	}
	billed := 0
	for round := range 2 {
		for ad := range 20 {
			if judge("ad"+strconv.Itoa(ad), "198.51.100.7", time.Duration(round)*31*time.Second).Billable {
				billed++
			}
		}
	}
	if billed != 20 {
		t.Errorf("one address, 20 ads twice 31 s apart: %d billable, want 20", billed)
	}
	billed = 0
	for i := range 15 {
		ip := "2001:db8:7:7::" + strconv.FormatInt(int64(i+1), 16)
		if i%2 == 1 {
			ip += "%z" + strconv.Itoa(i)
		}
		if judge("one", ip, time.Duration(i)*time.Second).Billable {
			billed++
		}
	}
	if billed != 1 {
		t.Errorf("15 addresses of one /64: %d billable, want 1", billed)
	}
}

// Many networks clicking one link each bill once, and each network stops
// at its daily cap, which the next UTC day renews.
func TestJudgeNetworkCap(t *testing.T) {
	ks := testKeys(t, "k1")
	const limit = 5
	j := &Judge{Keys: ks, Windows: testWindows(t), NetworkDailyClicks: limit}
	p := sample()
	exp, sig := ks.Sign(&p, testDecision, t0.Add(72*time.Hour))
	judge := func(ad, ip string, at time.Duration) *Click {
		c := &Click{Time: t0.Add(at), AdID: p.AdID, AdType: p.AdType, Type: p.Type, APIKey: p.APIKey, SiteID: p.SiteID,
			Criterion: p.Criterion, YkTag: p.YkTag, IP: ip, UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"}
		auth := Auth{D: testDecision, Exp: exp, Sig: sig}
		if ad != p.AdID { // another ad of the same kind
			q := p
			q.AdID = ad
			c.AdID = ad
			auth.Exp, auth.Sig = ks.Sign(&q, testDecision, t0.Add(72*time.Hour))
		}
		if err := j.Judge(t.Context(), c, auth, Navigation, ""); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// One link from 50 /64s: each network's first click bills.
	for i := range 50 {
		if c := judge(p.AdID, "2001:db8:"+strconv.FormatInt(int64(i+1), 16)+"::1", 0); !c.Billable {
			t.Fatalf("network %d: %q", i, c.Reason)
		}
	}
	// One network, many ads: the cap, then the cap again the next day.
	var reasons []string
	for ad := range limit + 3 {
		reasons = append(reasons, judge("ad"+strconv.Itoa(ad), "203.0.113.5", time.Duration(ad)*time.Minute).Reason)
	}
	for i, r := range reasons {
		want := ""
		if i >= limit {
			want = ReasonNetworkCap
		}
		if r != want {
			t.Errorf("ad %d of one network: %q, want %q", i, r, want)
		}
	}
	// t0 is noon: the next UTC day starts 12 h later, inside the ads'
	// windows for the ones billed, not for the ones capped.
	if r := judge("ad"+strconv.Itoa(limit), "203.0.113.5", 12*time.Hour).Reason; r != "" {
		t.Errorf("a capped ad on the next day: %q, want billable", r)
	}
	if r := judge("ad0", "203.0.113.5", 12*time.Hour).Reason; r != ReasonRepeat {
		t.Errorf("a billed ad on the next day within its window: %q, want repeat", r)
	}
}

func testDecisions(t *testing.T) *BoltDecisions {
	t.Helper()
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d, err := NewDecisions(db)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// One signed link bills once, from whichever network clicks it first;
// clicks that fail another check before it do not use its decision.
func TestJudgeDecisionBillsOnce(t *testing.T) {
	ks := testKeys(t, "k1")
	j := &Judge{Keys: ks, Windows: testWindows(t), Decisions: testDecisions(t)}
	p := sample()
	d := NewDecision()
	exp, sig := ks.Sign(&p, d, t0.Add(time.Hour))
	judge := func(ip string, intent Intent) *Click {
		c := &Click{Time: t0, AdID: p.AdID, AdType: p.AdType, Type: p.Type, APIKey: p.APIKey, SiteID: p.SiteID,
			Criterion: p.Criterion, YkTag: p.YkTag, IP: ip, UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"}
		if err := j.Judge(t.Context(), c, Auth{D: d, Exp: exp, Sig: sig}, intent, ""); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := judge("192.0.2.1", Intent{Mode: "no-cors", Dest: "image"}); c.Reason != ReasonNotNavigation {
		t.Fatalf("hidden image: %q", c.Reason)
	}
	if c := judge("2001:db8:1::1", Navigation); !c.Billable {
		t.Fatalf("first click: %q", c.Reason)
	}
	for _, ip := range []string{"2001:db8:2::1", "198.51.100.9"} {
		if c := judge(ip, Navigation); c.Billable || c.Reason != ReasonRepeat {
			t.Errorf("the same decision from %s: billable %v %q, want repeat", ip, c.Billable, c.Reason)
		}
	}
}

type failingWindows struct{}

func (failingWindows) Claim(context.Context, Claim) (string, error) {
	return "", errors.New("disk gone")
}

func TestJudgeWindowsFailure(t *testing.T) {
	ks := testKeys(t, "k1")
	p := sample()
	exp, sig := ks.Sign(&p, testDecision, t0.Add(time.Hour))
	c := &Click{Time: t0, AdID: p.AdID, AdType: p.AdType, Type: p.Type, APIKey: p.APIKey, SiteID: p.SiteID,
		Criterion: p.Criterion, YkTag: p.YkTag, IP: "192.0.2.1", UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"}
	j := &Judge{Keys: ks, Windows: failingWindows{}}
	if err := j.Judge(t.Context(), c, Auth{D: testDecision, Exp: exp, Sig: sig}, Navigation, ""); err == nil || c.Billable {
		t.Errorf("a failing Windows: err %v, billable %v", err, c.Billable)
	}
}

// TestSettleHoldsTheBudgetsCurrency: Settle, which judges the clicks a
// replica spools while Postgres is down, refuses a click in another
// currency than its budget's before it claims anything, so the click in
// the budget's currency after it, from the same network and /48, on the
// same ad, still bills.
func TestSettleHoldsTheBudgetsCurrency(t *testing.T) {
	w := testWindows(t)
	const ip = "2001:db8:7::1"
	click := func(currency string) *Click {
		return &Click{Time: t0, AdID: "ad", IP: ip, Advertiser: "shop.example", BidMicros: 450_000, Currency: currency}
	}
	u := Use{Limit: 1, PrefixLimit: 1, Budget: 1_000_000, Currency: "EUR"}
	gbp := click("GBP")
	if err := Settle(t.Context(), gbp, u, nil, w); err != nil || gbp.Billable || gbp.Reason != ReasonOverBudget {
		t.Fatalf("a GBP click against a EUR budget: %v, billable %v %q, want over_budget", err, gbp.Billable, gbp.Reason)
	}
	eur := click("EUR")
	if err := Settle(t.Context(), eur, u, nil, w); err != nil || !eur.Billable {
		t.Errorf("the EUR click after it: %v, billable %v %q, want billable: the GBP click spent the windows", err, eur.Billable, eur.Reason)
	}
	// Without a budget's currency (a Use spooled by an older version) the
	// currency is not checked.
	old := click("GBP")
	old.Time = t0.Add(48 * time.Hour)
	u.Currency = ""
	if err := Settle(t.Context(), old, u, nil, w); err != nil || !old.Billable {
		t.Errorf("a click whose Use names no currency: %v, billable %v %q, want billable", err, old.Billable, old.Reason)
	}
}

// TestClaimOf: a click's claim names the network and the /48 or /24 that
// Network and Prefix give its address, so an IPv4-mapped or 6to4 address
// is counted as its IPv4 address, in its /24, in every store's windows.
func TestClaimOf(t *testing.T) {
	u := Use{Limit: 50, PrefixLimit: 500, IPv4Capped: true}
	for _, tt := range []struct{ ip, network, prefix string }{
		{"192.0.2.1", "192.0.2.1", "192.0.2.0/24"},
		{"::ffff:192.0.2.1", "192.0.2.1", "192.0.2.0/24"},
		{"2002:c000:201::1", "192.0.2.1", "192.0.2.0/24"},
		{"2001:db8:1:2::5", "2001:db8:1:2::/64", "2001:db8:1::/48"},
		{"fe80::1%eth0", "fe80::/64", "fe80::/48"},
	} {
		c := claimOf(&Click{IP: tt.ip, AdID: "ad", Time: t0}, u)
		if c.Network != tt.network || c.Prefix != tt.prefix || c.Limit != 50 || c.PrefixLimit != 500 || c.counted() != (tt.prefix != "") {
			t.Errorf("%s: claim %+v, want network %q and prefix %q", tt.ip, c, tt.network, tt.prefix)
		}
	}
}

// TestCheckCapsEachFamilysPrefix: the Use of a click from an IPv6 address
// caps its /48 at PrefixDailyClicks; of one from an IPv4 address (mapped
// or 6to4 too), its /24 at IPv4PrefixDailyClicks, whatever else it fails.
func TestCheckCapsEachFamilysPrefix(t *testing.T) {
	j := &Judge{NetworkDailyClicks: 50, PrefixDailyClicks: 500, IPv4PrefixDailyClicks: 1000}
	for ip, want := range map[string]int{
		"2001:db8:1:2::5": 500, "192.0.2.1": 1000, "::ffff:192.0.2.1": 1000, "2002:c000:201::1": 1000,
	} {
		c := &Click{IP: ip, AdID: "ad", Time: t0}
		if u := j.Check(c, Auth{}, Intent{}, ""); u.Limit != 50 || u.PrefixLimit != want {
			t.Errorf("%s: limits %d and %d, want 50 and %d", ip, u.Limit, u.PrefixLimit, want)
		}
	}
}

// TestUseSpooledBeforeIPv4Caps: a Use spooled by a version that capped no
// IPv4 /24 holds the /48's cap in PrefixLimit, for an IPv4 client too;
// read back, it neither checks nor counts that client's /24, as the
// version that judged it did not, whatever the /24's cap is now (none
// among them). A Use of Check, through the spool's JSON, caps the /24 at
// the /24's cap, and one of an IPv6 client its /48 either way.
func TestUseSpooledBeforeIPv4Caps(t *testing.T) {
	var old Spooled
	if err := json.Unmarshal([]byte(`{"click":{"IP":"192.0.2.1"},"use":{"D":"d","Limit":50,"PrefixLimit":500}}`), &old); err != nil {
		t.Fatal(err)
	}
	if c := claimOf(&Click{IP: "192.0.2.1"}, old.Use); c.counted() {
		t.Errorf("an IPv4 click spooled before /24 caps: claim %+v counts its /24", c)
	}
	if c := claimOf(&Click{IP: "2001:db8:1::1"}, old.Use); !c.counted() || c.PrefixLimit != 500 {
		t.Errorf("an IPv6 click spooled before /24 caps: claim %+v, want its /48 under 500", c)
	}
	j := &Judge{NetworkDailyClicks: 50, PrefixDailyClicks: 500, IPv4PrefixDailyClicks: 1000}
	for ip, want := range map[string]int{"192.0.2.1": 1000, "::ffff:192.0.2.1": 1000, "2001:db8:1::1": 500} {
		c := &Click{IP: ip, AdID: "ad", Time: t0}
		back := throughSpool(t, c, j.Check(c, Auth{}, Intent{}, ""))
		if cl := claimOf(&back.Click, back.Use); !cl.counted() || cl.PrefixLimit != want {
			t.Errorf("%s: claim %+v of a spooled Use of Check, want its prefix under %d", ip, cl, want)
		}
	}
}

// TestUseSpooledBeforePrefixAdCaps: a Use spooled by a version that capped
// no prefix on an ad has no PrefixAdLimit; read back, its claim neither
// checks nor counts the prefix on the ad. A Use of Check, through the
// spool's JSON, caps the /48 and the /24 on the ad alike, however the
// address is spelled.
func TestUseSpooledBeforePrefixAdCaps(t *testing.T) {
	var old Spooled
	if err := json.Unmarshal([]byte(`{"click":{"IP":"2001:db8:1::1"},"use":{"D":"d","Limit":50,"PrefixLimit":500,"IPv4Capped":true}}`), &old); err != nil {
		t.Fatal(err)
	}
	if c := claimOf(&Click{IP: "2001:db8:1::1", AdID: "ad"}, old.Use); c.adCounted() || !c.counted() {
		t.Errorf("a click spooled before caps per ad: claim %+v, want its /48 counted on all ads only", c)
	}
	j := &Judge{NetworkDailyClicks: 50, PrefixDailyClicks: 500, IPv4PrefixDailyClicks: 1000, PrefixAdDailyClicks: 10}
	for ip, prefix := range map[string]string{"192.0.2.1": "192.0.2.0/24", "::ffff:192.0.2.1": "192.0.2.0/24",
		"2002:c000:201::1": "192.0.2.0/24", "2001:db8:1::1": "2001:db8:1::/48"} {
		c := &Click{IP: ip, AdID: "ad", Time: t0}
		back := throughSpool(t, c, j.Check(c, Auth{}, Intent{}, ""))
		if cl := claimOf(&back.Click, back.Use); !cl.adCounted() || cl.PrefixAdLimit != 10 || cl.Prefix != prefix {
			t.Errorf("%s: claim %+v of a spooled Use of Check, want %s under 10 on the ad", ip, cl, prefix)
		}
	}
	if cl := claimOf(&Click{IP: "2001:db8:1::1", AdID: "ad"}, (&Judge{}).Check(&Click{IP: "2001:db8:1::1"}, Auth{}, Intent{}, "")); cl.adCounted() {
		t.Errorf("no cap per ad: claim %+v counts the prefix on the ad", cl)
	}
}

// throughSpool is c and u as the spool gives them back: through its JSON.
func throughSpool(t *testing.T, c *Click, u Use) Spooled {
	t.Helper()
	b, err := json.Marshal(Spooled{Click: *c, Use: u})
	if err != nil {
		t.Fatal(err)
	}
	var back Spooled
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}
