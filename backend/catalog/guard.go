package catalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/adlink/adlink/backend/egress"
)

// The feed fetcher's guard: a feed server's redirects may not lead from a
// public address to an internal one, nor to another scheme (see Fetcher).
// Through the operator's proxy, the fetcher sees the proxy's address, not
// the feed server's: the proxy is trusted, and the server behind it is
// taken for a public one.

// ErrRedirectRefused is the error of a feed URL whose redirect the Fetcher
// did not follow: to a scheme other than http and https, or from a public
// address to one that is not (loopback, private, link-local with the
// cloud metadata address, unique-local and the other special ranges).
var ErrRedirectRefused = errors.New("redirect refused")

// maxFeedRedirects caps the redirects of one fetch of a feed.
const maxFeedRedirects = 10

// hops is what one fetch of a feed URL has connected to: the first public
// address, once there is one, and the proxies its requests went through
// (host:port, as the transport dials them). via is the proxy of the
// request being sent, "" when it goes directly: a fetch's requests (its
// redirects) are sent one after another, each picking its proxy before
// it dials.
type hops struct {
	mu      sync.Mutex
	public  netip.Addr
	proxies []string
	via     string
}

type hopsKey struct{}

// proxyDialKey marks the context of a connection to a proxy.
type proxyDialKey struct{}

// noteProxy wraps pick, a Transport's Proxy, so that the proxy it picks
// for a request, or none, is noted in the request's fetch's hops.
func noteProxy(pick func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		u, err := pick(req)
		h, _ := req.Context().Value(hopsKey{}).(*hops)
		if h == nil {
			return u, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.via = ""
		if err != nil || u == nil {
			return u, err
		}
		h.via = proxyAddr(u)
		if !slices.Contains(h.proxies, h.via) {
			h.proxies = append(h.proxies, h.via)
		}
		return u, nil
	}
}

// proxyAddr is the host:port a Transport dials for the proxy u.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// dial connects, and notes a connection to a public address in the
// fetch's hops. A connection to the proxy the request goes through is the
// operator's and is neither judged nor noted. A request sent directly is
// judged wherever it goes, the proxy's own address too: a redirect to
// the proxy (a loopback one, never proxied, or one NO_PROXY names) would
// otherwise reach it unguarded, with a request for its own pages.
func (f *Fetcher) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	h, _ := ctx.Value(hopsKey{}).(*hops)
	if h != nil {
		h.mu.Lock()
		proxy := h.via != "" && h.via == addr
		h.mu.Unlock()
		if proxy {
			ctx = context.WithValue(ctx, proxyDialKey{}, true)
			return egress.Dial(ctx, d, f.opts.resolve, network, addr)
		}
	}
	c, err := egress.Dial(ctx, d, f.opts.resolve, network, addr)
	if err != nil {
		return nil, err
	}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil && h != nil && f.guard.Public(ap.Addr()) == nil {
		h.mu.Lock()
		if !h.public.IsValid() {
			h.public = ap.Addr()
		}
		h.mu.Unlock()
	}
	return c, nil
}

// control refuses to connect to an address that is not public once the
// fetch has connected to one that is, or has gone through a proxy to a
// server it cannot see (a redirect to a host the proxy is not used for,
// NO_PROXY's). It runs on the exact address dialled, after resolution, so
// a name that resolved to a public address before cannot rebind to a
// private one. The proxy's own connections pass: the operator chose it.
func (f *Fetcher) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	h, _ := ctx.Value(hopsKey{}).(*hops)
	if h == nil || ctx.Value(proxyDialKey{}) != nil {
		return nil
	}
	h.mu.Lock()
	from, proxies := h.public, slices.Clone(h.proxies)
	h.mu.Unlock()
	if !from.IsValid() && len(proxies) == 0 {
		return nil // the operator's own URL, or a redirect between internal hosts
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if err := f.guard.Public(ap.Addr()); err != nil {
		return &refusedAddr{addr: ap.Addr(), from: from, proxies: proxies, err: err}
	}
	return nil
}

// refusedAddr is a connection to addr refused because the fetch had
// connected to the public address from, or through proxies.
type refusedAddr struct {
	addr, from netip.Addr
	proxies    []string
	err        error
}

func (e *refusedAddr) Error() string {
	if !e.from.IsValid() {
		return fmt.Sprintf("address %s refused after a request through the proxy %s: %v", e.addr, strings.Join(e.proxies, ", "), e.err)
	}
	return fmt.Sprintf("address %s refused after the public %s: %v", e.addr, e.from, e.err)
}

func (e *refusedAddr) Unwrap() []error { return []error{ErrRedirectRefused, e.err} }

// checkFeedRedirect refuses a redirect to a scheme other than http and
// https, and stops a chain past maxFeedRedirects.
func checkFeedRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: to the scheme %q, not http or https", ErrRedirectRefused, req.URL.Scheme)
	}
	if len(via) >= maxFeedRedirects {
		return fmt.Errorf("stopped after %d redirects", maxFeedRedirects)
	}
	return nil
}
