package catalog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http/httpproxy"

	"github.com/adlink/adlink/internal/testnet"
)

// forwardProxy is an HTTP forward proxy on loopback, as an operator runs
// for its egress: it forwards absolute-form requests, tunnels CONNECT,
// dials names as answers says, and notes each request it gets.
type forwardProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "GET http://host:port/path", "CONNECT host:port"
}

func newForwardProxy(t *testing.T, answers map[string]string) *forwardProxy {
	t.Helper()
	p := &forwardProxy{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && answers[host] != "" {
			addr = net.JoinHostPort(answers[host], port)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	upstream := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.RequestURI)
		p.mu.Unlock()
		if r.Method == http.MethodConnect {
			up, err := dial(r.Context(), "tcp", r.Host)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer up.Close()
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
			go func() {
				io.Copy(up, brw) // what the hijack buffered, then the rest
				up.Close()
			}()
			io.Copy(conn, up)
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Connection")
		res, err := upstream.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, vs := range res.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

// requests are the requests the proxy got, in order.
func (p *forwardProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// proxiedFetcher is a guarded feed fetcher whose requests go through p as
// HTTPS_PROXY and HTTP_PROXY would send them, but for the hosts noProxy
// names. (http.ProxyFromEnvironment, the default, reads the environment
// once per process, and never proxies a loopback host, as p is.)
func proxiedFetcher(p *forwardProxy, noProxy string, answers map[string]string) *Fetcher {
	pick := (&httpproxy.Config{HTTPProxy: p.URL, HTTPSProxy: p.URL, NoProxy: noProxy}).ProxyFunc()
	return NewFetcher(FetchOptions{resolve: testnet.Resolver(answers), guard: testnet.PublicStandIn(),
		Proxy: func(req *http.Request) (*url.URL, error) { return pick(req.URL) }})
}

// TestFetchFeedThroughProxy: with a proxy configured, a feed over http is
// asked of the proxy in absolute form and one over https through a
// CONNECT tunnel (its certificate checked end to end), the proxy on a
// loopback address the guard would refuse after a public one; a host
// NO_PROXY names is fetched directly.
func TestFetchFeedThroughProxy(t *testing.T) {
	shop, shopHits := feedServer(t, testnet.StandIn)
	direct, directHits := feedServer(t, testnet.StandIn)
	secure := testnet.ServeTLSOn(t, testnet.StandIn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, merchantRSS)
	}))
	answers := map[string]string{"shop.test": testnet.StandIn, "direct.test": testnet.StandIn,
		"feeds.example.com": testnet.StandIn}
	p := newForwardProxy(t, answers)
	f := proxiedFetcher(p, "direct.test", answers)
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	f.client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}

	plain := fmt.Sprintf("http://shop.test:%d/feed.xml", portOf(shop))
	tunnelled := fmt.Sprintf("feeds.example.com:%d", portOf(secure))
	for _, c := range []struct{ location, proxied string }{
		{plain, "GET " + plain},
		{"https://" + tunnelled + "/feed.xml", "CONNECT " + tunnelled},
		{fmt.Sprintf("http://direct.test:%d/feed.xml", portOf(direct)), ""},
	} {
		before := len(p.requests())
		src, err := ParseSource(c.location + "#format=xml")
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.Fetch(context.Background(), src, Options{})
		if err != nil || len(res.Ads) == 0 {
			t.Fatalf("%s: %d ads, %v", c.location, len(res.Ads), err)
		}
		got := p.requests()[before:]
		if c.proxied == "" && len(got) != 0 || c.proxied != "" && (len(got) != 1 || got[0] != c.proxied) {
			t.Errorf("%s: the proxy got %q, want %q", c.location, got, c.proxied)
		}
	}
	if shopHits.Load() != 1 || directHits.Load() != 1 {
		t.Errorf("the feed servers got %d and %d requests, want 1 each", shopHits.Load(), directHits.Load())
	}
}

// TestFetchFeedThroughProxyRedirectInward: a feed server reached through
// the proxy, whose address the fetcher cannot see, is taken for a public
// one: its redirect to a host NO_PROXY names, fetched directly, may not
// reach an address that is not public. The proxy's own connections pass.
func TestFetchFeedThroughProxyRedirectInward(t *testing.T) {
	shop, _ := feedServer(t, testnet.StandIn)
	inner, innerHits := feedServer(t, "127.0.0.1")
	answers := map[string]string{"shop.test": testnet.StandIn, "inner.test": "127.0.0.1"}
	p := newForwardProxy(t, answers)
	f := proxiedFetcher(p, "inner.test", answers)
	src, err := ParseSource(redirectTo(shop, "shop.test", fmt.Sprintf("http://inner.test:%d/feed.xml", portOf(inner))) + "#format=xml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Fetch(context.Background(), src, Options{})
	if !errors.Is(err, ErrRedirectRefused) || !strings.Contains(err.Error(), "address 127.0.0.1 refused after a request through the proxy "+strings.TrimPrefix(p.URL, "http://")) {
		t.Fatalf("Fetch = %v, want ErrRedirectRefused naming the proxy", err)
	}
	if n := innerHits.Load(); n != 0 {
		t.Fatalf("the internal server was reached %d times", n)
	}
	if got := p.requests(); len(got) != 1 {
		t.Errorf("the proxy got %q, want the feed's request alone", got)
	}
	// The operator's own internal feed, named and not proxied, is fetched
	// as before.
	own, err := ParseSource(fmt.Sprintf("http://inner.test:%d/feed.xml#format=xml", portOf(inner)))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.Fetch(context.Background(), own, Options{}); err != nil || len(res.Ads) == 0 {
		t.Fatalf("the operator's internal feed: %d ads, %v", len(res.Ads), err)
	}
}

// TestFetchFeedThroughProxyRedirectToTheProxy: a feed server's redirect
// to the proxy's own address, which the fetch then dials directly (a
// loopback proxy, never proxied, or a proxy NO_PROXY names), is a
// connection to an internal address like any other: refused, the proxy
// getting the feed's request alone, never one in origin form for its own
// pages.
func TestFetchFeedThroughProxyRedirectToTheProxy(t *testing.T) {
	shop, _ := feedServer(t, testnet.StandIn)
	answers := map[string]string{"shop.test": testnet.StandIn, "proxy.test": "127.0.0.1"}
	for _, c := range []struct{ name, proxyHost, noProxy string }{
		{"loopback", "127.0.0.1", ""},
		{"in NO_PROXY", "proxy.test", "proxy.test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newForwardProxy(t, answers)
			proxy := fmt.Sprintf("http://%s:%d", c.proxyHost, portOf(p.Server))
			pick := (&httpproxy.Config{HTTPProxy: proxy, HTTPSProxy: proxy, NoProxy: c.noProxy}).ProxyFunc()
			f := NewFetcher(FetchOptions{resolve: testnet.Resolver(answers), guard: testnet.PublicStandIn(),
				Proxy: func(req *http.Request) (*url.URL, error) { return pick(req.URL) }})
			menu := proxy + "/squid-internal-mgr/menu"
			src, err := ParseSource(redirectTo(shop, "shop.test", menu) + "#format=xml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Fetch(context.Background(), src, Options{})
			if !errors.Is(err, ErrRedirectRefused) {
				t.Errorf("Fetch = %v, want ErrRedirectRefused", err)
			}
			if got := p.requests(); len(got) != 1 || !strings.HasPrefix(got[0], "GET http://shop.test:") {
				t.Errorf("the proxy got %q, want the feed's request alone", got)
			}
		})
	}
}
