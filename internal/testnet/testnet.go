// Package testnet helps tests of the guarded fetchers (backend/pages,
// backend/catalog) play the internet over loopback: names that resolve
// to chosen addresses, and servers on 127.0.0.2, which a guard opened by
// PublicStandIn counts as a public host while 127.0.0.1 stays private.
package testnet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"testing"

	"code.dny.dev/ssrf"
)

// StandIn is the loopback address that plays a public host.
const StandIn = "127.0.0.2"

// PublicStandIn are the guard's options under which StandIn, at any port,
// is public and every other special address is not.
func PublicStandIn() []ssrf.Option {
	return []ssrf.Option{ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix(StandIn + "/32"))}
}

// Resolver makes every host name of answers resolve to its address, and
// any other name to no such host.
func Resolver(answers map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		a, ok := answers[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
}

// ServeOn serves h over HTTP on a chosen loopback address until the test
// ends. A test skips when the address cannot be listened on, or fails
// when the CI variable is set.
func ServeOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ts := unstartedOn(t, addr, h)
	ts.Start()
	return ts
}

// ServeTLSOn serves h over HTTPS on a chosen loopback address until the
// test ends; its certificate (ts.Certificate()) names example.com.
func ServeTLSOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ts := unstartedOn(t, addr, h)
	ts.StartTLS()
	return ts
}

func unstartedOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l := Listen(t, addr)
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = l
	t.Cleanup(ts.Close)
	return ts
}

// Listen listens on a free port of addr (StandIn, say), closed when the
// test ends. Where addr cannot be listened on the test skips, or fails
// when CI is set.
func Listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot listen on %s: %v", addr, err)
		}
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// ListenPair listens on StandIn and on 127.0.0.1 at the same port, so
// that one URL reaches either, as DNS says: a name that answers the one
// and then the other rebinds from a public host to a private one.
func ListenPair(t testing.TB) (public, private net.Listener) {
	t.Helper()
	for range 20 {
		pub, err := net.Listen("tcp", StandIn+":0")
		if err != nil {
			t.Fatalf("cannot listen on %s: %v", StandIn, err)
		}
		priv, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", pub.Addr().(*net.TCPAddr).Port))
		if err == nil {
			return pub, priv
		}
		pub.Close()
	}
	t.Fatalf("no port free on both 127.0.0.1 and %s", StandIn)
	return nil, nil
}
