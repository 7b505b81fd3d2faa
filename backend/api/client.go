package api

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/adlink/adlink/contract"
)

// peer is the address the connection comes from.
func peer(r *http.Request) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap(), true
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// clientIP is the client's address: the peer's, or, when the peer is a
// trusted proxy, the nearest untrusted address in X-Forwarded-For (read
// right to left, since a client can write anything on the left).
func (s *server) clientIP(r *http.Request) string {
	addr, ok := peer(r)
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
	if !s.cfg.Trusted(addr) {
		return addr.String()
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := hopAddr(strings.TrimSpace(hops[i]))
		if !ok {
			break
		}
		addr = a.Unmap()
		if !s.cfg.Trusted(addr) {
			break
		}
	}
	return addr.String()
}

// hopAddr is the address of one X-Forwarded-For entry, with or without
// a port: some proxies (Azure's Application Gateway) write 192.0.2.1:5000,
// and reading no address there would count every client as the proxy.
func hopAddr(hop string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(hop); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(hop); err == nil {
		return ap.Addr(), true
	}
	return netip.Addr{}, false
}

// geoCountry is the client's country for loc=use_geo: the country header,
// believed only from a trusted proxy; "" (no country filter) otherwise or
// when the header holds no ISO 3166-1 code, as loc itself must (Cloudflare's
// XX and T1, the EU and AP of some geo databases).
func (s *server) geoCountry(r *http.Request) string {
	addr, ok := peer(r)
	if !ok || !s.cfg.Trusted(addr) {
		return ""
	}
	c := strings.TrimSpace(r.Header.Get(s.cfg.CountryHeader))
	if !contract.IsCountry(c) {
		return ""
	}
	return strings.ToLower(c)
}

// localeLang is the client's language for lang=use_locale: the most
// preferred primary language of Accept-Language that is an ISO 639-1
// code, ties going to the first listed; "" when there is none.
func localeLang(r *http.Request) string {
	best, bestQ := "", 0.0
	for _, h := range r.Header.Values("Accept-Language") {
		for item := range strings.SplitSeq(h, ",") {
			tag, params, _ := strings.Cut(item, ";")
			tag = strings.TrimSpace(tag)
			primary, _, _ := strings.Cut(tag, "-")
			primary = strings.ToLower(primary)
			if !contract.IsLanguage(primary) {
				continue // "*", "i-klingon", three-letter codes, "xx"
			}
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.TrimSpace(k) == "q" {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err != nil || f < 0 || f > 1 {
						f = 0
					}
					q = f
				}
			}
			if q > bestQ {
				best, bestQ = primary, q
			}
		}
	}
	return best
}
