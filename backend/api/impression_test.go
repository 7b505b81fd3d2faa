package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/match"
)

// testImpressions are bbolt Impressions in dir, closed at the end of t.
func testImpressions(t testing.TB, dir string) clicks.Impressions {
	t.Helper()
	imps, _ := testStore(t, dir, clicks.NewImpressions)
	return imps
}

// inPageLinks are click URLs as the page's module makes them: a server
// answer's links without d, exp and sig, with the site token instead.
func (env *signedEnv) inPageLinks(t testing.TB, query string) []string {
	t.Helper()
	tok := env.keys.Token("demo", "demo", env.now.Add(time.Hour))
	var out []string
	for _, l := range distinctAds(env.links(t, query)) {
		l = setParam(setParam(setParam(l, "d", "-"), "exp", "-"), "sig", "-")
		out = append(out, l+"&tok="+tok)
	}
	return out
}

// beacon reports links as seen on a demo page from ip with ua and returns
// the status and the click tokens.
func (env *signedEnv) beacon(t testing.TB, ip, ua string, links ...string) (int, []string) {
	t.Helper()
	return env.beaconOn(t, "http://localhost/article", ip, ua, links...)
}

// beaconOn is beacon on page.
func (env *signedEnv) beaconOn(t testing.TB, page, ip, ua string, links ...string) (int, []string) {
	t.Helper()
	q := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "url": {page}}
	for _, l := range links {
		_, query, _ := strings.Cut(l, "?")
		q.Add("ad", query)
	}
	res := env.do(t, "/v1/impression?"+q.Encode(), ip, ua)
	body := readBody(t, res)
	var resp struct{ CT []string }
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatalf("beacon: %v\n%s", err, body)
		}
		if len(resp.CT) != len(links) {
			t.Fatalf("beacon: %d tokens for %d ads", len(resp.CT), len(links))
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("beacon Cache-Control %q, want no-store", cc)
		}
	}
	return res.StatusCode, resp.CT
}

// impressions are every impression env recorded.
func (env *signedEnv) impressions(t testing.TB) []clicks.Impression {
	t.Helper()
	var out []clicks.Impression
	if err := env.imps.Scan(context.Background(), time.Time{}, time.Time{}, func(i clicks.Impression) error {
		out = append(out, i)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// An in-page ad bills only with the click token its impression got, once,
// from the reader's network and browser, and not sooner than a reader
// could click.
func TestInPageClickNeedsItsImpression(t *testing.T) {
	env := newSignedEnv(t)
	links := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
	if len(links) < 2 {
		t.Fatalf("%d ads, want 2", len(links))
	}
	const reader = "198.51.100.7"
	// The site token alone proves no ad was shown.
	if c := env.click(t, links[0], reader, browserUA); c.Billable || c.Reason != clicks.ReasonUnverified {
		t.Fatalf("site token alone: billable %v %q, want unverified", c.Billable, c.Reason)
	}
	status, ct := env.beacon(t, reader, browserUA, links[0], links[1])
	if status != http.StatusOK || ct[0] == "" || ct[1] == "" {
		t.Fatalf("beacon: %d %q", status, ct)
	}
	imps := env.impressions(t)
	if len(imps) != 2 || imps[0].AdID != queryOf(t, links[0]).Get("adId") || imps[0].Page != "http://localhost/article" ||
		imps[0].IP != reader || imps[0].UserAgent != browserUA || imps[0].Criterion != queryOf(t, links[0]).Get("criterionId") {
		t.Fatalf("impressions recorded: %+v", imps)
	}
	withCT := func(l, ct string) string { return l + "&ct=" + url.QueryEscape(ct) }
	// altered changes one character of a token's signature, not its last:
	// all six bits of a character before the last are the signature's,
	// and the character is always made another (a fixed "AA" at the end
	// was the token itself once in 1,024 runs).
	altered := func(ct string) string {
		b := []byte(ct)
		i := len(b) - 3
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}

	// At once after its impression: faster than a reader. The token is not
	// spent by it.
	if c := env.click(t, withCT(links[0], ct[0]), reader, browserUA); c.Billable || c.Reason != clicks.ReasonTooFast {
		t.Errorf("click at once: billable %v %q, want too_fast", c.Billable, c.Reason)
	}
	env.advance(time.Second)
	for _, tt := range []struct {
		name, target, ip, ua string
	}{
		{"another ad's token", withCT(links[1], ct[0]), reader, browserUA},
		{"another network", withCT(links[0], ct[0]), "203.0.113.9", browserUA},
		{"another browser", withCT(links[0], ct[0]), reader, browserUA + " Edg/1"},
		{"another criterion", withCT(setParam(links[0], "criterionId", "iphone"), ct[0]), reader, browserUA},
		{"altered token", withCT(links[0], altered(ct[0])), reader, browserUA},
		{"token of a signed link", withCT(links[0], "t1."+clicks.NewDecision()+".1.1."+strings.Repeat("A", 43)), reader, browserUA},
		{"garbage", withCT(links[0], "x"), reader, browserUA},
	} {
		if c := env.click(t, tt.target, tt.ip, tt.ua); c.Billable || c.Reason != clicks.ReasonForged {
			t.Errorf("%s: billable %v %q, want forged", tt.name, c.Billable, c.Reason)
		}
	}
	if c := env.click(t, withCT(links[0], ct[0]), reader, browserUA); !c.Billable {
		t.Fatalf("the reader's click a second after the impression: %q, want billable", c.Reason)
	}
	if c := env.click(t, withCT(links[0], ct[0]), reader, browserUA); c.Billable || c.Reason != clicks.ReasonRepeat {
		t.Errorf("the token again: billable %v %q, want repeat", c.Billable, c.Reason)
	}
	// The other ad's token, from the same network (which has no billable
	// click on that ad yet), bills.
	if c := env.click(t, withCT(links[1], ct[1]), reader, browserUA); !c.Billable {
		t.Errorf("the second ad's own token: %q, want billable", c.Reason)
	}
	// A token past its expiry.
	_, late := env.beacon(t, "198.51.100.8", browserUA, links[0])
	env.advance(2 * time.Hour)
	if c := env.click(t, withCT(links[0], late[0]), "198.51.100.8", browserUA); c.Billable || c.Reason != clicks.ReasonExpired {
		t.Errorf("token after its expiry: billable %v %q, want expired", c.Billable, c.Reason)
	}
}

// The beacon refuses what is not a partner's page's ads, and gives bots and
// ads the catalog does not have no token.
func TestImpressionBadInput(t *testing.T) {
	env := newSignedEnv(t)
	links := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
	ad := func(l string) string { _, q, _ := strings.Cut(l, "?"); return url.QueryEscape(q) }
	many := strings.Repeat("&ad="+ad(links[0]), MaxImpressionAds+1)
	for _, tt := range []struct {
		name, query string
		status      int
		param       string
	}{
		{"no ads", "api_key=demo&site_id=demo&url=http://localhost/", 400, "ad"},
		{"no url", "api_key=demo&site_id=demo&ad=" + ad(links[0]), 400, "url"},
		{"no api_key", "site_id=demo&url=http://localhost/&ad=" + ad(links[0]), 400, "api_key"},
		{"too many ads", "api_key=demo&site_id=demo&url=http://localhost/" + many, 400, "ad"},
		{"not a click", "api_key=demo&site_id=demo&url=http://localhost/&ad=adId%3Dx", 400, "ad"},
		{"another partner's ad", "api_key=k2&site_id=blog&url=http://blog.example/&ad=" + ad(links[0]), 400, "ad"},
		{"a page of another site", "api_key=demo&site_id=demo&url=http://evil.example/&ad=" + ad(links[0]), 403, "url"},
		{"unknown key", "api_key=nope&site_id=demo&url=http://localhost/&ad=" + ad(setParam(links[0], "api_key", "nope")), 401, "api_key"},
		{"negative age", "api_key=demo&site_id=demo&url=http://localhost/&age=-1&ad=" + ad(links[0]), 400, "age"},
		{"age not a number", "api_key=demo&site_id=demo&url=http://localhost/&age=1e3&ad=" + ad(links[0]), 400, "age"},
		{"age with a sign", "api_key=demo&site_id=demo&url=http://localhost/&age=%2B5&ad=" + ad(links[0]), 400, "age"},
		{"two ages", "api_key=demo&site_id=demo&url=http://localhost/&age=0&age=1800000&ad=" + ad(links[0]), 400, "age"},
		{"an age and an empty one", "api_key=demo&site_id=demo&url=http://localhost/&age=&age=5&ad=" + ad(links[0]), 400, "age"},
	} {
		res := env.do(t, "/v1/impression?"+tt.query, "198.51.100.7", browserUA)
		body := readBody(t, res)
		var e struct{ Error struct{ Param string } }
		json.Unmarshal(body, &e)
		if res.StatusCode != tt.status || e.Error.Param != tt.param {
			t.Errorf("%s: %d param %q, want %d %q\n%s", tt.name, res.StatusCode, e.Error.Param, tt.status, tt.param, body)
		}
	}
	if n := len(env.impressions(t)); n != 0 {
		t.Fatalf("refused beacons recorded %d impressions", n)
	}

	gone := setParam(links[0], "adId", "no-such-ad.example")
	wrongType := setParam(links[0], "adType", "coupon")
	if status, ct := env.beacon(t, "198.51.100.7", browserUA, gone, wrongType, links[0]); status != 200 || ct[0] != "" || ct[1] != "" || ct[2] == "" {
		t.Errorf("unknown ad, wrong adType, good ad: %d %q", status, ct)
	}
	if n := len(env.impressions(t)); n != 1 {
		t.Errorf("%d impressions recorded, want the good ad's 1", n)
	}
	for _, ua := range []string{"curl/8.0", "", "Googlebot/2.1 (+http://www.google.com/bot.html)"} {
		if status, ct := env.beacon(t, "198.51.100.7", ua, links[0]); status != 200 || ct[0] != "" {
			t.Errorf("beacon from %q: %d %q, want no token", ua, status, ct)
		}
	}
	if n := len(env.impressions(t)); n != 1 {
		t.Errorf("bots' beacons recorded impressions: %d, want 1", n)
	}
}

// Every impression a beacon reports is recorded, under load from many
// readers at once, and each reader's token bills once.
func TestImpressionTokensFromManyNetworks(t *testing.T) {
	env := newSignedEnv(t)
	l := env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	const readers = 20
	tokens := make([]string, readers)
	for i := range readers {
		_, ct := env.beacon(t, "2001:db8:"+strconv.Itoa(i+1)+"::1", browserUA, l)
		tokens[i] = ct[0]
	}
	env.advance(time.Second)
	billed := 0
	for i, ct := range tokens {
		// Each reader clicks its own token, and then another's.
		ip := "2001:db8:" + strconv.Itoa(i+1) + "::2"
		if env.click(t, l+"&ct="+url.QueryEscape(ct), ip, browserUA).Billable {
			billed++
		}
		if c := env.click(t, l+"&ct="+url.QueryEscape(tokens[(i+1)%readers]), ip, browserUA); c.Billable {
			t.Errorf("reader %d billed with another reader's token", i)
		}
	}
	if billed != readers {
		t.Errorf("%d of %d readers' clicks billable", billed, readers)
	}
	if n := len(env.impressions(t)); n != readers {
		t.Errorf("%d impressions recorded, want %d", n, readers)
	}
}

// FuzzImpression: whatever the query, the beacon answers JSON with a known
// status, never records an impression it refused, records at most one
// impression per distinct token it gives, and never three of one ad, page
// and network (the fuzz's clock stands still: one impression window, and
// the one before that an age can name).
func FuzzImpression(f *testing.F) {
	env := newSignedEnv(f)
	l := env.inPageLinks(f, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	_, ad, _ := strings.Cut(l, "?")
	for _, s := range []string{
		"api_key=demo&site_id=demo&url=http://localhost/a&ad=" + url.QueryEscape(ad),
		"api_key=demo&site_id=demo&url=http://localhost/a&ad=" + url.QueryEscape(ad) + "&ad=" + url.QueryEscape(setParam("/?"+ad, "adId", "x")[2:]),
		"api_key=demo&site_id=demo&url=http://localhost/a&ad=" + url.QueryEscape(ad) + "&ad=" + url.QueryEscape(ad),
		"api_key=demo&site_id=demo&url=http://localhost/a&age=1800000&ad=" + url.QueryEscape(ad),
		"api_key=demo&site_id=demo&url=http://localhost/a&age=-1&ad=" + url.QueryEscape(ad),
		"api_key=demo&site_id=demo&url=http://localhost/a&ad=" + url.QueryEscape(setParam("/?"+ad, "tok", "-")[2:]),
		"api_key=demo&site_id=demo&url=http://evil.example/&ad=" + url.QueryEscape(ad),
		"api_key=demo&site_id=demo&url=javascript:alert(1)&ad=x",
		"ad=%zz&;",
		"",
	} {
		f.Add(s)
	}
	kinds := map[string]string{}
	for _, a := range fixture() {
		kinds[a.ID] = a.Kind.String()
	}
	f.Fuzz(func(t *testing.T, raw string) {
		before := len(env.impressions(t))
		req := httptest.NewRequest(http.MethodGet, "/v1/impression", nil)
		req.URL.RawQuery = raw
		req.Header.Set("User-Agent", browserUA)
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, req)
		res := rec.Result()
		body := readBody(t, res)
		added := len(env.impressions(t)) - before
		switch res.StatusCode {
		case http.StatusOK:
			var resp struct{ CT []string }
			q, _ := url.ParseQuery(raw)
			if err := json.Unmarshal(body, &resp); err != nil || len(resp.CT) != len(q["ad"]) {
				t.Fatalf("%q: %s", raw, body)
			}
			// Copies of an ad share its token and its one impression. A
			// token goes only to a link adLink's checks let through: one
			// the server signed, or one with the page's site token.
			given := map[string]bool{}
			for i, ct := range resp.CT {
				if ct == "" {
					continue
				}
				given[ct] = true
				a := q["ad"][i]
				av, err := url.ParseQuery(strings.TrimPrefix(a[strings.IndexByte(a, '?')+1:], "&"))
				if err != nil || kinds[av.Get("adId")] != av.Get("adType") || (!av.Has("sig") && !av.Has("tok")) {
					t.Fatalf("%q: a token for ad %d, %q, which is no link of an ad the server or the page made", raw, i, a)
				}
			}
			if added > len(given) {
				t.Fatalf("%q: %d distinct tokens for %d impressions", raw, len(given), added)
			}
			seen := map[[3]string]int{}
			for _, i := range env.impressions(t) {
				k := [3]string{i.AdID, i.Page, clicks.Network(i.IP)}
				if seen[k]++; seen[k] > 2 {
					t.Fatalf("%q: a third impression of %q in one window", raw, k)
				}
			}
		case 400, 401, 403:
			if added != 0 || !json.Valid(body) {
				t.Fatalf("%q: %d with %d impressions: %s", raw, res.StatusCode, added, body)
			}
		default:
			t.Fatalf("%q: status %d: %s", raw, res.StatusCode, body)
		}
	})
}

// TestImpressionRepeatsCountOnce: one beacon replayed 50 times gets its
// tokens every time and counts one impression per ad; the repeats are
// counted apart. The same ads from another network or in the next
// impression window count again.
func TestImpressionRepeatsCountOnce(t *testing.T) {
	env := newSignedEnv(t)
	links := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
	if len(links) < 2 {
		t.Fatalf("%d ads, want 2", len(links))
	}
	links = links[:2]
	const reader, page = "198.51.100.7", "http://localhost/a"
	for i := range 50 {
		status, ct := env.beaconOn(t, page, reader, browserUA, links...)
		if status != http.StatusOK || ct[0] == "" || ct[1] == "" {
			t.Fatalf("replay %d: %d %q, want a token each", i, status, ct)
		}
		env.advance(10 * time.Second)
	}
	if n := len(env.impressions(t)); n != 2 {
		t.Fatalf("one beacon of 2 ads sent 50 times: %d impressions, want 2", n)
	}
	body := scrape(t, env.metrics)
	for _, want := range []string{"adlink_impressions_total 2\n", "adlink_impression_repeats_total 98\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	env.beaconOn(t, page, "203.0.113.9", browserUA, links...)
	if n := len(env.impressions(t)); n != 4 {
		t.Errorf("another network: %d impressions, want 4", n)
	}
	env.advance(30 * time.Minute)
	env.beaconOn(t, page, reader, browserUA, links...)
	if n := len(env.impressions(t)); n != 6 {
		t.Errorf("the next window: %d impressions, want 6", n)
	}
}

// An IPv6 reader has a /48's 65,536 /64s to rotate through: beacons of
// one ad from 300 /64s of one /48 count at most
// -impression-prefix-networks times in a window (each gets its tokens),
// while readers of 20 other /48s count once each; with the bound off,
// every /64 counts.
func TestImpressionRotatedNetworksOfAPrefix(t *testing.T) {
	for _, shares := range []int{8, 0} {
		t.Run(fmt.Sprint("shares=", shares), func(t *testing.T) {
			env := newSignedEnvWith(t, func(c *config.Config) { c.ImpressionPrefixNetworks = shares }, testWindows(t, t.TempDir()))
			links := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
			if len(links) == 0 {
				t.Fatal("no ads")
			}
			link := links[0]
			const rotations = 300
			for i := range rotations {
				ip := fmt.Sprintf("2001:db8:77:%x::%x", i, i+1)
				if status, ct := env.beaconOn(t, "http://localhost/a", ip, browserUA, link); status != http.StatusOK || ct[0] == "" {
					t.Fatalf("beacon from %s: %d %q, want a token", ip, status, ct)
				}
			}
			n := len(env.impressions(t))
			if shares > 0 && (n == 0 || n > shares) {
				t.Errorf("one ad from %d /64s of one /48: %d impressions, want 1 to %d", rotations, n, shares)
			}
			if shares == 0 && n != rotations {
				t.Errorf("one ad from %d /64s of one /48, no bound: %d impressions, want %d", rotations, n, rotations)
			}
			for i := range 20 {
				env.beaconOn(t, "http://localhost/a", fmt.Sprintf("2001:db8:%x::1", 0x100+i), browserUA, link)
			}
			if got := len(env.impressions(t)); got != n+20 {
				t.Errorf("20 readers of other /48s: %d impressions more, want 20", got-n)
			}
		})
	}
}

// The page's URL is the client's to choose among the site's: the same
// beacon with its url varied in path, query, fragment, scheme or
// subdomain counts each ad once per network and window, and gets its
// tokens every time.
func TestImpressionURLVariedCountsOnce(t *testing.T) {
	env := newSignedEnv(t)
	links := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
	if len(links) < 2 {
		t.Fatalf("%d ads, want 2", len(links))
	}
	links = links[:2]
	const reader = "198.51.100.7"
	for i, page := range []string{"http://localhost/", "http://localhost/a", "http://localhost/a?x=1",
		"http://localhost/a?x=2&y=3", "http://localhost/b/c#top", "https://localhost/d",
		"http://www.localhost/", "http://a.b.localhost/e?f=" + strings.Repeat("g", 100)} {
		status, ct := env.beaconOn(t, page, reader, browserUA, links...)
		if status != http.StatusOK || ct[0] == "" || ct[1] == "" {
			t.Fatalf("url %d %q: %d %q, want a token each", i, page, status, ct)
		}
		env.advance(time.Second)
	}
	if n := len(env.impressions(t)); n != 2 {
		t.Errorf("one beacon of 2 ads sent from 8 urls of the site: %d impressions, want 2", n)
	}
}

// A beacon counts what a page can have shown: each ad once, with the
// criterion and yk_tag its link was made with. Copies of one ad, criteria
// or tags put in a signed link, criteria a page's link cannot have, links
// with no proof of where they came from, and garbage pad no count.
func TestImpressionPadding(t *testing.T) {
	env := newSignedEnv(t)
	// Each step beacons from a network of its own: an ad counts once per
	// site, network and window, so a count a step wrongly makes shows.
	reader := func(step int) string { return "198.51.100." + strconv.Itoa(step) }
	page := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
	signed := distinctAds(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20"))
	if len(page) < 2 || len(signed) < 2 {
		t.Fatalf("%d in-page and %d signed ads, want 2 of each", len(page), len(signed))
	}
	count := func() int { return len(env.impressions(t)) }

	// Sixteen copies of one ad are one impression; every copy gets the
	// same token, as the page may show one ad twice (in the text and in
	// its box).
	copies := make([]string, MaxImpressionAds)
	for i := range copies {
		copies[i] = page[0]
	}
	status, ct := env.beaconOn(t, "http://localhost/padding/1", reader(1), browserUA, copies...)
	if status != http.StatusOK || ct[0] == "" {
		t.Fatalf("copies: %d %q", status, ct)
	}
	for i, c := range ct {
		if c != ct[0] {
			t.Errorf("copy %d got token %q, want the first's", i, c)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d copies of one ad counted %d impressions, want 1", len(copies), n)
	}
	// A signed link's copies; a page's link under an invented criterion,
	// refused, which does not keep the link itself from counting.
	status, ct = env.beaconOn(t, "http://localhost/padding/2", reader(2), browserUA, signed[0], signed[0],
		setParam(page[1], "criterionId", "padding"), page[1])
	if status != http.StatusOK || ct[0] == "" || ct[1] != ct[0] || ct[2] != "" || ct[3] == "" {
		t.Errorf("signed copies, an invented criterion, the ad's own: %d %q, want the copy the first's token, the invented criterion none", status, ct)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d impressions, want 3", n)
	}

	// A link the page made cannot be signed: its criterion must be one
	// the page's match can name for its ad, one or more of the ad's
	// criteria, as the page writes them.
	var handyladen string
	for _, l := range page {
		if queryOf(t, l).Get("adId") == "handyladen.de" {
			handyladen = l
		}
	}
	if handyladen == "" {
		t.Fatal("no in-page link of handyladen.de")
	}
	if status, ct := env.beaconOn(t, "http://localhost/padding/3", reader(3), browserUA, setParam(handyladen, "criterionId", "Handy ohne Vertrag")); status != http.StatusOK || ct[0] == "" {
		t.Errorf("an in-page link with another of its ad's criteria: %d %q, want a token", status, ct)
	}
	if n := count(); n != 4 {
		t.Fatalf("%d impressions, want 4", n)
	}
	// Two links of one ad the page made, under two of its criteria (as in
	// the text and in the box): each gets a token of its own, so a click
	// on either can bill, and the ad counts once.
	status, ct = env.beaconOn(t, "http://localhost/padding/4", reader(4), browserUA, handyladen, setParam(handyladen, "criterionId", "Handy ohne Vertrag"))
	if status != http.StatusOK || ct[0] == "" || ct[1] == "" || ct[0] == ct[1] {
		t.Errorf("two links of one ad: %d %q, want a token each", status, ct)
	}
	if n := count(); n != 5 {
		t.Fatalf("%d impressions after two links of one ad, want 5", n)
	}
	// Two tokens do not make the ad bill twice: from one network, an ad
	// bills once a day, so the click on the second link is a repeat.
	env.advance(time.Second)
	first := env.click(t, handyladen+"&ct="+url.QueryEscape(ct[0]), reader(4), browserUA)
	second := env.click(t, setParam(handyladen, "criterionId", "Handy ohne Vertrag")+"&ct="+url.QueryEscape(ct[1]), reader(4), browserUA)
	if !first.Billable || second.Billable || second.Reason != clicks.ReasonRepeat {
		t.Errorf("clicks on the two links of one ad: billable %v %q, then %v %q; want the first to bill and the second a repeat",
			first.Billable, first.Reason, second.Billable, second.Reason)
	}
	otherSite := env.keys.Token("demo", "other", env.now.Add(time.Hour))
	expiredTok := env.keys.Token("demo", "demo", env.now.Add(-time.Second))
	for _, tt := range []struct{ name, link string }{
		{"invented criterion on a signed link", setParam(signed[1], "criterionId", "invented")},
		{"yk_tag added to a signed link", setParam(signed[1], "yk_tag", "padding")},
		{"signed link of another ad", setParam(signed[1], "adId", queryOf(t, signed[0]).Get("adId"))},
		{"sig removed, exp kept", setParam(signed[1], "sig", "-")},
		{"invented criterion on a page's link", setParam(handyladen, "criterionId", "invented")},
		{"a word added to a page's link's criterion", setParam(handyladen, "criterionId", "handy padding")},
		{"another ad's criterion on a page's link", setParam(handyladen, "criterionId", "handy verkaufen")},
		{"no sig and no tok", setParam(page[1], "tok", "-")},
		{"tok of another site", setParam(page[1], "tok", otherSite)},
		{"expired tok", setParam(page[1], "tok", expiredTok)},
		{"garbage tok", setParam(page[1], "tok", "x.y.z")},
	} {
		status, ct := env.beaconOn(t, "http://localhost/padding/5", reader(5), browserUA, tt.link)
		if status != http.StatusOK || ct[0] != "" {
			t.Errorf("%s: %d %q, want 200 and no token", tt.name, status, ct)
		}
	}
	if n := count(); n != 5 {
		t.Fatalf("refused ads counted: %d impressions, want 5", n)
	}
	// A signed link past its expiry shows an answer older than any page
	// keeps: no count.
	old := signed[1]
	env.advance(25 * time.Hour)
	if status, ct := env.beaconOn(t, "http://localhost/padding/6", reader(6), browserUA, old); status != http.StatusOK || ct[0] != "" {
		t.Errorf("expired signed link: %d %q, want no token", status, ct)
	}
	if n := count(); n != 5 {
		t.Fatalf("expired signed link counted: %d impressions, want 5", n)
	}
}

// Overlong and garbage criteria and tags are refused as the redirect
// refuses them: a 400 naming the ad and the parameter inside it.
func TestImpressionGarbage(t *testing.T) {
	env := newSignedEnv(t)
	link := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo")[0]
	for _, tt := range []struct{ name, link, inner string }{
		{"criterionId over 1024 bytes", setParam(link, "criterionId", strings.Repeat("a", 1025)), "criterionId"},
		{"criterionId not UTF-8", setParam(link, "criterionId", "\xff\xfe"), "criterionId"},
		{"empty criterionId", setParam(link, "criterionId", ""), "criterionId"},
		{"yk_tag over 64 characters", setParam(link, "yk_tag", strings.Repeat("a", 65)), "yk_tag"},
		{"yk_tag with markup", setParam(link, "yk_tag", "<script>"), "yk_tag"},
		{"criterionId twice", link + "&criterionId=other", "criterionId"},
	} {
		q := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "url": {"http://localhost/a"}}
		_, query, _ := strings.Cut(tt.link, "?")
		q.Add("ad", query)
		res := env.do(t, "/v1/impression?"+q.Encode(), "198.51.100.7", browserUA)
		body := readBody(t, res)
		var e struct {
			Error struct{ Param, Message string }
		}
		json.Unmarshal(body, &e)
		if res.StatusCode != http.StatusBadRequest || e.Error.Param != "ad" || !strings.Contains(e.Error.Message, tt.inner) {
			t.Errorf("%s: %d %+v, want 400 on ad naming %s", tt.name, res.StatusCode, e.Error, tt.inner)
		}
	}
	if n := len(env.impressions(t)); n != 0 {
		t.Errorf("garbage counted %d impressions", n)
	}
}

// A link the server signed records its criterion as the server wrote it,
// in its impression and its click; the same link as the page makes it
// records the criterion as its ad's criteria spell it, while its click
// token still verifies against its own spelling.
func TestCriterionRecordedAsItsLinkIsProven(t *testing.T) {
	env := newSignedEnv(t)
	const query = "q=LG+Handys&loc=de&api_key=demo&site_id=demo"
	ofAd := func(links []string) string {
		for _, l := range links {
			if queryOf(t, l).Get("adId") == "handy-bestkauf.de" {
				return l
			}
		}
		t.Fatal("no link of handy-bestkauf.de")
		return ""
	}
	signed, page := ofAd(env.links(t, query)), ofAd(env.inPageLinks(t, query))
	if got := queryOf(t, signed).Get("criterionId"); got != "LG Handys" {
		t.Fatalf("the signed link's criterion is %q, want the query's LG Handys", got)
	}
	page = setParam(page, "criterionId", "lg-HANDYS")
	for _, tt := range []struct {
		name, link, ip, want string
	}{
		{"signed", signed, "198.51.100.21", "LG Handys"},
		{"page-made", page, "198.51.100.22", "lg handy"},
	} {
		ip := tt.ip
		status, ct := env.beacon(t, ip, browserUA, tt.link)
		if status != http.StatusOK || ct[0] == "" {
			t.Fatalf("%s: beacon %d %q", tt.name, status, ct)
		}
		imps := env.impressions(t)
		if last := imps[len(imps)-1]; last.IP != ip || last.Criterion != tt.want {
			t.Errorf("%s: impression of %s with criterion %q, want %q", tt.name, last.IP, last.Criterion, tt.want)
		}
		env.advance(time.Second)
		if c := env.click(t, tt.link+"&ct="+url.QueryEscape(ct[0]), ip, browserUA); !c.Billable || c.Criterion != tt.want {
			t.Errorf("%s: click billable %v (%q) with criterion %q, want billable, %q", tt.name, c.Billable, c.Reason, c.Criterion, tt.want)
		}
	}
	// The page-made link's token is for its own spelling: another spelling
	// of the same criterion is another link, whose click it does not prove.
	_, ct := env.beacon(t, "198.51.100.23", browserUA, page)
	env.advance(time.Second)
	other := setParam(page, "criterionId", "LG Handys")
	if c := env.click(t, other+"&ct="+url.QueryEscape(ct[0]), "198.51.100.23", browserUA); c.Billable || c.Reason != clicks.ReasonForged || c.Criterion != "" {
		t.Errorf("another spelling with the token: billable %v %q, criterion %q; want forged, none", c.Billable, c.Reason, c.Criterion)
	}
}

// A link the page made from a looser search match (ctx.dist=low or none,
// as adlink.search may ask) names the words that matched, which may be
// no criterion of its ad: with all of them in the ad's text, it gets a
// token, and its impression and click record no criterion; with a word
// the ad's text lacks, nothing.
func TestLooseMatchLinkRecordsNoCriterion(t *testing.T) {
	env := newSignedEnv(t)
	var link string
	for _, l := range env.inPageLinks(t, "q=Handyladen&ctx.dist=none&loc=de&api_key=demo&site_id=demo") {
		if q := queryOf(t, l); q.Get("adId") == "handyladen.de" {
			link = l
		}
	}
	if link == "" || queryOf(t, link).Get("criterionId") != "Handyladen" {
		t.Fatalf("the page's full-text link of handyladen.de: %q, want criterionId Handyladen", link)
	}
	status, ct := env.beacon(t, "198.51.100.31", browserUA, link, setParam(link, "criterionId", "Handyladen zzzqx"))
	if status != http.StatusOK || ct[0] == "" || ct[1] != "" {
		t.Fatalf("beacon of a full-text link and of one with a word its ad lacks: %d %q, want a token, then none", status, ct)
	}
	imps := env.impressions(t)
	if last := imps[len(imps)-1]; last.IP != "198.51.100.31" || last.Criterion != "" {
		t.Errorf("impression of %s with criterion %q, want none", last.IP, last.Criterion)
	}
	env.advance(time.Second)
	if c := env.click(t, link+"&ct="+url.QueryEscape(ct[0]), "198.51.100.31", browserUA); !c.Billable || c.Criterion != "" {
		t.Errorf("click billable %v (%q) with criterion %q, want billable under none", c.Billable, c.Reason, c.Criterion)
	}
}

// A page-made link's click whose ad the catalog removed since its
// impression, its link still landing, bills under no criterion: the
// catalog no longer has the ad's criteria to spell it by. An ad still
// there records its criterion as its criteria spell it.
func TestPageCriterionOfARemovedAd(t *testing.T) {
	const gone = "handy-bestkauf.de"
	var kept []match.Ad
	for _, a := range fixture() {
		if a.ID != gone {
			kept = append(kept, a)
		}
	}
	before, after := catalogVersion(t, "v1", fixture()), catalogVersion(t, "v2", kept)
	after.Removed = map[string]Removed{gone: {Ad: fixtureAd(t, gone), Until: testClock.Add(time.Hour)}}
	var cur atomic.Pointer[Catalog]
	cur.Store(before)
	env := &signedEnv{keys: testKeysFor(t), now: testClock, imps: testImpressions(t, t.TempDir())}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst, cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9, 1e9, 1e9
	env.handler = NewServer(Deps{Config: cfg, Catalog: cur.Load, Partners: testPartners(t), ClickKeys: env.keys,
		Windows: testWindows(t, t.TempDir()), Decisions: testDecisions(t, t.TempDir()), Impressions: env.imps,
		Clicks: &clickRecorder{AppendFn: func(_ context.Context, c clicks.Click) error {
			env.mu.Lock()
			defer env.mu.Unlock()
			env.clicks = append(env.clicks, c)
			return nil
		}},
		Now: func() time.Time {
			env.mu.Lock()
			defer env.mu.Unlock()
			return env.now
		}})
	links := map[string]string{}
	for _, l := range env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo") {
		links[queryOf(t, l).Get("adId")] = l
	}
	if links[gone] == "" || links["handyladen.de"] == "" {
		t.Fatalf("page-made links %q, want %s and handyladen.de", links, gone)
	}
	removed, stays := setParam(links[gone], "criterionId", "LG-HANDYS"), setParam(links["handyladen.de"], "criterionId", "HANDYS")
	const reader = "198.51.100.30"
	status, ct := env.beacon(t, reader, browserUA, removed, stays)
	if status != http.StatusOK || ct[0] == "" || ct[1] == "" {
		t.Fatalf("beacon: %d %q", status, ct)
	}
	cur.Store(after)
	env.advance(time.Second)
	if c := env.click(t, removed+"&ct="+url.QueryEscape(ct[0]), reader, browserUA); !c.Billable || c.Criterion != "" {
		t.Errorf("the removed ad's click: billable %v (%q), criterion %q; want billable, none", c.Billable, c.Reason, c.Criterion)
	}
	if c := env.click(t, stays+"&ct="+url.QueryEscape(ct[1]), reader, browserUA); !c.Billable || c.Criterion != "handy" {
		t.Errorf("the kept ad's click: billable %v (%q), criterion %q; want billable, handy", c.Billable, c.Reason, c.Criterion)
	}
}

// beaconAged reports links as seen on a demo page from ip, sent again
// age (milliseconds, none when "") after a first try, and returns the
// answer's status and error.
func (env *signedEnv) beaconAged(t testing.TB, ip, age string, links ...string) (int, errorResponse) {
	t.Helper()
	q := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "url": {"http://localhost/a"}}
	if age != "" {
		q.Set("age", age)
	}
	for _, l := range links {
		_, query, _ := strings.Cut(l, "?")
		q.Add("ad", query)
	}
	res := env.do(t, "/v1/impression?"+q.Encode(), ip, browserUA)
	var e errorResponse
	if body := readBody(t, res); res.StatusCode != http.StatusOK {
		json.Unmarshal(body, &e)
	}
	return res.StatusCode, e
}

// TestImpressionRetryCountsInItsWindow: a beacon the server counted a
// minute before its window's end, whose answer the page never had, sent
// again two minutes later with its age counts no second impression; one
// without counts in the new window. A client sending every age it likes
// counts an ad twice at most: in this window and the one before.
func TestImpressionRetryCountsInItsWindow(t *testing.T) {
	env := newSignedEnv(t)
	links := env.inPageLinks(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20")
	if len(links) == 0 {
		t.Fatal("no ads")
	}
	link := links[:1]
	const reader = "198.51.100.7"
	env.advance(config.Default().ImpressionWindow - time.Minute)
	if status, _ := env.beaconAged(t, reader, "", link...); status != http.StatusOK {
		t.Fatalf("first beacon: %d", status)
	}
	env.advance(2 * time.Minute)
	if status, _ := env.beaconAged(t, reader, "120000", link...); status != http.StatusOK {
		t.Fatalf("the retry: %d", status)
	}
	if n := len(env.impressions(t)); n != 1 {
		t.Errorf("a beacon and its retry, across a window's end: %d impressions, want 1", n)
	}
	if env.beaconAged(t, reader, "", link...); len(env.impressions(t)) != 2 {
		t.Errorf("a beacon without age in the next window: %d impressions, want 2", len(env.impressions(t)))
	}
	const script = "203.0.113.9"
	for _, age := range []string{"0", "60000", "1740000", "1800000", "1860000", "3600000", "36000000", "172800000", "9223372036854775807", "99999999999999999999999"} {
		if status, e := env.beaconAged(t, script, age, link...); status != http.StatusOK {
			t.Fatalf("age=%s: %d %+v", age, status, e)
		}
	}
	n := 0
	for _, i := range env.impressions(t) {
		if i.IP == script {
			n++
		}
	}
	if n != 2 {
		t.Errorf("one ad with every age: %d impressions, want 2 (this window and the one before)", n)
	}
	for _, age := range []string{"-1", "1.5", "soon"} {
		if status, e := env.beaconAged(t, script, age, link...); status != http.StatusBadRequest || e.Error.Param != "age" {
			t.Errorf("age=%s: %d %+v, want a 400 naming age", age, status, e)
		}
	}
}
