package clicks

import (
	"net/netip"
	"strings"
)

// Network is the client network an address belongs to, the unit every
// click limit counts by: an IPv4 address alone (an IPv4-mapped IPv6
// address is its IPv4 address), an IPv6 address's /64, which one host
// usually holds whole. A zone (fe80::1%eth0) is dropped: it names the
// receiving interface, not the client, so a client cannot rotate it. What
// is no address is returned as it is.
func Network(ip string) string {
	a, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return ip
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}
