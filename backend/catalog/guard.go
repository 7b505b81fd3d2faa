package catalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"

	"github.com/adlink/adlink/backend/egress"
)

// The feed fetcher's guard: a feed server's redirects may not lead from a
// public address to an internal one, nor to another scheme (see Fetcher).

// ErrRedirectRefused is the error of a feed URL whose redirect the Fetcher
// did not follow: to a scheme other than http and https, or from a public
// address to one that is not (loopback, private, link-local with the
// cloud metadata address, unique-local and the other special ranges).
var ErrRedirectRefused = errors.New("redirect refused")

// maxFeedRedirects caps the redirects of one fetch of a feed.
const maxFeedRedirects = 10

// hops is what one fetch of a feed URL has connected to: the first public
// address, once there is one.
type hops struct {
	mu     sync.Mutex
	public netip.Addr
}

type hopsKey struct{}

// dial connects, and notes a connection to a public address in the
// fetch's hops.
func (f *Fetcher) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	c, err := egress.Dial(ctx, d, f.opts.resolve, network, addr)
	if err != nil {
		return nil, err
	}
	h, _ := ctx.Value(hopsKey{}).(*hops)
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
// fetch has connected to one that is. It runs on the exact address
// dialled, after resolution, so a name that resolved to a public address
// before cannot rebind to a private one.
func (f *Fetcher) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	h, _ := ctx.Value(hopsKey{}).(*hops)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	from := h.public
	h.mu.Unlock()
	if !from.IsValid() {
		return nil // the operator's own URL, or a redirect between internal hosts
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if err := f.guard.Public(ap.Addr()); err != nil {
		return &refusedAddr{addr: ap.Addr(), from: from, err: err}
	}
	return nil
}

// refusedAddr is a connection to addr refused because the fetch had
// connected to the public address from.
type refusedAddr struct {
	addr, from netip.Addr
	err        error
}

func (e *refusedAddr) Error() string {
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
