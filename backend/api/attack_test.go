package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
)

// Attacks on the bill that get past the checks of a click's own
// parameters: each sends what an attacker can, and asserts what the click
// log records.

const (
	chromeUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	safariUA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
)

// scriptNavigation is what Chromium and Firefox send when a page's script
// navigates the window (location.href, a synthetic click, form.submit(),
// a meta refresh): a top-level navigation, without Sec-Fetch-User.
func scriptNavigation() http.Header {
	return http.Header{"Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"document"}, "Sec-Fetch-Site": {"cross-site"}}
}

// A page's script that sends its readers' browsers to click URLs, with no
// reader's click (a publisher's page, or any page that took the public
// api_key), bills nothing where the browser says so: Chromium and Firefox
// send Sec-Fetch-User: ?1 with every navigation a person starts. Safari
// sends no Sec-Fetch-User at all, so its readers' clicks bill without it.
func TestScriptNavigationDoesNotBill(t *testing.T) {
	env := newSignedEnv(t)
	click := func(target, ip, ua string, h http.Header) clicks.Click {
		t.Helper()
		readBody(t, env.doWith(t, target, ip, ua, h))
		got := env.take()
		if len(got) != 1 {
			t.Fatalf("%s: %d clicks recorded", target, len(got))
		}
		return got[0]
	}
	for i, ua := range []string{chromeUA, browserUA} {
		l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
		ip := "198.51.100." + string(rune('1'+i))
		if c := click(l, ip, ua, scriptNavigation()); c.Billable || c.Reason != clicks.ReasonNotNavigation {
			t.Errorf("%s, signed link, navigated by script: billable %v %q, want not_navigation", ua, c.Billable, c.Reason)
		}
		// The decision and the window are not spent: the reader's own
		// click on the same link bills.
		h := scriptNavigation()
		h.Set("Sec-Fetch-User", "?1")
		if c := click(l, ip, ua, h); !c.Billable {
			t.Errorf("%s, the reader's click after the script's: %q, want billable", ua, c.Reason)
		}
	}

	// An in-page ad's click token, taken by the script from the beacon in
	// the reader's browser.
	l := env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	const reader = "198.51.100.20"
	_, ct := env.beacon(t, reader, chromeUA, l)
	env.advance(time.Second)
	withCT := l + "&ct=" + url.QueryEscape(ct[0])
	if c := click(withCT, reader, chromeUA, scriptNavigation()); c.Billable || c.Reason != clicks.ReasonNotNavigation {
		t.Errorf("in-page ad, navigated by script: billable %v %q, want not_navigation", c.Billable, c.Reason)
	}

	// Safari's click sends no Sec-Fetch-User, and bills.
	l = env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	if c := click(l, "198.51.100.30", safariUA, scriptNavigation()); !c.Billable {
		t.Errorf("Safari's click: %q, want billable", c.Reason)
	}
}

// One IPv4 host has the whole 6to4 /48 made of its address: clicking one
// ad from its /64s, each on an answer of its own, and from the IPv4
// address itself, bills once, and the daily cap counts them together.
func TestSixToFourIsItsIPv4(t *testing.T) {
	env := newSignedEnvWith(t, func(c *config.Config) { c.NetworkDailyClicks = 2 }, testWindows(t, t.TempDir()))
	billed := 0
	for i := range 8 {
		ip := fmt.Sprintf("2002:c000:263:%x::1", i+1) // 192.0.2.99's /48
		if i == 7 {
			ip = "192.0.2.99"
		}
		l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
		if env.click(t, l, ip, browserUA).Billable {
			billed++
		}
	}
	if billed != 1 {
		t.Errorf("one ad from 7 /64s of a 6to4 /48 and its IPv4: %d billable, want 1", billed)
	}
	// The cap: distinct ads, one billable beside the one above.
	billed = 0
	for i, l := range distinctAds(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")) {
		if env.click(t, l, fmt.Sprintf("2002:c000:263:%x::2", 100+i), browserUA).Billable {
			billed++
		}
	}
	if billed != 1 {
		t.Errorf("distinct ads from the 6to4 /48 at a cap of 2: %d more billable, want 1", billed)
	}
}

// escapeAll writes every byte of s as %xx in lower-case hex: the same
// value, spelt as no server ever spells it.
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02x", s[i])
	}
	return b.String()
}

// respell writes the query of click URL l with each value spelt by
// escape, its parameters in reverse order.
func respell(t testing.TB, l string, escape func(string) string) string {
	t.Helper()
	path, raw, _ := strings.Cut(l, "?")
	var parts []string
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		dec, err := url.QueryUnescape(v)
		if err != nil {
			t.Fatal(err)
		}
		parts = append([]string{k + "=" + escape(dec)}, parts...)
	}
	return path + "?" + strings.Join(parts, "&")
}

// A signed link's values spelt another way are the same click: the
// signature covers the values, not their escaping, so each spelling
// verifies (a reader's proxy may re-escape), and all share the link's one
// decision and the network's one window. A value that differs in case is
// another value.
func TestRespeltLinkIsOneClick(t *testing.T) {
	env := newSignedEnv(t)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	canonical := queryOf(t, l)
	if !strings.Contains(canonical.Get("criterionId"), " ") {
		t.Fatalf("the link's criterion %q has no space to spell as + or %%20", canonical.Get("criterionId"))
	}
	c := env.click(t, respell(t, l, escapeAll), "198.51.100.41", browserUA)
	if !c.Billable || c.AdID != canonical.Get("adId") || c.Criterion != canonical.Get("criterionId") {
		t.Fatalf("every byte escaped: billable %v %q, adId %q criterion %q; want billable, as the link says",
			c.Billable, c.Reason, c.AdID, c.Criterion)
	}
	for i, tt := range []struct {
		name, target, reason string
	}{
		{"as the server spelt it", l, clicks.ReasonRepeat},
		{"spaces as %20", respell(t, l, func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }), clicks.ReasonRepeat},
		{"decision in upper case", setParam(l, "d", strings.ToUpper(canonical.Get("d"))), clicks.ReasonForged},
		{"adId in upper case", setParam(l, "adId", strings.ToUpper(canonical.Get("adId"))), ""},
		{"criterion in upper case", setParam(l, "criterionId", strings.ToUpper(canonical.Get("criterionId"))), clicks.ReasonForged},
	} {
		ip := "198.51.100." + strconv.Itoa(42+i)
		if tt.reason == "" {
			// No ad has the upper-case id: no click at all.
			res := env.do(t, tt.target, ip, browserUA)
			readBody(t, res)
			if res.StatusCode != http.StatusNotFound || len(env.take()) != 0 {
				t.Errorf("%s: %d, want 404 and no click", tt.name, res.StatusCode)
			}
			continue
		}
		if c := env.click(t, tt.target, ip, browserUA); c.Billable || c.Reason != tt.reason {
			t.Errorf("%s: billable %v %q, want %q", tt.name, c.Billable, c.Reason, tt.reason)
		}
	}
}

// A click token is its partner's, site's and context's: taken to the same
// ad's link of another site of the key, of another partner, of the other
// context or with a yk_tag added, it is forged, and it stays the reader's
// to spend on its own link.
func TestClickTokenBindsItsLink(t *testing.T) {
	env := newSignedEnv(t)
	l := env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	const reader = "198.51.100.60"
	_, ct := env.beacon(t, reader, browserUA, l)
	env.advance(time.Second)
	withCT := func(l string) string { return l + "&ct=" + url.QueryEscape(ct[0]) }
	for _, tt := range []struct{ name, target string }{
		{"another partner's site", setParam(setParam(l, "api_key", "k2"), "site_id", "blog")},
		{"the demo key with another site", setParam(l, "site_id", "blog")},
		{"the other context", setParam(l, "type", map[string]string{"search": "intext", "intext": "search"}[queryOf(t, l).Get("type")])},
		{"a yk_tag added", setParam(l, "yk_tag", "mine")},
	} {
		if c := env.click(t, withCT(tt.target), reader, browserUA); c.Billable || c.Reason != clicks.ReasonForged {
			t.Errorf("%s: billable %v %q, want forged", tt.name, c.Billable, c.Reason)
		}
	}
	if c := env.click(t, withCT(l), reader, browserUA); !c.Billable {
		t.Errorf("the token on its own link after the forgeries: %q, want billable", c.Reason)
	}
}

// clickEach clicks, from each of ips in turn, the first ad of an answer of
// its own, and counts the clicks that billed and those refused as
// prefix_cap; any other reason fails t.
func (e *signedEnv) clickEach(t *testing.T, ips []string) (billed, capped int) {
	t.Helper()
	for _, ip := range ips {
		l := e.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
		switch c := e.click(t, l, ip, browserUA); {
		case c.Billable:
			billed++
		case c.Reason == clicks.ReasonPrefixCap:
			capped++
		default:
			t.Errorf("click from %s: %q", ip, c.Reason)
		}
	}
	return billed, capped
}

// One holder of an IPv6 /48 (a tunnel broker gives one to anyone) has
// 65,536 /64s, each a network with its windows and daily cap: clicking one
// ad from its /64s, each on an answer of its own, bills no more than
// -prefix-daily-clicks on a UTC day; another /48 and IPv4 are not held
// back by it, a click the /48 did not bill (a bot's, a repeat) spends none
// of it, and the /48 stays capped after a restart and until the next UTC
// day.
func TestPrefixDailyCap(t *testing.T) {
	const limit = 3
	set := func(c *config.Config) { c.PrefixDailyClicks = limit }
	dir := t.TempDir()
	w, db := openWindows(t, dir)
	env := newSignedEnvWith(t, set, w)
	var ips []string
	for i := range 10 {
		ips = append(ips, fmt.Sprintf("2001:db8:48:%x::1", i+1))
	}
	if billed, capped := env.clickEach(t, ips); billed != limit || capped != 10-limit {
		t.Errorf("one ad from 10 /64s of one /48 at a cap of %d: %d billable, %d prefix_cap", limit, billed, capped)
	}
	// The /48's count is in the windows' file: a restart keeps it.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	w, _ = openWindows(t, dir)
	env = newSignedEnvWith(t, set, w)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	if c := env.click(t, l, "2001:db8:48:99::1", browserUA); c.Reason != clicks.ReasonPrefixCap {
		t.Errorf("a new /64 of the /48 after a restart: %q, want %q", c.Reason, clicks.ReasonPrefixCap)
	}
	for _, ip := range []string{"2001:db8:49:1::1", "192.0.2.48"} {
		l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
		if c := env.click(t, l, ip, browserUA); !c.Billable {
			t.Errorf("a click from %s: %q, want billable", ip, c.Reason)
		}
	}
	// A click that does not bill for its own reasons spends nothing.
	l = env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	for range limit + 1 {
		if c := env.click(t, l, "2001:db8:50:1::1", "curl/8.5.0"); c.Billable || c.Reason != clicks.ReasonBot {
			t.Fatalf("a bot's click: billable %v %q", c.Billable, c.Reason)
		}
	}
	if c := env.click(t, l, "2001:db8:50:2::1", browserUA); !c.Billable {
		t.Errorf("a reader's click after a bot's from its /48: %q, want billable", c.Reason)
	}
	// Nor does a link replayed: its repeats, refused by its network's
	// window before the /48's cap, leave the /48's other readers their
	// clicks.
	l = env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	for i := range limit + 2 {
		if c := env.click(t, l, "2001:db8:51:1::1", browserUA); c.Billable != (i == 0) {
			t.Fatalf("replay %d of one link: billable %v %q", i, c.Billable, c.Reason)
		}
	}
	for i := range limit - 1 {
		l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
		if c := env.click(t, l, fmt.Sprintf("2001:db8:51:%x::1", i+2), browserUA); !c.Billable {
			t.Errorf("a neighbour's click %d after the replays: %q, want billable", i, c.Reason)
		}
	}
	// The cap is per UTC day: the next day the /48 bills again.
	env.advance(24 * time.Hour)
	l = env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	if c := env.click(t, l, "2001:db8:48:100::1", browserUA); !c.Billable {
		t.Errorf("the /48 capped yesterday, on the next UTC day: %q, want billable", c.Reason)
	}
}

// One holder of an IPv4 /24 (a hosting provider rents one by the month)
// has 256 addresses, each a network with its windows and daily cap:
// clicking one ad from them, each on an answer of its own, bills no more
// than -ipv4-prefix-daily-clicks on a UTC day, its 6to4 and IPv4-mapped
// spellings counted in it too; the neighbouring /24 and IPv6 are not held
// back by it, nor by the /48's cap, and the /24 stays capped after a
// restart.
func TestIPv4PrefixDailyCap(t *testing.T) {
	const limit = 3
	set := func(c *config.Config) { c.IPv4PrefixDailyClicks, c.PrefixDailyClicks = limit, 1 }
	dir := t.TempDir()
	w, db := openWindows(t, dir)
	env := newSignedEnvWith(t, set, w)
	link := func() string { return env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0] }
	var ips []string
	for i := range 10 {
		ips = append(ips, fmt.Sprintf("198.51.100.%d", 10+i))
	}
	billed, capped := env.clickEach(t, ips)
	if billed != limit || capped != 10-limit {
		t.Errorf("one ad from 10 addresses of one /24 at a cap of %d: %d billable, %d prefix_cap", limit, billed, capped)
	}
	for _, ip := range []string{"::ffff:198.51.100.200", "2002:c633:64c8::1"} { // 198.51.100.200
		if c := env.click(t, link(), ip, browserUA); c.Reason != clicks.ReasonPrefixCap {
			t.Errorf("a click from %s, in the /24: %q, want %q", ip, c.Reason, clicks.ReasonPrefixCap)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	w, _ = openWindows(t, dir)
	env = newSignedEnvWith(t, set, w)
	if c := env.click(t, link(), "198.51.100.250", browserUA); c.Reason != clicks.ReasonPrefixCap {
		t.Errorf("another address of the /24 after a restart: %q, want %q", c.Reason, clicks.ReasonPrefixCap)
	}
	for _, ip := range []string{"198.51.101.10", "198.51.101.11", "2001:db8:24:1::1"} {
		if c := env.click(t, link(), ip, browserUA); !c.Billable {
			t.Errorf("a click from %s: %q, want billable", ip, c.Reason)
		}
	}
}

// A competitor holding one IPv6 /48 or IPv4 /24 takes signed links from
// public answers and clicks one advertiser's ad from a new network each
// time, forging a browser: it bills that ad no more than
// -prefix-ad-daily-clicks on a UTC day, while the prefix's clicks on
// another ad, and another prefix's on the ad, still bill; the count
// outlives a restart and ends with the UTC day.
func TestPrefixAdDailyCap(t *testing.T) {
	const limit = 3
	set := func(c *config.Config) { c.PrefixAdDailyClicks = limit }
	dir := t.TempDir()
	w, db := openWindows(t, dir)
	env := newSignedEnvWith(t, set, w)
	const q = "q=lg+handy&loc=de&api_key=demo&site_id=demo"
	// clickAd clicks the ad-th ad of an answer of its own from each of ips
	// in turn, and counts the clicks that billed and those refused as
	// prefix_ad_cap; any other reason fails t.
	clickAd := func(ad int, ips []string) (billed, capped int) {
		t.Helper()
		for _, ip := range ips {
			switch c := env.click(t, env.links(t, q)[ad], ip, browserUA); {
			case c.Billable:
				billed++
			case c.Reason == clicks.ReasonPrefixAdCap:
				capped++
			default:
				t.Errorf("click from %s on ad %d: %q", ip, ad, c.Reason)
			}
		}
		return billed, capped
	}
	if ads := env.links(t, q); len(ads) < 2 || queryOf(t, ads[0]).Get("adId") == queryOf(t, ads[1]).Get("adId") {
		t.Fatalf("the answer has no two ads: %v", ads)
	}
	var in48, in24 []string
	for i := range 10 {
		in48 = append(in48, fmt.Sprintf("2001:db8:48:%x::1", i+1))
		in24 = append(in24, fmt.Sprintf("198.51.100.%d", 10+i))
	}
	if billed, capped := clickAd(0, in48); billed != limit || capped != 10-limit {
		t.Errorf("one ad from 10 /64s of one /48 at a cap of %d on the ad: %d billable, %d prefix_ad_cap", limit, billed, capped)
	}
	if billed, capped := clickAd(0, in24); billed != limit || capped != 10-limit {
		t.Errorf("one ad from 10 addresses of one /24 at a cap of %d on the ad: %d billable, %d prefix_ad_cap", limit, billed, capped)
	}
	if billed, _ := clickAd(1, in48[:limit]); billed != limit {
		t.Errorf("another ad from the /48's networks: %d of %d billable", billed, limit)
	}
	if billed, _ := clickAd(0, []string{"2001:db8:49:1::1", "198.51.101.1"}); billed != 2 {
		t.Errorf("the ad from another /48 and another /24: %d of 2 billable", billed)
	}
	// The counts are in the windows' file: a restart keeps them.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	w, _ = openWindows(t, dir)
	env = newSignedEnvWith(t, set, w)
	for _, ip := range []string{"2001:db8:48:99::1", "198.51.100.250"} {
		if c := env.click(t, env.links(t, q)[0], ip, browserUA); c.Reason != clicks.ReasonPrefixAdCap {
			t.Errorf("a new network of the prefix after a restart, %s: %q, want %q", ip, c.Reason, clicks.ReasonPrefixAdCap)
		}
	}
	env.advance(24 * time.Hour)
	if c := env.click(t, env.links(t, q)[0], "2001:db8:48:100::1", browserUA); !c.Billable {
		t.Errorf("the /48 capped on the ad yesterday, on the next UTC day: %q, want billable", c.Reason)
	}
}

// With -prefix-ad-daily-clicks 0 a prefix's clicks on one ad are held by
// its cap on all ads alone.
func TestPrefixAdDailyCapOff(t *testing.T) {
	set := func(c *config.Config) { c.PrefixAdDailyClicks = 0 }
	w, _ := openWindows(t, t.TempDir())
	env := newSignedEnvWith(t, set, w)
	var ips []string
	for i := range 15 {
		ips = append(ips, fmt.Sprintf("2001:db8:48:%x::1", i+1))
	}
	if billed, capped := env.clickEach(t, ips); billed != len(ips) {
		t.Errorf("one ad from %d /64s of one /48 without a cap on the ad: %d billable, %d prefix_cap", len(ips), billed, capped)
	}
}

// A proof given twice, the link's own beside another, in either order, is
// no click: a 400 that records nothing and spends nothing of the link,
// whichever of the two a parse would take.
func TestDuplicatedProofBillsNothing(t *testing.T) {
	env := newSignedEnv(t)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	other := queryOf(t, env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0])
	inPage := env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	const reader = "198.51.100.90"
	_, ct := env.beacon(t, reader, browserUA, inPage)
	_, ct2 := env.beacon(t, reader, browserUA, inPage)
	env.advance(time.Second)
	withCT := inPage + "&ct=" + url.QueryEscape(ct[0])
	twice := func(link, name, value string) []string {
		path, query, _ := strings.Cut(link, "?")
		extra := name + "=" + url.QueryEscape(value)
		return []string{link + "&" + extra, path + "?" + extra + "&" + query}
	}
	var targets []string
	for _, name := range []string{"d", "exp", "sig"} {
		targets = append(targets, twice(l, name, other.Get(name))...)
	}
	targets = append(targets, twice(withCT, "ct", ct2[0])...)
	targets = append(targets, twice(withCT, "tok", env.keys.Token("demo", "demo", testClock.Add(time.Hour)))...)
	for _, target := range targets {
		res := env.do(t, target, reader, browserUA)
		readBody(t, res)
		if got := env.take(); res.StatusCode != http.StatusBadRequest || len(got) != 0 {
			t.Errorf("%s: %d with %d clicks recorded, want 400 and none", target, res.StatusCode, len(got))
		}
	}
	if c := env.click(t, withCT, reader, browserUA); !c.Billable {
		t.Errorf("the in-page link with its token, once, after: %q, want billable", c.Reason)
	}
	if c := env.click(t, l, "198.51.100.91", browserUA); !c.Billable {
		t.Errorf("the signed link, once, after: %q, want billable", c.Reason)
	}
}

// A shared cache in front of the server (a CDN told to cache everything)
// must store no answer with click URLs: their decisions bill once, so
// readers served one cached answer would click its ads unbilled. Search
// and page answers, in JSON and JSONP, say no-store over the wire.
func TestAnswersWithClickURLsAreNotStored(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	pe.get(t, pageQuery(pe.base+"/review"), nil, "")
	pe.svc.Start()
	pe.drain(t)
	ts := httptest.NewServer(pe.handler)
	defer ts.Close()
	for _, target := range []string{
		"/v2/search/link?q=lg+handy&api_key=demo&site_id=demo",
		"/v2/search/link?q=lg+handy&api_key=demo&site_id=demo&callback=cb",
		pageQuery(pe.base + "/review"),
		pageQuery(pe.base+"/review", "callback", "cb"),
	} {
		res, err := http.Get(ts.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "/v1/redirect?") {
			t.Fatalf("%s: %s with no click URL\n%s", target, res.Status, body)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", target, cc)
		}
	}
}

// floodFromPrefix clicks link three times from each of n addresses ip(i)
// through the loopback proxy srv trusts, and returns how many clicks the
// log records.
func floodFromPrefix(t *testing.T, env *signedEnv, srv *httptest.Server, link string, n int, ip func(i int) string) int {
	t.Helper()
	recorded := 0
	for i := range n {
		for range 3 {
			req, err := http.NewRequest(http.MethodGet, srv.URL+link, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("User-Agent", browserUA)
			req.Header.Set("X-Forwarded-For", ip(i))
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusFound {
				t.Fatalf("click from %s: %d, want 302", ip(i), res.StatusCode)
			}
		}
		recorded += len(env.take())
	}
	return recorded
}

// noRedirects follows no redirect: the click's 302 is the answer.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// The redirect's request limit is per client network, and one holder of
// an IPv6 /48 (a tunnel broker's) has 65,536 networks, of an IPv4 /24,
// 256 addresses: rotating through them, it would have every request
// judged and written to the click log, as many times the network's limit
// as it has networks. The prefix holding them has a limit too, of 64
// networks': past it, clicks land, are rate_limited and mostly not
// written.
func TestRedirectFloodFromOnePrefixIsBounded(t *testing.T) {
	const burst = 2
	env := newSignedEnvWith(t, func(c *config.Config) { c.IPRate, c.IPBurst = 0.001, burst }, testWindows(t, t.TempDir()))
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	link := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	// What one prefix may have recorded: the burst of 64 networks, and
	// as many clicks over the limit sampled for the log.
	const bound = 64*burst + 64
	for name, ip := range map[string]func(int) string{
		"IPv6 /48": func(i int) string { return fmt.Sprintf("2001:db8:48:%x::1", i) },
		"IPv4 /24": func(i int) string { return fmt.Sprintf("198.51.24.%d", i+1) },
	} {
		start := time.Now()
		got := floodFromPrefix(t, env, srv, link, 250, ip)
		// The buckets refill as the flood runs, on a loaded machine for
		// seconds: the log's sample at 64 a minute, the prefix's limit at
		// 64 networks' rate.
		refilled := int(time.Since(start).Seconds()*(64.0/60+64*0.001)) + 1
		if got > bound+refilled {
			t.Errorf("%s: 750 clicks from 250 of its networks, %d recorded; want at most %d (%d refilled)", name, got, bound+refilled, refilled)
		}
	}
	// Another network outside both still has its own limit.
	if got := floodFromPrefix(t, env, srv, link, 1, func(int) string { return "203.0.113.77" }); got != burst+1 {
		t.Errorf("3 clicks from a network of another prefix: %d recorded, want %d", got, burst+1)
	}
}
