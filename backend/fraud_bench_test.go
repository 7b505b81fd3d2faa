package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/match"
)

// The fraud suite replays each way of billing clicks that no reader made
// against the server binary with the demo partner, as an attacker would:
// through a trusted proxy, so that one loopback client speaks for many
// networks. Each class runs against a server of its own over a fresh data
// directory, and what it billed is read from the click log the binary
// wrote.

// fraudClass is one way of trying to bill clicks. Adding a class is adding
// one to fraudClasses.
type fraudClass struct {
	name string
	// tried is how many clicks run sends.
	tried int
	// allowed is how many of them bill: the first click of each decision
	// (and of each network and ad) in a class that clicks real answers as
	// a reader would, 0 elsewhere. A class that bills more is fraud that
	// gets through; one that bills fewer has a genuine click refused.
	allowed int
	// reasons are what its clicks that do not bill may be recorded as.
	reasons []string
	// flags are the server's flags beyond the suite's.
	flags []string
	// daily says allowed is per UTC day, as the network's and the /48's
	// daily caps are.
	daily bool
	// run sends n clicks through c.
	run func(c *fraudClient, n int)
}

// chromeUA is a real browser's user agent, sent by every class but the
// one about user agents.
const chromeUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// botUAs are user agents of no person's browser: scripts, crawlers, link
// scanners and previews, a headless browser, a look-alike of curl with a
// Cyrillic es, and none at all.
var botUAs = []string{
	"Mozilla/5.0",
	"x",
	"WhatsApp/2.23",
	"ms-office",
	"Mozilla/5.0 (compatible; Barracuda Sentinel (EE))",
	"\u0441url/8.0",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"curl/8.5.0",
	"python-requests/2.32.3",
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
	"",
}

// fraudClasses is the suite: with quick, a few clicks per class, for the
// tests; otherwise the benchmark's counts.
func fraudClasses(quick bool) []fraudClass {
	n := func(bench, test int) int {
		if quick {
			return test
		}
		return bench
	}
	// The cap is the default's in the benchmark; the test lowers it to
	// reach it in a few clicks.
	capped := n(config.Default().NetworkDailyClicks, 3)
	// The /48's cap, lowered likewise to reach it in a few answers.
	prefixCap := n(50, 3)
	// The cap of a prefix's clicks on one ad: the default's in the
	// benchmark, lowered likewise in the test.
	prefixAdCap := n(config.Default().PrefixAdDailyClicks, 3)
	reason := func(r string) []string { return []string{r} }
	return []fraudClass{
		{name: "forged-token", tried: n(200, 3), reasons: reason(clicks.ReasonUnverified), run: forgedToken},
		{name: "swapped-ad", tried: n(200, 3), reasons: reason(clicks.ReasonForged), run: swappedAd},
		{name: "emptied-signature", tried: n(200, 3), reasons: reason(clicks.ReasonUnverified), run: emptiedSignature},
		{name: "hidden-image", tried: n(200, 3), reasons: reason(clicks.ReasonNotNavigation), run: hiddenImage},
		{name: "prefetch", tried: n(200, 3), reasons: reason(clicks.ReasonPrefetch), run: prefetch},
		{name: "script-navigation", tried: n(200, 3), reasons: reason(clicks.ReasonNotNavigation), run: scriptNavigation},
		{name: "64-rotation", tried: n(64, 16), allowed: 1, reasons: reason(clicks.ReasonRepeat), run: rotation64},
		// The prefix's caps on all ads, its cap on each ad off: one ad is
		// what the classes after these click.
		{name: "48-rotation", tried: n(200, 8), allowed: prefixCap, reasons: reason(clicks.ReasonPrefixCap),
			flags: []string{"-prefix-daily-clicks", strconv.Itoa(prefixCap), "-prefix-ad-daily-clicks", "0"}, daily: true,
			run: rotation48},
		{name: "24-rotation", tried: n(200, 8), allowed: prefixCap, reasons: reason(clicks.ReasonPrefixCap),
			flags: []string{"-ipv4-prefix-daily-clicks", strconv.Itoa(prefixCap), "-prefix-ad-daily-clicks", "0"},
			daily: true, run: rotation24},
		// A competitor's prefix spending one advertiser's budget: one ad
		// from its networks, under the prefix's default caps on all ads.
		{name: "48-ad-rotation", tried: n(200, 8), allowed: prefixAdCap, reasons: reason(clicks.ReasonPrefixAdCap),
			flags: []string{"-prefix-ad-daily-clicks", strconv.Itoa(prefixAdCap)}, daily: true, run: rotation48},
		{name: "24-ad-rotation", tried: n(200, 8), allowed: prefixAdCap, reasons: reason(clicks.ReasonPrefixAdCap),
			flags: []string{"-prefix-ad-daily-clicks", strconv.Itoa(prefixAdCap)}, daily: true, run: rotation24},
		{name: "teredo-rotation", tried: n(200, 8), allowed: 1, reasons: reason(clicks.ReasonRepeat), run: teredoRotation},
		{name: "one-link-many-networks", tried: n(10000, 4), allowed: 1, reasons: reason(clicks.ReasonRepeat), run: oneLinkManyNetworks},
		{name: "replay", tried: n(200, 3), allowed: 1, reasons: reason(clicks.ReasonRepeat), run: replay},
		{name: "bot-user-agents", tried: n(20, 1) * len(botUAs), reasons: reason(clicks.ReasonBot), run: botUserAgents},
		{name: "no-fetch-metadata", tried: n(200, 3), reasons: reason(clicks.ReasonNoIntent), run: noFetchMetadata},
		{name: "token-other-ad", tried: n(200, 3), reasons: reason(clicks.ReasonForged), run: tokenOtherAd},
		{name: "token-other-network", tried: n(200, 3), reasons: reason(clicks.ReasonForged), run: tokenOtherNetwork},
		{name: "token-too-fast", tried: n(200, 3), reasons: reason(clicks.ReasonTooFast),
			flags: []string{"-click-min-delay", "30m"}, run: tokenTooFast},
		{name: "token-script-navigation", tried: n(200, 3), reasons: reason(clicks.ReasonNotNavigation),
			flags: []string{"-click-min-delay", "0s"}, run: tokenScriptNavigation},
		{name: "token-replay", tried: n(200, 3), allowed: 1, reasons: reason(clicks.ReasonRepeat),
			flags: []string{"-click-min-delay", "0s"}, run: tokenReplay},
		{name: "network-daily-cap", tried: capped + n(50, 2), allowed: capped, reasons: reason(clicks.ReasonNetworkCap),
			flags: []string{"-network-daily-clicks", strconv.Itoa(capped)}, daily: true, run: networkDailyCap},
	}
}

// Each class below clicks, where the check under test allows it, from a
// network of its own and on a fresh answer, so that nothing but that check
// stands between its clicks and the bill.

// forgedToken clicks ads never shown with the public site token alone.
func forgedToken(c *fraudClient, n int) {
	tok := c.siteToken(network(0))
	for i := range n {
		ad := c.ads[i%len(c.ads)]
		q := url.Values{"type": {"search"}, "adId": {ad.ID}, "adType": {ad.Kind.String()},
			"api_key": {"demo"}, "site_id": {"demo"}, "criterionId": {"anything"}, "tok": {tok}}
		c.click(network(i), "/v1/redirect?"+q.Encode(), browser())
	}
}

// swappedAd clicks signed links whose adId names another ad of the same
// kind.
func swappedAd(c *fraudClient, n int) {
	for i := range n {
		link := c.answer(network(i), "q=handy")[0]
		other := c.otherAd(i, link)
		c.click(network(i), withParams(link, "adId", other.ID), browser())
	}
}

// emptiedSignature clicks signed links with sig and exp emptied and the
// site token added.
func emptiedSignature(c *fraudClient, n int) {
	tok := c.siteToken(network(0))
	for i := range n {
		link := c.answer(network(i), "q=handy")[0]
		c.click(network(i), withParams(link, "sig", "", "exp", "", "tok", tok), browser())
	}
}

// hiddenImage fetches signed links as Chromium fetches an <img>.
func hiddenImage(c *fraudClient, n int) {
	h := browser()
	h.Del("Sec-Fetch-User")
	h.Set("Sec-Fetch-Mode", "no-cors")
	h.Set("Sec-Fetch-Dest", "image")
	h.Set("Sec-Fetch-Site", "cross-site")
	for i := range n {
		c.click(network(i), c.answer(network(i), "q=handy")[0], h)
	}
}

// prefetch fetches signed links as a speculative navigation.
func prefetch(c *fraudClient, n int) {
	h := browser()
	h.Del("Sec-Fetch-User")
	h.Set("Sec-Purpose", "prefetch")
	for i := range n {
		c.click(network(i), c.answer(network(i), "q=handy")[0], h)
	}
}

// scriptHeaders are what Chromium sends when a page's script navigates the
// window to a link (location.href, a synthetic click, form.submit()): a
// top-level navigation without Sec-Fetch-User, which only a person's
// activation brings.
func scriptHeaders() http.Header {
	h := browser()
	h.Del("Sec-Fetch-User")
	h.Set("Sec-Fetch-Site", "cross-site")
	return h
}

// scriptNavigation navigates Chromium to signed links by script, as a
// page would that sends its readers' browsers to click URLs.
func scriptNavigation(c *fraudClient, n int) {
	for i := range n {
		c.click(network(i), c.answer(network(i), "q=handy")[0], scriptHeaders())
	}
}

// rotation64 clicks one ad from many addresses of one IPv6 /64, some with
// a zone, each address on an answer of its own, all clicks at once so
// that they race for the network's window.
func rotation64(c *fraudClient, n int) {
	target := adID(c.answer("2001:db8:64::1", "q=handy")[0])
	ips, links := make([]string, n), make([]string, n)
	for i := range n {
		ips[i] = fmt.Sprintf("2001:db8:64::%x", i+2)
		if i%3 == 2 {
			ips[i] += "%z" + strconv.Itoa(i)
		}
		links[i] = c.linkTo(ips[i], "q=handy", target)
	}
	c.parallel(n, func(i int) { c.click(ips[i], links[i], browser()) })
}

// rotation48 clicks one ad from as many /64s of one IPv6 /48 as clicks,
// each on an answer of its own, all at once, as the holder of a tunnel
// broker's /48 would.
func rotation48(c *fraudClient, n int) {
	target := adID(c.answer("2001:db8:48::1", "q=handy")[0])
	ips, links := make([]string, n), make([]string, n)
	for i := range n {
		ips[i] = fmt.Sprintf("2001:db8:48:%x::1", i+1)
		links[i] = c.linkTo(ips[i], "q=handy", target)
	}
	c.parallel(n, func(i int) { c.click(ips[i], links[i], browser()) })
}

// rotation24 clicks one ad from n addresses of one IPv4 /24 (a hosting
// provider's), each on an answer of its own, at most 254 of them.
func rotation24(c *fraudClient, n int) {
	target := adID(c.answer("198.51.24.1", "q=handy")[0])
	n = min(n, 254)
	ips, links := make([]string, n), make([]string, n)
	for i := range n {
		ips[i] = fmt.Sprintf("198.51.24.%d", i+1)
		links[i] = c.linkTo(ips[i], "q=handy", target)
	}
	c.parallel(n, func(i int) { c.click(ips[i], links[i], browser()) })
}

// teredoRotation clicks one ad from as many Teredo addresses of one IPv4
// client as clicks, each naming another server (another /48 and /64) and
// port, each on an answer of its own, all at once: a relay checks neither,
// so one IPv4 host can send from all of them.
func teredoRotation(c *fraudClient, n int) {
	target := adID(c.answer("198.51.100.9", "q=handy")[0])
	ips, links := make([]string, n), make([]string, n)
	for i := range n {
		// 198.51.100.9 with every bit flipped: 39cc:9bf6.
		ips[i] = fmt.Sprintf("2001:0:%x:%x:8000:%x:39cc:9bf6", i+1, 7*i, 0xffff-i)
		links[i] = c.linkTo(ips[i], "q=handy", target)
	}
	c.parallel(n, func(i int) { c.click(ips[i], links[i], browser()) })
}

// oneLinkManyNetworks clicks one signed link from as many networks (each
// a /48 of its own) as clicks, many at once, as a pool of proxies would.
func oneLinkManyNetworks(c *fraudClient, n int) {
	link := c.answer(network(0), "q=handy")[0]
	c.parallel(n, func(i int) { c.click(network(i), link, browser()) })
}

// replay clicks one signed link, then again and again at once from the
// network that clicked it first.
func replay(c *fraudClient, n int) {
	link := c.answer(network(0), "q=handy")[0]
	c.click(network(0), link, browser())
	c.parallel(n-1, func(int) { c.click(network(0), link, browser()) })
}

// botUserAgents clicks signed links with each of botUAs in turn.
func botUserAgents(c *fraudClient, n int) {
	for i := range n {
		h := browser()
		h.Set("User-Agent", botUAs[i%len(botUAs)])
		c.click(network(i), c.answer(network(i), "q=handy")[0], h)
	}
}

// noFetchMetadata clicks signed links with a browser's user agent and no
// Sec-Fetch-* headers, as a script or an old browser would.
func noFetchMetadata(c *fraudClient, n int) {
	h := http.Header{"User-Agent": {chromeUA}}
	for i := range n {
		c.click(network(i), c.answer(network(i), "q=handy")[0], h)
	}
}

// networkDailyCap clicks a distinct ad on each fresh answer from one IPv4
// network, written as itself and as an IPv4-mapped IPv6 address in turn,
// all clicks at once so that they race for the cap.
func networkDailyCap(c *fraudClient, n int) {
	ips := []string{"192.0.2.11", "::ffff:192.0.2.11"}
	links := make([]string, n)
	seen := map[string]bool{}
	next := 0 // the catalog ad whose keyword is the next query
	for i := range n {
		for links[i] == "" {
			if next == len(c.ads) {
				c.tb.Fatalf("the demo catalog has no %d ads that searches give", n)
			}
			ad := c.ads[next]
			next++
			q := ad.Title
			if len(ad.Keywords) > 0 {
				q = ad.Keywords[0]
			}
			for _, l := range c.answer(ips[i%len(ips)], "q="+url.QueryEscape(q)) {
				if id := adID(l); !seen[id] {
					seen[id], links[i] = true, l
					break
				}
			}
		}
	}
	c.parallel(n, func(i int) { c.click(ips[i%len(ips)], links[i], browser()) })
}

// The click token classes: an ad matched in the page bills only on the
// click token its impression got, for that ad, network and browser, once.

// tokenOtherAd clicks an in-page link with the click token another ad's
// impression got, from the network the token was issued to.
func tokenOtherAd(c *fraudClient, n int) {
	for i := range n {
		ip := network(i)
		links := c.inPageLinks(ip, "q=handy")
		if len(links) < 2 {
			c.tb.Fatal("the demo catalog gave fewer than two ads for handy")
		}
		ct := c.clickTokens(ip, links[0])
		c.click(ip, links[1]+"&ct="+ct[0], browser())
	}
}

// tokenOtherNetwork clicks an in-page link with its own click token from a
// network other than the one its impression came from.
func tokenOtherNetwork(c *fraudClient, n int) {
	for i := range n {
		l := c.inPageLinks(network(2*i), "q=handy")[0]
		ct := c.clickTokens(network(2*i), l)
		c.click(network(2*i+1), l+"&ct="+ct[0], browser())
	}
}

// tokenTooFast clicks each in-page link with its click token as soon as
// its impression answered, sooner than the server lets a click bill.
func tokenTooFast(c *fraudClient, n int) {
	for i := range n {
		l := c.inPageLinks(network(i), "q=handy")[0]
		c.click(network(i), l+"&ct="+c.clickTokens(network(i), l)[0], browser())
	}
}

// tokenScriptNavigation has the page's script report its in-page link as
// seen and then navigate Chromium to it with the click token the
// impression got, no reader's click between.
func tokenScriptNavigation(c *fraudClient, n int) {
	for i := range n {
		l := c.inPageLinks(network(i), "q=handy")[0]
		c.click(network(i), l+"&ct="+c.clickTokens(network(i), l)[0], scriptHeaders())
	}
}

// tokenReplay clicks one in-page link with its click token, then again and
// again at once from the same network.
func tokenReplay(c *fraudClient, n int) {
	l := c.inPageLinks(network(0), "q=handy")[0]
	l += "&ct=" + c.clickTokens(network(0), l)[0]
	c.click(network(0), l, browser())
	c.parallel(n-1, func(int) { c.click(network(0), l, browser()) })
}

// network returns an address in the i-th IPv6 /48 of the documentation
// range (i < 65,536), so that only the class about a /48's cap meets it.
func network(i int) string {
	return fmt.Sprintf("2001:db8:%x::1", i)
}

// browser returns the headers Chromium sends for a person's click on a
// link.
func browser() http.Header {
	h := http.Header{"User-Agent": {chromeUA}}
	clicks.Navigation.Header(h)
	return h
}

// withParams returns the path and query u with each name set to its value
// (kv: name, value, name, value...).
func withParams(u string, kv ...string) string {
	path, query, _ := strings.Cut(u, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		panic(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return path + "?" + q.Encode()
}

// fraudClient sends one class's requests to a server, each from the
// loopback proxy on behalf of the address it names.
type fraudClient struct {
	tb   testing.TB
	base string
	ads  []match.Ad   // the demo catalog
	sent atomic.Int64 // clicks sent
	// http sends the requests; nil is noFollow, from the loopback proxy.
	http *http.Client
}

// get sends GET base+path as the client at ip with headers h and returns
// the answer's status and body; a request that fails is an error of the
// test and gives status 0. Safe for concurrent use.
func (c *fraudClient) get(ip, path string, h http.Header) (int, []byte) {
	c.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	if err != nil {
		c.tb.Errorf("%s: %v", path, err)
		return 0, nil
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("X-Forwarded-For", ip)
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "") // Go's client then sends none
	}
	client := c.http
	if client == nil {
		client = noFollow
	}
	res, err := client.Do(req)
	if err != nil {
		c.tb.Errorf("%s: %v", path, err)
		return 0, nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.tb.Errorf("%s: %v", path, err)
		return 0, nil
	}
	return res.StatusCode, body
}

// answer searches as the client at ip with query and returns the answer's
// ad URLs as paths.
func (c *fraudClient) answer(ip, query string) []string {
	c.tb.Helper()
	status, body := c.get(ip, "/v2/search/link?api_key=demo&site_id=demo&"+query, browser())
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(body, &resp); err != nil || status != http.StatusOK {
		c.tb.Fatalf("search %s: %d %v", query, status, err)
	}
	var out []string
	for _, l := range resp.Link {
		u, err := url.Parse(l.Ad)
		if err != nil {
			c.tb.Fatal(err)
		}
		out = append(out, u.Path+"?"+u.RawQuery)
	}
	if len(out) == 0 {
		c.tb.Fatalf("search %s: no ads", query)
	}
	return out
}

// linkTo searches as the client at ip and returns the answer's link to
// the ad id.
func (c *fraudClient) linkTo(ip, query, id string) string {
	c.tb.Helper()
	for _, l := range c.answer(ip, query) {
		if adID(l) == id {
			return l
		}
	}
	c.tb.Fatalf("search %s: no link to %s", query, id)
	return ""
}

// siteToken returns the site token (tok) of the demo site's shard
// manifest, which anyone may ask for.
func (c *fraudClient) siteToken(ip string) string {
	c.tb.Helper()
	status, body := c.get(ip, "/v2/shards?api_key=demo&site_id=demo", browser())
	var m struct{ Tok string }
	if err := json.Unmarshal(body, &m); err != nil || status != http.StatusOK || m.Tok == "" {
		c.tb.Fatalf("shard manifest: %d %v, tok %q", status, err, m.Tok)
	}
	return m.Tok
}

// inPageLinks returns an answer's links to distinct ads as the page's
// module makes them: without the server's d, exp and sig, with the site
// token.
func (c *fraudClient) inPageLinks(ip, query string) []string {
	c.tb.Helper()
	tok := c.siteToken(ip)
	var out []string
	seen := map[string]bool{}
	for _, l := range c.answer(ip, query) {
		if seen[adID(l)] {
			continue
		}
		seen[adID(l)] = true
		path, q, _ := strings.Cut(l, "?")
		v, err := url.ParseQuery(q)
		if err != nil {
			c.tb.Fatal(err)
		}
		v.Del("d")
		v.Del("exp")
		v.Del("sig")
		v.Set("tok", tok)
		out = append(out, path+"?"+v.Encode())
	}
	return out
}

// clickTokens reports links seen on a demo page as the client at ip, as
// the widget does, and returns the click tokens the impression beacon
// gave them.
func (c *fraudClient) clickTokens(ip string, links ...string) []string {
	c.tb.Helper()
	q := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "url": {"http://localhost/article"}}
	for _, l := range links {
		_, query, _ := strings.Cut(l, "?")
		q.Add("ad", query)
	}
	status, body := c.get(ip, "/v1/impression?"+q.Encode(), browser())
	var resp struct{ CT []string }
	if err := json.Unmarshal(body, &resp); err != nil || status != http.StatusOK || len(resp.CT) != len(links) {
		c.tb.Fatalf("impression beacon: %d %v %s", status, err, body)
	}
	for i, ct := range resp.CT {
		if ct == "" {
			c.tb.Fatalf("impression beacon gave %s no click token", links[i])
		}
	}
	return resp.CT
}

// otherAd returns the i-th catalog ad of the same kind as link's that is
// not link's.
func (c *fraudClient) otherAd(i int, link string) match.Ad {
	c.tb.Helper()
	kind := linkParams(link).Get("adType")
	var same []match.Ad
	for _, ad := range c.ads {
		if ad.Kind.String() == kind && ad.ID != adID(link) {
			same = append(same, ad)
		}
	}
	if len(same) == 0 {
		c.tb.Fatalf("no other %s ad in the demo catalog", kind)
	}
	return same[i%len(same)]
}

// click follows the ad URL path as the client at ip with headers h; the
// visitor must land (302) whatever the click is. Safe for concurrent use.
func (c *fraudClient) click(ip, path string, h http.Header) {
	c.tb.Helper()
	c.sent.Add(1)
	if status, body := c.get(ip, path, h); status != http.StatusFound {
		c.tb.Errorf("click %s from %s: %d %s, want 302", path, ip, status, body)
	}
}

// fraudWorkers is how many clicks a class sends at once when it races.
const fraudWorkers = 16

// parallel calls fn(i) for every i below n from fraudWorkers goroutines.
func (c *fraudClient) parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range fraudWorkers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// linkParams returns the query parameters of link.
func linkParams(link string) url.Values {
	_, q, _ := strings.Cut(link, "?")
	v, _ := url.ParseQuery(q)
	return v
}

// fraudOutcome is what a class billed, as the click log has it.
type fraudOutcome struct {
	billable int
	reasons  map[string]int // unbilled clicks by reason
}

// runFraudClass runs fc against a fresh server from bin, stops it and
// checks the click log: every click recorded, none billed beyond what fc
// allows, the rest with fc's reasons.
func runFraudClass(tb testing.TB, bin string, fc fraudClass) fraudOutcome {
	tb.Helper()
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	data := tb.TempDir()
	srv := startServer(tb, bin, data, append([]string{"-trusted-proxies", "127.0.0.1/32,::1/128"}, fc.flags...)...)
	c := &fraudClient{tb: tb, base: srv.base, ads: ads}
	fc.run(c, fc.tried)
	srv.stop()

	out := fraudOutcome{reasons: map[string]int{}}
	log := readClicks(tb, data)
	if fc.daily && len(log) > 0 && log[0].Time.UTC().YearDay() != log[len(log)-1].Time.UTC().YearDay() {
		tb.Skipf("%s: the clicks crossed midnight UTC, when the daily cap starts over", fc.name)
	}
	for _, cl := range log {
		if a, err := netip.ParseAddr(cl.IP); err != nil || a.IsLoopback() {
			tb.Fatalf("%s: a click recorded from %q: the proxy's X-Forwarded-For was not read", fc.name, cl.IP)
		}
		if cl.Billable {
			out.billable++
		} else {
			out.reasons[cl.Reason]++
		}
	}
	if sent := int(c.sent.Load()); sent != fc.tried || len(log) != fc.tried {
		tb.Errorf("%s: %d clicks sent, %d recorded; want %d", fc.name, sent, len(log), fc.tried)
	}
	switch {
	case out.billable > fc.allowed:
		tb.Errorf("%s: %d of %d clicks billable, %d allowed", fc.name, out.billable, fc.tried, fc.allowed)
	case out.billable < fc.allowed:
		tb.Errorf("%s: %d of %d clicks billable; the %d genuine ones should be", fc.name, out.billable, fc.tried, fc.allowed)
	}
	for _, r := range slices.Sorted(maps.Keys(out.reasons)) {
		if !slices.Contains(fc.reasons, r) {
			tb.Errorf("%s: %d clicks recorded as %q, want %q", fc.name, out.reasons[r], r, fc.reasons)
		}
	}
	return out
}

// TestFraudSuite runs the fraud suite with a few clicks per class: none
// bills beyond the one click a decision allows, each for its reason. Each
// class runs a server of its own on its own port and data, and mostly
// waits for it to start and stop, so the classes run side by side.
func TestFraudSuite(t *testing.T) {
	bin := buildServer(t)
	for _, fc := range fraudClasses(true) {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			runFraudClass(t, bin, fc)
		})
	}
}

// The classes of a prefix rotating its networks on one ad bill past what
// they allow once the cap per ad is off: the cap, not another check, is
// what holds them.
func TestFraudPrefixAdClassesNeedTheirCap(t *testing.T) {
	bin := buildServer(t)
	var classes []fraudClass
	for _, fc := range fraudClasses(true) {
		if slices.Contains(fc.reasons, clicks.ReasonPrefixAdCap) {
			classes = append(classes, fc)
		}
	}
	if len(classes) != 2 {
		t.Fatalf("%d classes of a prefix on one ad, want the /48's and the /24's", len(classes))
	}
	for _, fc := range classes {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			off := fc
			off.flags = append(slices.Clone(fc.flags), "-prefix-ad-daily-clicks", "0")
			off.allowed, off.reasons = fc.tried, nil
			if out := runFraudClass(t, bin, off); out.billable <= fc.allowed {
				t.Errorf("%s without the cap per ad: %d of %d clicks billable, no more than the %d it allows with it",
					fc.name, out.billable, fc.tried, fc.allowed)
			}
		})
	}
}

// BenchmarkFraud replays each class of the fraud suite against the binary,
// one line per class: the clicks it billed beside those it tried and those
// it may bill (the first click of a decision). It fails when a class bills
// more than it may, or records a click for another reason than its own.
func BenchmarkFraud(b *testing.B) {
	bin := buildServer(b)
	for _, fc := range fraudClasses(false) {
		b.Run(fc.name, func(b *testing.B) {
			for range b.N {
				out := runFraudClass(b, bin, fc)
				b.ReportMetric(float64(out.billable), "billable")
				b.ReportMetric(float64(fc.tried), "tried")
				b.ReportMetric(float64(fc.allowed), "allowed")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}
