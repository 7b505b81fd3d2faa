// Package egress judges where adlink's outbound fetches may connect. The
// page fetcher (backend/pages) and the catalog's feed fetcher
// (backend/catalog) both dial through it, so one classification of
// addresses holds for both: judged after DNS resolution, on the exact
// address of every connection, redirects included.
package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"

	"code.dny.dev/ssrf"
)

// Guard tells the public internet from every special-purpose address:
// loopback, private, link-local (the cloud metadata address
// 169.254.169.254 among them), unique-local IPv6 (fd00:ec2::254), CGNAT,
// IPv4-mapped and -translated, NAT64, 6to4, Teredo, multicast, reserved.
// It is safe for concurrent use.
type Guard struct {
	g *ssrf.Guardian
}

// New returns a Guard that allows ports 80 and 443 only. opts change that:
// ssrf.WithAnyPort opens every port, and an allowed prefix makes a range
// count as public (tests let a loopback address stand in for a public
// host this way).
func New(opts ...ssrf.Option) *Guard {
	return &Guard{g: ssrf.New(opts...)}
}

// Control refuses a connection to an address that is not public or to a
// port not allowed. Set as net.Dialer.Control, it judges the address the
// socket connects to, after any resolution.
func (g *Guard) Control(network, address string, c syscall.RawConn) error {
	return g.g.Safe(network, address, c)
}

// Public returns nil when ip is on the public internet, else an error
// that names it and its range; ports are not judged.
func (g *Guard) Public(ip netip.Addr) error {
	return g.g.SafeAddr(ip)
}

// Refused reports whether err, or an error it wraps, is a Guard's refusal.
func Refused(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedPort) ||
		errors.Is(err, ssrf.ErrProhibitedNetwork) || errors.Is(err, ssrf.ErrInvalidHostPort)
}

// Resolver looks up the addresses of a host name.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// SystemResolver is the system's resolver.
func SystemResolver(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Dial connects to addr (host:port) with d: a literal address as it is,
// a name at each address resolve gives for it in turn, so that the
// dialer's Control judges every one. It returns the first connection
// made, or the first error when none is.
func Dial(ctx context.Context, d *net.Dialer, resolve Resolver, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
		}
	}
	var first error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}
