package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
)

// forwarded sends GET target to the server at base, from the loopback
// proxy that the default config trusts, for the client at ip.
func forwarded(t *testing.T, client *http.Client, base, target, ip string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", ip)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res, readBody(t, res)
}

// limitOf is the limit a 429's body names.
func limitOf(t *testing.T, body []byte) (param, limit string) {
	t.Helper()
	var e errorResponse
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if e.Error.Limit == "" {
		t.Errorf("%s names no limit", body)
	}
	return e.Error.Param, e.Error.Limit
}

// keyPrefixServer serves the fixture over loopback with a key's burst of
// 20 that does not refill while a test runs, a network's share of 0.2 (4)
// and so a prefix's of 0.4 (8).
func keyPrefixServer(t *testing.T) (base string, client *http.Client) {
	t.Helper()
	env := limitedEnv(t, func(c *config.Config) { c.KeyBurst, c.KeyNetworkShare = 20, 0.2 })
	ts := httptest.NewServer(env.handler)
	t.Cleanup(ts.Close)
	client = ts.Client()
	t.Cleanup(client.CloseIdleConnections)
	return ts.URL, client
}

// TestRateLimitKeySharedPerPrefix: one holder of an IPv6 /48 or an IPv4
// /24, rotating through its networks, takes only its prefix's share of
// the api_key's budget, and a reader elsewhere is still served.
func TestRateLimitKeySharedPerPrefix(t *testing.T) {
	const target = "/v2/search/link?q=handy&api_key=demo&site_id=demo"
	for _, tt := range []struct {
		name    string
		network func(i int) string // the attacker's i-th address, each on a network of its own
	}{
		{"IPv6 /48", func(i int) string { return fmt.Sprintf("2001:db8:aa:%x::1", i) }},
		{"IPv4 /24", func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, client := keyPrefixServer(t)
			allowed := 0
			for i := range 200 {
				res, body := forwarded(t, client, base, target, tt.network(i+1))
				switch res.StatusCode {
				case http.StatusOK:
					allowed++
					// Each request is its network's first: the prefix's
					// bucket binds once it has fewer tokens left.
					if limit := res.Header.Get("X-RateLimit-Limit"); allowed > 5 && (limit != "8" ||
						res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(8-allowed)) {
						t.Errorf("request %d: X-RateLimit-Limit %q Remaining %q, want the prefix's 8 and %d",
							i, limit, res.Header.Get("X-RateLimit-Remaining"), 8-allowed)
					}
				case http.StatusTooManyRequests:
					if param, limit := limitOf(t, body); param != "api_key" || limit != "api_key_prefix" {
						t.Fatalf("request %d refused by %q on %q, want api_key_prefix on api_key: %s", i, limit, param, body)
					}
					if res.Header.Get("X-RateLimit-Limit") != "8" || res.Header.Get("Retry-After") == "" {
						t.Errorf("request %d: X-RateLimit-Limit %q Retry-After %q, want the prefix's 8 and a Retry-After",
							i, res.Header.Get("X-RateLimit-Limit"), res.Header.Get("Retry-After"))
					}
				default:
					t.Fatalf("request %d: %s %s", i, res.Status, body)
				}
			}
			if allowed != 8 {
				t.Errorf("one prefix rotating its networks was served %d times, want its share of 8", allowed)
			}
			// The rest of the key's budget is the other prefixes': a
			// reader of each of 12 others is served.
			for i := range 12 {
				if res, body := forwarded(t, client, base, target, fmt.Sprintf("192.0.%d.10", i)); res.StatusCode != http.StatusOK {
					t.Fatalf("a reader of another prefix, %d, after the flood: %s %s", i, res.Status, body)
				}
			}
			res, body := forwarded(t, client, base, target, "203.0.113.77")
			if res.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("past the key's budget: %s", res.Status)
			}
			if param, limit := limitOf(t, body); param != "api_key" || limit != "api_key" {
				t.Errorf("past the key's budget: refused by %q on %q, want api_key", limit, param)
			}
		})
	}
}

// TestRateLimitKeyManyPrefixes: readers on networks of many prefixes,
// each within its own share, spend the key's whole budget as before the
// prefix's share, and the headers report the key's bucket once it binds.
func TestRateLimitKeyManyPrefixes(t *testing.T) {
	const target = "/v2/search/link?q=handy&api_key=demo&site_id=demo"
	base, client := keyPrefixServer(t)
	for i := range 20 {
		res, body := forwarded(t, client, base, target, fmt.Sprintf("2001:db8:%x::1", i+1))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("reader %d: %s %s", i, res.Status, body)
		}
		if i >= 17 && (res.Header.Get("X-RateLimit-Limit") != "20" || res.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(19-i)) {
			t.Errorf("reader %d: X-RateLimit-Limit %q Remaining %q, want the key's 20 and %d",
				i, res.Header.Get("X-RateLimit-Limit"), res.Header.Get("X-RateLimit-Remaining"), 19-i)
		}
	}
	res, body := forwarded(t, client, base, target, "2001:db8:ff::1")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("past the key's budget: %s", res.Status)
	}
	if _, limit := limitOf(t, body); limit != "api_key" {
		t.Errorf("past the key's budget: refused by %q, want api_key", limit)
	}
}

// TestRateLimitPagesSharedPerPrefix: one holder of a /48 or a /24 queueing
// junk pages from each of its networks takes only its prefix's share of
// the site's page budget, and a reader elsewhere still queues a real new
// page.
func TestRateLimitPagesSharedPerPrefix(t *testing.T) {
	for _, tt := range []struct {
		name    string
		network func(i int) string
	}{
		{"IPv6 /48", func(i int) string { return fmt.Sprintf("2001:db8:bb:%x::1", i) }},
		{"IPv4 /24", func(i int) string { return fmt.Sprintf("198.51.100.%d", i) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pe := newPageEnv(t, 0, pages.FetchOptions{AllowPrivate: true})
			cfg := config.Default()
			cfg.RedirectURL = "https://r.example"
			cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9
			cfg.PageRate, cfg.PageBurst, cfg.PageNetworkShare = 0.001, 20, 0.2
			ts := httptest.NewServer(NewServer(Deps{Config: cfg, Indexes: pe.indexes, Partners: testPartners(t), Clicks: &clickRecorder{}, Pages: pe.svc}))
			t.Cleanup(ts.Close)
			client := ts.Client()
			t.Cleanup(client.CloseIdleConnections)

			accepted := 0
			for i := range 100 {
				junk := pe.base + "/junk/" + strconv.Itoa(i)
				res, body := forwarded(t, client, ts.URL, pageQuery(junk), tt.network(i+1))
				switch res.StatusCode {
				case http.StatusAccepted:
					accepted++
				case http.StatusTooManyRequests:
					if param, limit := limitOf(t, body); param != "site_id" || limit != "site_prefix" {
						t.Fatalf("junk page %d refused by %q on %q, want site_prefix on site_id", i, limit, param)
					}
					if q, _ := pe.q.Queued(t.Context(), junk); q {
						t.Errorf("the refused junk page %d was queued", i)
					}
				default:
					t.Fatalf("junk page %d: %s %s", i, res.Status, body)
				}
			}
			if accepted != 8 {
				t.Errorf("one prefix queued %d junk pages, want its share of 8", accepted)
			}
			res, body := forwarded(t, client, ts.URL, pageQuery(pe.base+"/review"), "192.0.2.44")
			if res.StatusCode != http.StatusAccepted {
				t.Fatalf("a real new page from another prefix: %s %s", res.Status, body)
			}
			if q, _ := pe.q.Queued(t.Context(), pe.base+"/review"); !q {
				t.Error("the real page was not queued")
			}
		})
	}
}
