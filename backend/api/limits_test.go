package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/partners"
)

// limitedEnv serves the fixture under tight limits that do not refill
// while a test runs (one token per 1000 s).
func limitedEnv(t *testing.T, set func(*config.Config)) *testEnv {
	t.Helper()
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.KeyRate, cfg.KeyBurst = 0.001, 5
	cfg.IPRate, cfg.IPBurst = 0.001, 3
	cfg.PageRate, cfg.PageBurst = 0.001, 2
	// The whole of a key's and a site's budget, for one client; the shares
	// per network have tests of their own.
	cfg.KeyNetworkShare, cfg.PageNetworkShare = 1, 1
	if set != nil {
		set(&cfg)
	}
	reg, err := partners.NewStatic([]partners.Partner{
		partners.Demo(),
		{APIKey: "k2", Sites: []partners.Site{{ID: "blog", Domains: []string{"blog.example"}}}},
		{APIKey: "small", Sites: []partners.Site{{ID: "s", Domains: []string{"s.example"}}}, Limits: partners.Limits{Burst: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{indexes: ix}
	env.handler = NewServer(Deps{Config: cfg, Indexes: ix, Partners: reg,
		Clicks: &clickRecorder{AppendFn: func(context.Context, clicks.Click) error { return nil }}})
	return env
}

// checkLimited asserts a 429 with the rate-limit headers and the error
// body, as plain JSON or, with callback, inside JSONP: its param, the
// bucket that refused it and the wait as fields, the same wait as
// Retry-After, and a message that says neither.
func checkLimited(t *testing.T, res *http.Response, limit int, param, bucket, callback string) {
	t.Helper()
	body := readBody(t, res)
	h := res.Header
	ra, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Errorf("Retry-After %q, want whole seconds >= 1", h.Get("Retry-After"))
	}
	if h.Get("X-RateLimit-Limit") != strconv.Itoa(limit) || h.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("X-RateLimit-Limit %q Remaining %q, want %d and 0", h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), limit)
	}
	if reset, err := strconv.Atoi(h.Get("X-RateLimit-Reset")); err != nil || reset < 1 {
		t.Errorf("X-RateLimit-Reset %q, want whole seconds >= 1", h.Get("X-RateLimit-Reset"))
	}
	want := http.StatusTooManyRequests
	if callback != "" {
		want = http.StatusOK
		prefix := "/**/" + callback + "("
		if !bytes.HasPrefix(body, []byte(prefix)) || !bytes.HasSuffix(body, []byte(");")) {
			t.Fatalf("JSONP body %s", body)
		}
		body = body[len(prefix) : len(body)-2]
	}
	if res.StatusCode != want {
		t.Fatalf("status %d, want %d: %s", res.StatusCode, want, body)
	}
	var e errorResponse
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if e.Error.Code != CodeRateLimited || e.Error.Param != param || e.Error.Limit != bucket || e.Error.Message == "" {
		t.Errorf("error %+v, want %s on %q by limit %q", e.Error, CodeRateLimited, param, bucket)
	}
	if e.Error.RetryAfter != ra {
		t.Errorf("retry_after %d, want Retry-After's %d", e.Error.RetryAfter, ra)
	}
	if m := e.Error.Message; strings.Contains(m, "retry") || strings.Contains(m, "(limit") {
		t.Errorf("message %q says the wait or the limit, which the fields carry", m)
	}
	if callback != "" && e.HTTPStatus != http.StatusTooManyRequests {
		t.Errorf("http_status %d in JSONP, want 429", e.HTTPStatus)
	}
}

func TestRateLimitPerKey(t *testing.T) {
	env := limitedEnv(t, nil)
	search := func(key, site string, extra string) *http.Response {
		return env.get(t, "/v2/search/link?q=handy&api_key="+key+"&site_id="+site+extra, nil, "")
	}
	for i := range 5 {
		res := search("demo", "demo", "")
		readBody(t, res)
		if res.StatusCode != http.StatusOK || res.Header.Get("X-RateLimit-Limit") != "5" ||
			res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) {
			t.Fatalf("request %d: %s, limit %q remaining %q", i, res.Status,
				res.Header.Get("X-RateLimit-Limit"), res.Header.Get("X-RateLimit-Remaining"))
		}
	}
	checkLimited(t, search("demo", "demo", ""), 5, "api_key", "api_key_network", "")
	checkLimited(t, search("demo", "demo", "&callback=adlink.cb"), 5, "api_key", "api_key_network", "adlink.cb")
	// Every /v2 endpoint draws on the same key's budget.
	checkLimited(t, env.get(t, "/v2/shards?api_key=demo&site_id=demo", nil, ""), 5, "api_key", "api_key_network", "")
	checkLimited(t, env.get(t, pageQuery("http://localhost/x"), nil, ""), 5, "api_key", "api_key_network", "")

	// Another key is not affected.
	if res := search("k2", "blog", ""); res.StatusCode != http.StatusOK {
		t.Errorf("another key: %s", res.Status)
	}
	// A partner's own limit replaces the default.
	for range 2 {
		if res := search("small", "s", ""); res.StatusCode != http.StatusOK || res.Header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("partner with burst 2: %s, limit %q", res.Status, res.Header.Get("X-RateLimit-Limit"))
		}
	}
	checkLimited(t, search("small", "s", ""), 2, "api_key", "api_key_network", "")
	// An unknown key is refused for what it is, not limited.
	for range 10 {
		if res := search("nope", "demo", ""); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unknown key: %s", res.Status)
		}
	}
}

// The redirect's limit counts by client network; over it the visitor
// still lands (fraud_test.go checks what the click is recorded as).
func TestRateLimitPerClientIP(t *testing.T) {
	env := limitedEnv(t, nil)
	const target = "/v1/redirect?type=search&adId=handy-bestkauf.de&adType=advertiser&api_key=demo&site_id=demo&criterionId=lg+handy"
	limited := func(res *http.Response) bool {
		t.Helper()
		readBody(t, res)
		if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "https://handy-bestkauf.de/" || res.Header.Get("Retry-After") != "" {
			t.Fatalf("%d Location %q Retry-After %q, want a 302 to the landing URL", res.StatusCode, res.Header.Get("Location"), res.Header.Get("Retry-After"))
		}
		return res.Header.Get("X-RateLimit-Remaining") == "0" && res.Header.Get("X-RateLimit-Limit") == "3"
	}
	for i := range 2 {
		if limited(env.get(t, target, nil, "")) {
			t.Fatalf("click %d is over the limit", i)
		}
	}
	limited(env.get(t, target, nil, "")) // the last of the burst
	if !limited(env.get(t, target, nil, "")) {
		t.Error("the fourth click is not over the limit")
	}
	if limited(env.get(t, target, nil, "198.51.100.7:5000")) {
		t.Errorf("another client is over the limit")
	}
	// Behind a trusted proxy each forwarded client has its own budget.
	for i := range 3 {
		if limited(env.get(t, target, header("X-Forwarded-For", "192.0.2."+strconv.Itoa(i+1)), "127.0.0.1:9000")) {
			t.Errorf("forwarded client %d is over the limit", i)
		}
	}
	// An IPv6 client counts by its /64: rotating the low bits or the zone
	// gains nothing.
	for i := range 3 {
		if limited(env.get(t, target, nil, "[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:5000")) && i < 2 {
			t.Fatalf("IPv6 click %d is over the limit", i)
		}
	}
	if !limited(env.get(t, target, nil, "[2001:db8:1:2::ff]:5000")) {
		t.Error("another address of the /64 is not over the limit")
	}
	if !limited(env.get(t, target, header("X-Forwarded-For", "2001:db8:1:2::fe%z1"), "127.0.0.1:9000")) {
		t.Error("an address of the /64 with a zone is not over the limit")
	}
	// Over the limit, bad input is still refused.
	if res := env.get(t, strings.Replace(target, "handy-bestkauf.de", "no-such-ad", 1), nil, ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown ad over the limit: %s", res.Status)
	}
}

func TestRateLimitPageEnqueuesPerSite(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.PageRate, cfg.PageBurst = 0.001, 2
	cfg.PageNetworkShare = 1
	pe.handler = NewServer(Deps{Config: cfg, Indexes: pe.indexes, Partners: testPartners(t), Clicks: &clickRecorder{}, Pages: pe.svc})

	for _, p := range []string{"/a", "/b"} {
		if res := pe.get(t, pageQuery(pe.base+p), nil, ""); res.StatusCode != http.StatusAccepted {
			t.Fatalf("page %s: %s", p, res.Status)
		}
	}
	checkLimited(t, pe.get(t, pageQuery(pe.base+"/c"), nil, ""), 2, "site_id", "site_network", "")
	// Polling a queued page takes nothing from the budget.
	if res := pe.get(t, pageQuery(pe.base+"/a"), nil, ""); res.StatusCode != http.StatusAccepted {
		t.Errorf("polling a queued page: %s", res.Status)
	}
	// Another site has its own budget.
	if res := pe.get(t, "/v2/page/link?url=http://blog.example/x&api_key=k2&site_id=blog", nil, ""); res.StatusCode != http.StatusAccepted {
		t.Errorf("another site: %s", res.Status)
	}
	if q, _ := pe.q.Queued(t.Context(), pe.base+"/c"); q {
		t.Error("the refused page was queued")
	}
}

// TestRateLimitKeySharedPerNetwork: the api_key is public, so one client
// at many times the key's rate takes only its network's share of the
// key's budget; another network is still served. An IPv6 client gains
// nothing by rotating the low bits of its address, and the key's whole
// budget still bounds all networks together.
func TestRateLimitKeySharedPerNetwork(t *testing.T) {
	env := limitedEnv(t, func(c *config.Config) { c.KeyBurst, c.KeyNetworkShare = 10, 0.3 })
	const target = "/v2/search/link?q=handy&api_key=demo&site_id=demo"
	const attacker = "198.51.100.7:5000"
	for i := range 3 {
		res := env.get(t, target, nil, attacker)
		readBody(t, res)
		if res.StatusCode != http.StatusOK || res.Header.Get("X-RateLimit-Limit") != "3" ||
			res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("request %d: %s, limit %q remaining %q", i, res.Status,
				res.Header.Get("X-RateLimit-Limit"), res.Header.Get("X-RateLimit-Remaining"))
		}
	}
	for range 100 {
		readBody(t, env.get(t, target, nil, attacker))
	}
	checkLimited(t, env.get(t, target, nil, attacker), 3, "api_key", "api_key_network", "")
	checkLimited(t, env.get(t, target+"&callback=cb", nil, attacker), 3, "api_key", "api_key_network", "cb")
	// A reader on another network is served: the attacker's refused
	// requests took nothing from the key.
	res := env.get(t, target, nil, "192.0.2.44:6000")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("another network after a flood: %s %s", res.Status, readBody(t, res))
	}
	// One IPv6 /64 is one network, however its addresses rotate.
	for i := range 20 {
		res := env.get(t, target, nil, "[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:5000")
		readBody(t, res)
		want := http.StatusOK
		if i >= 3 {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Fatalf("IPv6 request %d: %s, want %d", i, res.Status, want)
		}
	}
	// Behind a trusted proxy the forwarded client's network counts.
	fwd := env.get(t, target, header("X-Forwarded-For", "192.0.2.45"), "127.0.0.1:9000")
	if fwd.StatusCode != http.StatusOK {
		t.Fatalf("a forwarded client: %s", fwd.Status)
	}
	// 3 + 1 + 3 + 1 of the key's 10 are spent: two more networks get one
	// each, then the key's whole budget refuses every network.
	for _, ip := range []string{"192.0.2.46", "192.0.2.47"} {
		if res := env.get(t, target, nil, ip+":1"); res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", ip, res.Status)
		}
	}
	checkLimited(t, env.get(t, target, nil, "192.0.2.48:1"), 10, "api_key", "api_key", "")
}

// TestRateLimitPagesSharedPerNetwork: one client queueing many junk pages
// takes only its network's share of the site's page budget; a reader on
// another network can still queue a real new page.
func TestRateLimitPagesSharedPerNetwork(t *testing.T) {
	pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9
	cfg.PageRate, cfg.PageBurst, cfg.PageNetworkShare = 0.001, 10, 0.2
	pe.handler = NewServer(Deps{Config: cfg, Indexes: pe.indexes, Partners: testPartners(t), Clicks: &clickRecorder{}, Pages: pe.svc})

	const attacker = "198.51.100.7:5000"
	for i := range 30 {
		res := pe.get(t, pageQuery(pe.base+"/junk/"+strconv.Itoa(i)+"?r="+strconv.Itoa(i)), nil, attacker)
		readBody(t, res)
		want := http.StatusAccepted
		if i >= 2 {
			want = http.StatusTooManyRequests
		}
		if res.StatusCode != want {
			t.Fatalf("junk page %d: %s, want %d", i, res.Status, want)
		}
	}
	checkLimited(t, pe.get(t, pageQuery(pe.base+"/junk/x"), nil, attacker), 2, "site_id", "site_network", "")
	if res := pe.get(t, pageQuery(pe.base+"/review"), nil, "192.0.2.44:6000"); res.StatusCode != http.StatusAccepted {
		t.Fatalf("a real new page from another network: %s %s", res.Status, readBody(t, res))
	}
	if q, _ := pe.q.Queued(t.Context(), pe.base+"/review"); !q {
		t.Error("the real page was not queued")
	}
}

func TestCORSPreflightAndMethods(t *testing.T) {
	env := newEnv(t, fixture())
	req := httptest.NewRequest(http.MethodOptions, "/v2/search/link?q=x", nil)
	req.Header.Set("Origin", "https://pub.example")
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "x-request-id")
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	res := rec.Result()
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Methods"), "GET") {
		t.Errorf("preflight: %s %v", res.Status, res.Header)
	}
	for _, tt := range []struct{ method, path, allow string }{
		{http.MethodOptions, "/healthz", "GET, HEAD"},
		{http.MethodPut, "/v2/page/link", "GET, HEAD, OPTIONS"},
		{http.MethodPost, "/v1/redirect", "GET, HEAD"},
	} {
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		res := rec.Result()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != tt.allow ||
			res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %s Allow %q", tt.method, tt.path, res.Status, res.Header.Get("Allow"))
		}
	}
	res = env.get(t, "/v2/search/link?q=handy&api_key=demo&site_id=demo", nil, "")
	if !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("Access-Control-Expose-Headers %q", res.Header.Get("Access-Control-Expose-Headers"))
	}
}
