package pages

import (
	"errors"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// MaxURLBytes bounds the length of a page URL as the request gives it.
const MaxURLBytes = 2 << 10

// BadURLError says why a page URL was refused. Its message is safe to show
// to the client; the API answers it with 400 naming the url parameter.
type BadURLError struct {
	Reason string
}

// Error returns the client-safe reason.
func (e *BadURLError) Error() string { return "url " + e.Reason }

func badURL(reason string) error { return &BadURLError{Reason: reason} }

// ErrForeignDomain is returned by CheckDomain for a page that is not on one
// of the site's domains; the API answers it with 403.
var ErrForeignDomain = errors.New("url is not on one of the site's registered domains")

// trackingParams are query parameters that identify a click or a campaign,
// not a page; they are dropped so one page is analysed once. Keys starting
// with "utm_" are dropped as well.
var trackingParams = map[string]bool{
	"gclid": true, "gclsrc": true, "dclid": true, "gbraid": true, "wbraid": true,
	"fbclid": true, "msclkid": true, "mc_eid": true, "mc_cid": true, "yclid": true,
	"_ga": true, "_gl": true, "igshid": true, "twclid": true, "ttclid": true,
	"li_fat_id": true, "_hsenc": true, "_hsmi": true, "mkt_tok": true,
	"oly_anon_id": true, "oly_enc_id": true, "vero_id": true, "vero_conv": true,
	"wickedid": true, "srsltid": true, "epik": true, "s_cid": true, "ef_id": true,
}

func isTracking(key string) bool {
	k := strings.ToLower(key)
	return strings.HasPrefix(k, "utm_") || trackingParams[k]
}

// Canonical returns the canonical form of an absolute http or https page
// URL, so that every spelling of one page is analysed once: scheme and host
// in lower case, no default port, no fragment, no tracking parameters, the
// remaining query parameters sorted, an empty path as "/". Anything else
// (relative, another scheme, credentials, over MaxURLBytes) is a
// *BadURLError.
func Canonical(raw string) (string, error) {
	u, err := parseCanonical(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

func parseCanonical(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, badURL("is missing")
	}
	if len(raw) > MaxURLBytes {
		return nil, badURL("is longer than " + strconv.Itoa(MaxURLBytes) + " bytes")
	}
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, badURL("is not a valid URL")
	}
	if u.Scheme == "" {
		return nil, badURL("must be absolute (http or https)")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil, badURL("must use http or https, not " + strconv.Quote(scheme))
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, badURL("must be absolute (http or https) with a host")
	}
	if u.User != nil {
		return nil, badURL("must not carry a user name or password")
	}
	host := strings.ToLower(u.Hostname())
	host = strings.TrimSuffix(host, ".")
	if host == "" || !validHost(host) {
		return nil, badURL("has an invalid host")
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, badURL("has an invalid port")
		}
		port = strconv.Itoa(n)
		if scheme == "http" && n == 80 || scheme == "https" && n == 443 {
			port = ""
		}
	}
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport += ":" + port
	}
	out := &url.URL{Scheme: scheme, Host: hostport}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if err := setPath(out, p); err != nil {
		return nil, badURL("has an invalid path")
	}
	out.RawQuery = canonicalQuery(u.RawQuery)
	return out, nil
}

// setPath sets an escaped path on u, keeping its escaping.
func setPath(u *url.URL, escaped string) error {
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return err
	}
	u.Path = p
	u.RawPath = ""
	if u.EscapedPath() != escaped {
		u.RawPath = escaped
		if u.EscapedPath() != escaped {
			// url.URL would not keep this spelling; use its own.
			u.RawPath = ""
		}
	}
	return nil
}

func validHost(h string) bool {
	if strings.Contains(h, ":") {
		ip := net.ParseIP(h)
		return ip != nil && ip.To4() == nil
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		case c >= 0x80:
			// Internationalised names are kept as written.
		default:
			return false
		}
	}
	return !strings.HasPrefix(h, ".") && !strings.Contains(h, "..")
}

// canonicalQuery drops tracking parameters and sorts the rest by key, then
// value, keeping each pair's own escaping.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type pair struct{ key, kv string }
	var pairs []pair
	for _, kv := range strings.Split(raw, "&") {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if isTracking(k) {
			continue
		}
		pairs = append(pairs, pair{k, kv})
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].key != pairs[j].key {
			return pairs[i].key < pairs[j].key
		}
		return pairs[i].kv < pairs[j].kv
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.kv)
	}
	return b.String()
}

// CheckDomain reports ErrForeignDomain unless the canonical page URL's host
// is one of domains or a subdomain of one. Domains are host names as the
// partner registry lists them ("example.com", "localhost", "127.0.0.1").
func CheckDomain(pageURL string, domains []string) error {
	u, err := url.Parse(pageURL)
	if err != nil {
		return badURL("is not a valid URL")
	}
	host := strings.ToLower(u.Hostname())
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
		if d == "" {
			continue
		}
		if host == d || strings.HasSuffix(host, "."+d) && net.ParseIP(d) == nil {
			return nil
		}
	}
	return ErrForeignDomain
}

// sameSite reports whether two hosts belong to the same registered domain
// (eTLD+1), or are the same host when that cannot be told (IP addresses,
// localhost).
func sameSite(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == b {
		return true
	}
	if net.ParseIP(a) != nil || net.ParseIP(b) != nil {
		return false
	}
	ra, err1 := publicsuffix.EffectiveTLDPlusOne(a)
	rb, err2 := publicsuffix.EffectiveTLDPlusOne(b)
	return err1 == nil && err2 == nil && ra == rb
}
