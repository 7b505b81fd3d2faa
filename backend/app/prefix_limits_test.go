package app

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/adlink/adlink/internal/testredis"
)

// TestRedisSharesThePrefixShareAcrossReplicas: two servers on one Redis
// hold together the share of an api_key's budget that one IPv6 /48 may
// take, however its requests rotate over its networks and the replicas;
// readers of other prefixes spend the rest of the key's budget.
func TestRedisSharesThePrefixShareAcrossReplicas(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	var replicas []*httptest.Server
	for range 2 {
		cfg := testConfig(t)
		cfg.RedisURL = srv.URL()
		// A burst of 20 for the key, 4 for a network, 8 for a prefix, and
		// no refill while the test runs.
		cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 0.001, 20, 0.2
		a, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		ts := httptest.NewServer(a.Handler)
		t.Cleanup(ts.Close)
		t.Cleanup(ts.Client().CloseIdleConnections)
		replicas = append(replicas, ts)
	}
	// search asks replica i for the client at ip, through the loopback
	// proxy the default config trusts.
	search := func(i int, ip string) (int, string) {
		t.Helper()
		ts := replicas[i%len(replicas)]
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
			ts.URL+"/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", ip)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(body)
	}
	served := 0
	for i := range 100 {
		switch code, body := search(i, fmt.Sprintf("2001:db8:aa:%x::1", i+1)); code {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			if !strings.Contains(body, `"limit":"api_key_prefix"`) {
				t.Fatalf("request %d refused, not by the prefix's share: %s", i, body)
			}
		default:
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if served != 8 {
		t.Errorf("one /48 over two replicas was served %d times, want its share of 8", served)
	}
	for i := range 12 {
		if code, body := search(i, fmt.Sprintf("2001:db8:%x::1", i+1)); code != http.StatusOK {
			t.Fatalf("a reader of another prefix, %d: %d %s", i, code, body)
		}
	}
	if code, body := search(0, "2001:db8:ff::1"); code != http.StatusTooManyRequests || !strings.Contains(body, `"limit":"api_key"`) {
		t.Errorf("past the key's budget: %d %s, want refused by the key's", code, body)
	}
}
