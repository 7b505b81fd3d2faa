package clicks

import (
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
)

// Network is the client network an address belongs to, the unit every
// click limit counts by: an IPv4 address alone (an IPv4-mapped IPv6
// address is its IPv4 address), an IPv6 address's /64, which one host
// usually holds whole. A zone (fe80::1%eth0) is dropped: it names the
// receiving interface, not the client, so a client cannot rotate it. A
// 6to4 address (2002:AABB:CCDD::/48) is the IPv4 address it is made of
// (A.B.C.D): any host with an IPv4 address has that whole /48, 65,536
// /64s to rotate through. So is a Teredo address (2001::/32), whose /64
// names a Teredo server that a relay never checks: its client's IPv4
// address, which replies go to, is the one part its sender cannot
// choose. What is no address is returned as it is.
func Network(ip string) string {
	a, ok := clientAddr(ip)
	if !ok {
		return ip
	}
	return networkOf(a)
}

// networkOf is the Network of a, an address clientAddr read.
func networkOf(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// Prefix is the range of addresses one holder is likely to have, whose
// billable clicks the redirect caps as well as each network's: an IPv6
// address's /48 ("2001:db8:1::/48"), what a tunnel broker hands anyone,
// 65,536 networks; an IPv4 address's /24 ("192.0.2.0/24"), 256 addresses,
// what a hosting provider rents by the month (a 6to4 or Teredo address is
// its IPv4 address: Network, and so is an IPv4-mapped one). It is "" for what is
// no address, a Prefix or an IPv6 Network among them: callers take it of
// the client's address, never of what Network or Prefix returned.
// IsIPv4Prefix tells the two apart, each with a cap of its own.
func Prefix(ip string) string {
	a, ok := clientAddr(ip)
	if !ok {
		return ""
	}
	if a.Is4() {
		return netip.PrefixFrom(a, 24).Masked().String()
	}
	return netip.PrefixFrom(a, 48).Masked().String()
}

// IsIPv4Prefix reports whether p, a Prefix, is an IPv4 /24.
func IsIPv4Prefix(p string) bool { return strings.HasSuffix(p, "/24") }

// clientAddr is ip as Network and Prefix count it: without a zone, an
// IPv4-mapped, 6to4 or Teredo address as its IPv4 address.
func clientAddr(ip string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return netip.Addr{}, false
	}
	a = a.WithZone("").Unmap()
	if !a.Is6() {
		return a, true
	}
	switch b := a.As16(); {
	case b[0] == 0x20 && b[1] == 0x02: // 6to4: 2002:AABB:CCDD::/48
		a = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		// Teredo: 2001:0:server:flags:port:client, port and client
		// with every bit flipped.
		a = netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	return a, true
}

// ImpressionNetworks is the client at ip's Network, and the network an
// impression's Key names for it: its Network, but for an IPv6 address,
// with shares > 0, its /48 and one of shares parts of it chosen by a hash
// of its /64. The /64s of a /48 so make at most shares keys of an ad on a
// site in a window: a reader rotating them counts that many impressions
// at most, not one for each of 65,536. Readers of two /64s of one /48
// share a key one time in shares. The hash is the same on every replica.
// The address is read once for both.
func ImpressionNetworks(ip string, shares int) (network, key string) {
	a, ok := clientAddr(ip)
	if !ok {
		return ip, ip
	}
	network = networkOf(a)
	if !a.Is6() || shares <= 0 {
		return network, network
	}
	h := fnv.New32a()
	h.Write([]byte(network))
	return network, netip.PrefixFrom(a, 48).Masked().String() + "#" + strconv.FormatUint(uint64(h.Sum32()%uint32(shares)), 10)
}
