package api

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/shards"
)

// browserUA is a user agent that is no bot.
const browserUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

// signedEnv is a server that signs its click URLs and hands out site
// tokens, with a clock the test moves and limits that never refuse.
type signedEnv struct {
	handler http.Handler
	keys    *clicks.Keys
	metrics *metrics.Metrics
	imps    clicks.Impressions

	mu     sync.Mutex
	now    time.Time
	clicks []clicks.Click
}

// testKeysFor are the click keys of the signed test servers.
func testKeysFor(t testing.TB) *clicks.Keys {
	t.Helper()
	secret := sha256.Sum256([]byte("api test key"))
	keys, err := clicks.NewKeys(clicks.Key{ID: "t1", Secret: secret[:]})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func newSignedEnv(t testing.TB) *signedEnv {
	t.Helper()
	return newSignedEnvWith(t, nil, testWindows(t, t.TempDir()))
}

// newSignedEnvWith is newSignedEnvStores with Decisions of their own.
func newSignedEnvWith(t testing.TB, configure func(*config.Config), windows clicks.Windows) *signedEnv {
	t.Helper()
	return newSignedEnvStores(t, configure, windows, testDecisions(t, t.TempDir()))
}

// newSignedEnvStores is newSignedEnv with the configuration configure
// changes and the given Windows and Decisions.
func newSignedEnvStores(t testing.TB, configure func(*config.Config), windows clicks.Windows, decisions clicks.Decisions) *signedEnv {
	t.Helper()
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	keys := testKeysFor(t)
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst, cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9, 1e9, 1e9
	if configure != nil {
		configure(&cfg)
	}
	set, err := shards.Build(ix, shards.Options{RedirectURL: cfg.RedirectURL})
	if err != nil {
		t.Fatal(err)
	}
	env := &signedEnv{keys: keys, metrics: metrics.New(), now: testClock, imps: testImpressions(t, t.TempDir())}
	env.handler = NewServer(Deps{
		Config: cfg, Indexes: ix, Partners: testPartners(t), ClickKeys: keys, Shards: set, Metrics: env.metrics,
		Windows: windows, Decisions: decisions, Impressions: env.imps,
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
		},
	})
	return env
}

func (env *signedEnv) advance(d time.Duration) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.now = env.now.Add(d)
}

// take returns the clicks recorded since the last take.
func (env *signedEnv) take() []clicks.Click {
	env.mu.Lock()
	defer env.mu.Unlock()
	c := env.clicks
	env.clicks = nil
	return c
}

// do serves a GET of target from client ip with user agent ua, with the
// headers of a person's navigation (clicks.Navigation).
func (env *signedEnv) do(t testing.TB, target, ip, ua string) *http.Response {
	t.Helper()
	h := http.Header{}
	clicks.Navigation.Header(h)
	return env.doWith(t, target, ip, ua, h)
}

// doWith serves a GET of target from client ip with user agent ua and
// the headers h alone.
func (env *signedEnv) doWith(t testing.TB, target, ip, ua string, h http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.RemoteAddr = net.JoinHostPort(ip, "40000")
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", ua)
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	return rec.Result()
}

// links searches and returns the answer's click URLs, path and query only.
func (env *signedEnv) links(t testing.TB, query string) []string {
	t.Helper()
	res := env.do(t, "/v2/search/link?"+query, "192.0.2.200", browserUA)
	body := readBody(t, res)
	var resp struct{ Link []link }
	if err := json.Unmarshal(body, &resp); err != nil || res.StatusCode != http.StatusOK || len(resp.Link) == 0 {
		t.Fatalf("search %s: %d %v\n%s", query, res.StatusCode, err, body)
	}
	var out []string
	for _, l := range resp.Link {
		out = append(out, strings.TrimPrefix(l.Ad, "https://r.example"))
	}
	return out
}

// click follows one click URL and returns the one click it recorded,
// failing unless it landed on the landing URL of the adId it names.
func (env *signedEnv) click(t testing.TB, target, ip, ua string) clicks.Click {
	t.Helper()
	res := env.do(t, target, ip, ua)
	body := readBody(t, res)
	u, _ := url.Parse(target)
	want := fixtureAdLanding(t, u.Query().Get("adId"))
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != want {
		t.Fatalf("%s: %d Location %q, want 302 %q\n%s", target, res.StatusCode, res.Header.Get("Location"), want, body)
	}
	got := env.take()
	if len(got) != 1 {
		t.Fatalf("%s: %d clicks recorded", target, len(got))
	}
	return got[0]
}

func fixtureAdLanding(t testing.TB, id string) string {
	for _, a := range fixture() {
		if a.ID == id {
			return a.Landing
		}
	}
	t.Fatalf("no fixture ad %q", id)
	return ""
}

// setParam changes one parameter of a click URL in place, keeping the
// order and escaping of the rest; "-" removes it.
func setParam(target, name, value string) string {
	path, query, _ := strings.Cut(target, "?")
	var out []string
	found := false
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if k == name {
			found = true
			if value != "-" {
				out = append(out, k+"="+url.QueryEscape(value))
			}
			continue
		}
		out = append(out, kv)
	}
	if !found && value != "-" {
		out = append(out, name+"="+url.QueryEscape(value))
	}
	return path + "?" + strings.Join(out, "&")
}

func TestSignedClickIsBillable(t *testing.T) {
	env := newSignedEnv(t)
	links := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag=c:1")
	for _, l := range links {
		u, _ := url.Parse(l)
		q := u.Query()
		if q.Get("exp") != "1795435200" || !strings.HasPrefix(q.Get("sig"), "t1.") || q.Get("yk_tag") != "c:1" {
			t.Fatalf("link %s: exp %s sig %s", l, q.Get("exp"), q.Get("sig"))
		}
	}
	for i, l := range links {
		c := env.click(t, l, "198.51.100."+strconv.Itoa(i+1), browserUA)
		if !c.Billable || c.Reason != "" || c.YkTag != "c:1" {
			t.Errorf("%s: billable %v reason %q", l, c.Billable, c.Reason)
		}
	}
	// Page context links are signed too, and /v2/shards hands out a token.
	res := env.do(t, "/v2/shards?api_key=demo&site_id=demo&loc=de&lang=de", "192.0.2.200", browserUA)
	var m struct{ Tok string }
	if err := json.Unmarshal(readBody(t, res), &m); err != nil || !strings.HasPrefix(m.Tok, "t1.1795352400.") {
		t.Errorf("manifest tok %q: %v", m.Tok, err)
	}
}

// A click URL changed in any signed parameter, expired or unsigned still
// lands on the catalog's landing URL of the adId it names, but is not
// billable.
func TestForgedClicksAreNotBillable(t *testing.T) {
	env := newSignedEnv(t)
	demo := env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo")[0]
	blog := env.links(t, "q=handy&loc=de&api_key=k2&site_id=blog&yk_tag=t1")[0]
	tests := []struct {
		name, target, reason string
		later                time.Duration
	}{
		{"adId changed to another ad", setParam(demo, "adId", "EBAY.4.291181826279"), clicks.ReasonForged, 0},
		{"adType changed", setParam(setParam(demo, "adId", "AMAZON.1.B00JVL2X1I"), "adType", "advertiser"), clicks.ReasonForged, 0},
		{"criterionId changed", setParam(demo, "criterionId", "smartphone"), clicks.ReasonForged, 0},
		{"type changed", setParam(demo, "type", "intext"), clicks.ReasonForged, 0},
		{"site_id changed to the key's other site", setParam(blog, "site_id", "shop"), clicks.ReasonForged, 0},
		{"site_id changed to a foreign site", setParam(demo, "site_id", "blog"), clicks.ReasonForged, 0},
		{"api_key changed to an unknown one", setParam(demo, "api_key", "nope"), clicks.ReasonForged, 0},
		{"yk_tag changed", setParam(blog, "yk_tag", "t2"), clicks.ReasonForged, 0},
		{"yk_tag added", setParam(demo, "yk_tag", "mine"), clicks.ReasonForged, 0},
		{"exp moved", setParam(demo, "exp", "1895435200"), clicks.ReasonForged, 0},
		{"sig garbled", setParam(demo, "sig", "t1.AAAA"), clicks.ReasonForged, 0},
		{"sig of an unknown key", setParam(demo, "sig", "zz"+strings.SplitN(demo, "sig=t1", 2)[1]), clicks.ReasonForged, 0},
		{"unsigned", setParam(setParam(demo, "sig", "-"), "exp", "-"), clicks.ReasonUnsigned, 0},
		{"expired", demo, clicks.ReasonExpired, 24 * time.Hour},
		{"valid, a day less a second later", demo, "", 24*time.Hour - time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.mu.Lock()
			env.now = testClock.Add(tt.later)
			env.mu.Unlock()
			c := env.click(t, tt.target, "203.0.113."+strconv.Itoa(i+1), browserUA)
			if c.Billable != (tt.reason == "") || c.Reason != tt.reason {
				t.Errorf("billable %v reason %q, want %q", c.Billable, c.Reason, tt.reason)
			}
		})
	}
}

// A click the page made carries the manifest's token instead of a sig:
// recorded, unverified, never billed, as the token proves no ad was shown
// (any caller gets it from /v2/shards).
func TestTokenClicks(t *testing.T) {
	env := newSignedEnv(t)
	token := func(key, site string) string {
		res := env.do(t, "/v2/shards?api_key="+key+"&site_id="+site, "192.0.2.200", browserUA)
		var m struct{ Tok string }
		if err := json.Unmarshal(readBody(t, res), &m); err != nil || m.Tok == "" {
			t.Fatalf("manifest for %s/%s: %d %v", key, site, res.StatusCode, err)
		}
		return m.Tok
	}
	demoTok, blogTok := token("demo", "demo"), token("k2", "blog")
	// What the page makes: the server's query without exp and sig, plus tok.
	page := setParam(setParam(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo")[0], "sig", "-"), "exp", "-")
	page = strings.Replace(page, "type=search", "type=intext", 1)
	server := env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo")[0]
	emptied := setParam(setParam(server, "sig", ""), "exp", "") + "&tok=" + demoTok
	// An ad no answer showed, with a criterion nobody asked for.
	forged := clickQuery("type", "intext", "criterionId", "anything") + "&tok=" + demoTok
	tests := []struct {
		name, target, reason string
		later                time.Duration
	}{
		{"valid token", page + "&tok=" + demoTok, clicks.ReasonUnverified, 0},
		{"valid token, any ad", forged, clicks.ReasonUnverified, 0},
		{"server link, signature emptied, token added", emptied, clicks.ReasonUnverified, 0},
		{"another site's token", page + "&tok=" + blogTok, clicks.ReasonForged, 0},
		{"garbled token", page + "&tok=" + demoTok[:len(demoTok)-2] + "xx", clicks.ReasonForged, 0},
		{"token an hour old", page + "&tok=" + demoTok, clicks.ReasonExpired, time.Hour},
		{"token and a bad sig", page + "&tok=" + demoTok + "&sig=t1.x&exp=1", clicks.ReasonForged, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env.mu.Lock()
			env.now = testClock.Add(tt.later)
			env.mu.Unlock()
			c := env.click(t, tt.target, "203.0.113."+strconv.Itoa(i+100), browserUA)
			if c.Billable || c.Reason != tt.reason || (c.Type != "intext" && tt.target != emptied) {
				t.Errorf("billable %v reason %q type %s, want %q", c.Billable, c.Reason, c.Type, tt.reason)
			}
		})
	}
}

// Bots, and repeats of a network on an ad within a day, are not billable;
// the clock is the test's.
func TestBotAndRepeatClicks(t *testing.T) {
	env := newSignedEnv(t)
	l := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	// Another answer for the same ad: a decision of its own.
	l2 := env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")[0]
	steps := []struct {
		name, ip, ua string
		advance      time.Duration
		reason       string
	}{
		{"first click", "198.51.100.7", browserUA, 0, ""},
		{"same client 29 s later", "198.51.100.7", browserUA, 29 * time.Second, clicks.ReasonRepeat},
		{"another client, another answer", "198.51.100.8", browserUA, 0, ""},
		{"same client 31 s after its last", "198.51.100.7", browserUA, 31 * time.Second, clicks.ReasonRepeat},
		{"curl", "198.51.100.9", "curl/8.5.0", 0, clicks.ReasonBot},
		{"Googlebot", "198.51.100.10", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", 0, clicks.ReasonBot},
		{"headless browser", "198.51.100.11", "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/131.0 Safari/537.36", 0, clicks.ReasonBot},
		{"no user agent", "198.51.100.12", "", 0, clicks.ReasonBot},
		{"a bare Mozilla/5.0", "198.51.100.13", "Mozilla/5.0", 0, clicks.ReasonBot},
		{"x", "198.51.100.14", "x", 0, clicks.ReasonBot},
		{"WhatsApp's link preview", "198.51.100.15", "WhatsApp/2.23", 0, clicks.ReasonBot},
		{"ms-office", "198.51.100.16", "ms-office", 0, clicks.ReasonBot},
		{"a Cyrillic curl", "198.51.100.17", "\u0441url/8.0", 0, clicks.ReasonBot},
		{"a Barracuda scanner", "198.51.100.18", "Mozilla/5.0 (compatible; Barracuda Sentinel (EE))", 0, clicks.ReasonBot},
	}
	for _, s := range steps {
		env.advance(s.advance)
		target := l
		if s.ip == "198.51.100.8" {
			target = l2
		}
		c := env.click(t, target, s.ip, s.ua)
		if c.Billable != (s.reason == "") || c.Reason != s.reason {
			t.Errorf("%s: billable %v reason %q, want %q", s.name, c.Billable, c.Reason, s.reason)
		}
	}
	// /metrics counts them by billable and reason.
	body := scrape(t, env.metrics)
	for _, want := range []string{
		`adlink_clicks_total{billable="true",reason=""} 2`,
		`adlink_clicks_total{billable="false",reason="bot"} 10`,
		`adlink_clicks_total{billable="false",reason="repeat"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Without keys nothing is signed and no click is billable.
func TestNoKeysNoSignatures(t *testing.T) {
	env := newEnv(t, fixture())
	for _, l := range env.search(t, "q=lg+handy&loc=de", nil, "") {
		if l.click.Has("sig") || l.click.Has("exp") {
			t.Errorf("unsigned server signs: %s", l.Ad)
		}
	}
	res := env.get(t, clickQuery("sig", "t1.x", "exp", "1"), header("User-Agent", browserUA), "")
	if res.StatusCode != http.StatusFound || len(env.clicks) != 1 || env.clicks[0].Billable || env.clicks[0].Reason != clicks.ReasonUnsigned {
		t.Errorf("%d %+v", res.StatusCode, env.clicks)
	}
}

// Over thousands of random query strings built from the redirect's own
// parameter names, catalog ids, hostile URLs and garbage, every 302 goes to
// the catalog's landing URL of the adId given, every other answer has no
// Location, and only a click carrying a valid sig is billable.
func TestRedirectLocationProperty(t *testing.T) {
	env := newSignedEnv(t)
	signed := env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&yk_tag=p:1")
	landing := map[string]string{}
	var ids []string
	for _, a := range fixture() {
		landing[a.ID] = a.Landing
		ids = append(ids, a.ID)
	}
	names := []string{"type", "adId", "adType", "api_key", "site_id", "criterionId", "yk_tag", "exp", "sig", "tok",
		"url", "redirect", "landing", "Location", "next", "dest", "to", "u", "target", "continue", "return"}
	values := append(ids, "search", "intext", "advertiser", "product", "coupon", "demo", "k2", "blog", "handy",
		"https://evil.example/", "//evil.example", "javascript:alert(1)", "%0d%0aLocation:%20https://evil.example",
		"", "1795435200", "t1.AAAA", env.keys.Token("demo", "demo", testClock.Add(time.Hour)))
	rng := rand.New(rand.NewPCG(5, 11))
	lands, billable := 0, 0
	for i := range 3000 {
		var q string
		if i%3 == 0 {
			// A real signed link with one parameter changed or added.
			l := signed[rng.IntN(len(signed))]
			q = setParam(l, names[rng.IntN(len(names))], values[rng.IntN(len(values))])
			q = strings.TrimPrefix(q, "/v1/redirect?")
		} else {
			var parts []string
			for range 1 + rng.IntN(10) {
				parts = append(parts, url.QueryEscape(names[rng.IntN(len(names))])+"="+url.QueryEscape(values[rng.IntN(len(values))]))
			}
			q = strings.Join(parts, "&")
		}
		res := env.do(t, "/v1/redirect?"+q, "198.51.100."+strconv.Itoa(1+i%250), browserUA)
		readBody(t, res)
		got := env.take()
		loc := res.Header.Get("Location")
		v, _ := url.ParseQuery(q)
		switch {
		case res.StatusCode == http.StatusFound:
			lands++
			if loc == "" || loc != landing[v.Get("adId")] || len(got) != 1 {
				t.Fatalf("%s: Location %q, %d clicks; want %q", q, loc, len(got), landing[v.Get("adId")])
			}
			if got[0].Billable {
				billable++
				if !v.Has("sig") {
					t.Fatalf("%s: billable without sig", q)
				}
			}
		case loc != "" || len(got) != 0:
			t.Fatalf("%s: %d with Location %q and %d clicks", q, res.StatusCode, loc, len(got))
		}
	}
	t.Logf("3000 query strings: %d landed, %d billable", lands, billable)
	if lands == 0 || billable == 0 {
		t.Errorf("%d landed, %d billable: the generator reaches too little", lands, billable)
	}
}

// A click for a key that is no partner's lands and is recorded, with the
// key and site cut short: junk cannot fill the log.
func TestUnknownPartnerClickIsBounded(t *testing.T) {
	env := newSignedEnv(t)
	long := strings.Repeat("k", 10000)
	c := env.click(t, clickQuery("api_key", long, "site_id", long), "198.51.100.77", browserUA)
	if len(c.APIKey) > maxPartnerID || len(c.SiteID) > maxPartnerID || c.Billable || c.Reason != clicks.ReasonUnsigned {
		t.Errorf("recorded key of %d bytes, site of %d, billable %v reason %q", len(c.APIKey), len(c.SiteID), c.Billable, c.Reason)
	}
	// A link signed for a partner since removed: the partner reason.
	p := clicks.Params{Type: "search", AdID: "handyladen.de", AdType: "advertiser", APIKey: "gone", SiteID: "old", Criterion: "handy"}
	d := clicks.NewDecision()
	exp, sig := env.keys.Sign(&p, d, testClock.Add(time.Hour))
	c = env.click(t, "/v1/redirect?"+string(clicks.AppendQuery(nil, &p))+"&d="+d+"&exp="+exp+"&sig="+sig, "198.51.100.78", browserUA)
	if c.Billable || c.Reason != clicks.ReasonPartner {
		t.Errorf("removed partner: billable %v reason %q", c.Billable, c.Reason)
	}
}
