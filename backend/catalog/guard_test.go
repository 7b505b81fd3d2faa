package catalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adlink/adlink/internal/testnet"
)

// The attacks of this file are a merchant's: its feed server, named by
// the operator, redirects the feed fetcher towards the operator's own
// network or the cloud metadata address. The operator's URL is trusted as
// given (it may be an internal host); a redirect from a public address
// may not reach one that is not. Every server is a real one on loopback;
// 127.0.0.2 plays the public internet (testnet.PublicStandIn) and
// 127.0.0.1 the operator's network.

// feedServer serves the RSS feed at /feed.xml and redirects /to?l= to l,
// counting every request.
func feedServer(t *testing.T, addr string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/feed.xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, merchantRSS)
		case "/to":
			w.Header().Set("Location", r.URL.Query().Get("l"))
			w.WriteHeader(http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
	if addr == "127.0.0.1" {
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		return ts, &hits
	}
	return testnet.ServeOn(t, addr, h), &hits
}

// guardedFetcher is a feed fetcher for which names resolve as answers
// says and 127.0.0.2 alone of the loopback addresses is public.
func guardedFetcher(answers map[string]string) *Fetcher {
	return NewFetcher(FetchOptions{resolve: testnet.Resolver(answers), guard: testnet.PublicStandIn()})
}

func portOf(ts *httptest.Server) int { return ts.Listener.Addr().(*net.TCPAddr).Port }

// redirectTo is the URL at which ts redirects to location.
func redirectTo(ts *httptest.Server, host, location string) string {
	return fmt.Sprintf("http://%s:%d/to?l=%s", host, portOf(ts), url.QueryEscape(location))
}

// TestFetchFeedRedirectFromPublicToPrivate: a public feed server's
// redirect to loopback, a private or link-local address, the metadata
// addresses of IPv4 and IPv6, by literal or by a name that resolves to
// one, is refused when it is dialled: the server there gets nothing, and
// the error names the feed and the address.
func TestFetchFeedRedirectFromPublicToPrivate(t *testing.T) {
	shop, _ := feedServer(t, testnet.StandIn)
	inner, innerHits := feedServer(t, "127.0.0.1")
	innerPort := portOf(inner)
	f := guardedFetcher(map[string]string{
		"shop.test": testnet.StandIn, "inner.test": "127.0.0.1", "meta.test": "169.254.169.254",
		"meta6.test": "fd00:ec2::254", "ten.test": "10.1.2.3", "mapped.test": "::ffff:127.0.0.1",
		"v6loop.test": "::1",
	})
	for _, c := range []struct{ location, refused string }{
		{fmt.Sprintf("http://127.0.0.1:%d/feed.xml", innerPort), "127.0.0.1"},
		{fmt.Sprintf("http://inner.test:%d/feed.xml", innerPort), "127.0.0.1"},
		// Dialled as the IPv4 address it maps.
		{fmt.Sprintf("http://mapped.test:%d/feed.xml", innerPort), "127.0.0.1"},
		{fmt.Sprintf("http://v6loop.test:%d/feed.xml", innerPort), "::1"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
		{"http://meta.test/latest/meta-data/iam/security-credentials/", "169.254.169.254"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254"},
		{"http://meta6.test/latest/meta-data/", "fd00:ec2::254"},
		{"https://ten.test/feed.xml", "10.1.2.3"},
		{fmt.Sprintf("http://[fe80::1%%25lo]:%d/feed.xml", innerPort), "fe80::1%lo"},
	} {
		t.Run(c.location, func(t *testing.T) {
			src, err := ParseSource(redirectTo(shop, "shop.test", c.location) + "#format=xml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Fetch(context.Background(), src, Options{})
			if !errors.Is(err, ErrRedirectRefused) {
				t.Fatalf("Fetch = %v, want ErrRedirectRefused", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, src.Name+": ") || !strings.Contains(msg, "address "+c.refused+" refused") ||
				!strings.Contains(msg, "after the public "+testnet.StandIn) {
				t.Fatalf("error %q does not name the feed, the refused address %s and the public one", msg, c.refused)
			}
		})
	}
	if n := innerHits.Load(); n != 0 {
		t.Fatalf("the private server was reached %d times", n)
	}
}

// TestFetchFeedRebinding: a public name that resolves to a public address
// for the feed and to a private one for its redirect (DNS rebinding, on
// the very same name and port) is refused at the redirect's connection.
func TestFetchFeedRebinding(t *testing.T) {
	pub, priv := testnet.ListenPair(t)
	var reached atomic.Int32
	servePublic := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/feed.xml", http.StatusFound)
	})}
	servePrivate := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprint(w, merchantRSS)
	})}
	go servePublic.Serve(pub)
	go servePrivate.Serve(priv)
	t.Cleanup(func() { servePublic.Close(); servePrivate.Close() })
	var lookups atomic.Int32
	f := NewFetcher(FetchOptions{
		resolve: func(context.Context, string) ([]netip.Addr, error) {
			if lookups.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr(testnet.StandIn)}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		guard: testnet.PublicStandIn(),
	})
	src, _ := ParseSource(fmt.Sprintf("http://rebind.test:%d/start#format=xml", pub.Addr().(*net.TCPAddr).Port))
	_, err := f.Fetch(context.Background(), src, Options{})
	if !errors.Is(err, ErrRedirectRefused) || !strings.Contains(err.Error(), "address 127.0.0.1 refused") {
		t.Fatalf("Fetch = %v, want the rebound address refused", err)
	}
	if lookups.Load() != 2 {
		t.Fatalf("%d lookups, want one per connection", lookups.Load())
	}
	if reached.Load() != 0 {
		t.Fatalf("the private server was reached %d times", reached.Load())
	}
}

// TestFetchFeedRedirectScheme: a redirect to a scheme other than http and
// https is refused, from a public feed server or an internal one alike,
// and the error names the feed and the scheme.
func TestFetchFeedRedirectScheme(t *testing.T) {
	shop, _ := feedServer(t, testnet.StandIn)
	internal, _ := feedServer(t, "127.0.0.1")
	f := guardedFetcher(map[string]string{"shop.test": testnet.StandIn, "feeds.internal": "127.0.0.1"})
	for _, server := range []struct {
		ts   *httptest.Server
		host string
	}{{shop, "shop.test"}, {internal, "feeds.internal"}} {
		for _, location := range []string{"file:///etc/passwd", "ftp://shop.test/feed.xml", "gopher://127.0.0.1:6379/_INFO", "data:text/xml,<rss/>", "javascript:alert(1)"} {
			src, _ := ParseSource(redirectTo(server.ts, server.host, location) + "#format=xml")
			_, err := f.Fetch(context.Background(), src, Options{})
			scheme, _, _ := strings.Cut(location, ":")
			if !errors.Is(err, ErrRedirectRefused) || !strings.HasPrefix(err.Error(), src.Name+": ") || !strings.Contains(err.Error(), fmt.Sprintf("%q", scheme)) {
				t.Errorf("%s redirecting to %s: %v, want ErrRedirectRefused naming the feed and the scheme", server.host, location, err)
			}
		}
	}
}

// TestFetchFeedTrustsTheOperatorsURL: the operator's URL may name an
// internal host, which may redirect to another; and a public feed server
// may redirect to another public one (a CDN). Those are followed.
func TestFetchFeedTrustsTheOperatorsURL(t *testing.T) {
	internal, _ := feedServer(t, "127.0.0.1")
	other, otherHits := feedServer(t, "127.0.0.1")
	shop, _ := feedServer(t, testnet.StandIn)
	cdn, cdnHits := feedServer(t, testnet.StandIn)
	f := guardedFetcher(map[string]string{
		"feeds.internal": "127.0.0.1", "other.internal": "127.0.0.1", "shop.test": testnet.StandIn, "cdn.test": testnet.StandIn,
	})
	for _, c := range []struct {
		name string
		url  string
		hits *atomic.Int32
	}{
		{"an internal host", fmt.Sprintf("http://feeds.internal:%d/feed.xml", portOf(internal)), nil},
		{"an internal host's redirect to another", redirectTo(internal, "feeds.internal", fmt.Sprintf("http://other.internal:%d/feed.xml", portOf(other))), otherHits},
		{"a public host's redirect to a CDN", redirectTo(shop, "shop.test", fmt.Sprintf("http://cdn.test:%d/feed.xml", portOf(cdn))), cdnHits},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, _ := ParseSource(c.url)
			res, err := f.Fetch(context.Background(), src, Options{})
			if err != nil || len(res.Ads) != 2 {
				t.Fatalf("Fetch = %+v, %v; want the feed's two ads", res, err)
			}
			if c.hits != nil && c.hits.Load() != 1 {
				t.Fatalf("the redirect's target was asked %d times, want 1", c.hits.Load())
			}
		})
	}
}

// TestFetchFeedKeepsNoConnection: an internal feed read first leaves no
// connection that a public feed's redirect to the same host and port
// could reuse past the guard: the redirect dials, and is refused.
func TestFetchFeedKeepsNoConnection(t *testing.T) {
	internal, internalHits := feedServer(t, "127.0.0.1")
	shop, _ := feedServer(t, testnet.StandIn)
	f := guardedFetcher(map[string]string{"feeds.internal": "127.0.0.1", "shop.test": testnet.StandIn})
	internalURL := fmt.Sprintf("http://feeds.internal:%d/feed.xml", portOf(internal))
	src, _ := ParseSource(internalURL)
	if _, err := f.Fetch(context.Background(), src, Options{}); err != nil {
		t.Fatal(err)
	}
	src, _ = ParseSource(redirectTo(shop, "shop.test", internalURL))
	if _, err := f.Fetch(context.Background(), src, Options{}); !errors.Is(err, ErrRedirectRefused) {
		t.Fatalf("a public feed's redirect to the internal feed's host: %v, want ErrRedirectRefused", err)
	}
	if n := internalHits.Load(); n != 1 {
		t.Fatalf("the internal server was asked %d times, want once (its own feed's)", n)
	}
}
