package pages

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/adlink/adlink/match"
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
// (relative, another scheme, credentials, over MaxURLBytes as given or
// once escaped) is a *BadURLError. The canonical form of a canonical URL is
// itself.
func Canonical(raw string) (string, error) {
	u, err := parseCanonical(raw)
	if err != nil {
		return "", err
	}
	// Escaping can lengthen a URL threefold (an internationalised host's
	// bytes become %XX): one the limit would refuse as its canonical form
	// is refused as given.
	c := u.String()
	if len(c) > MaxURLBytes {
		return "", badURL("is longer than " + strconv.Itoa(MaxURLBytes) + " bytes once escaped")
	}
	return c, nil
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
	// Checked before ToLower, which would turn bytes that are not UTF-8
	// into U+FFFD: a host of them names nothing.
	if !utf8.ValidString(u.Hostname()) {
		return nil, badURL("has an invalid host")
	}
	host := strings.ToLower(u.Hostname())
	host = strings.TrimSuffix(host, ".")
	host, ok := asciiHost(host)
	if !ok || host == "" || !validHost(host) {
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
	p := removeDotSegments(normalizeEscapes(u.EscapedPath()))
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	if err := setPath(out, p); err != nil {
		return nil, badURL("has an invalid path")
	}
	out.RawQuery = canonicalQuery(u.RawQuery)
	return out, nil
}

// normalizeEscapes applies RFC 3986 6.2.2: percent-escapes in upper case,
// escaped unreserved characters decoded ("%7e" -> "~", "%c3" -> "%C3"),
// spaces and control bytes escaped, and a "%" that starts no escape as "%25".
func normalizeEscapes(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == '%' || r <= ' ' || r == 0x7f }) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			// Spaces and control bytes are escaped, or trimming the URL
			// would change it on the next pass.
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !match.IsHex(s[i+1]) || !match.IsHex(s[i+2]) {
			// A '%' that starts no escape stands for itself, as browsers
			// read it: written "%25", it cannot join a decoded hex digit
			// after it into an escape on the next pass ("%%41a" would
			// become "%Aa", then "%AA").
			b.WriteString("%25")
			continue
		}
		c := match.Unhex(s[i+1])<<4 | match.Unhex(s[i+2])
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex(s[i+1]))
			b.WriteByte(upperHex(s[i+2]))
		}
		i += 2
	}
	return b.String()
}

func upperHex(c byte) byte {
	if c >= 'a' && c <= 'f' {
		return c - ('a' - 'A')
	}
	return c
}

// removeDotSegments resolves "." and ".." in an absolute path (RFC 3986
// 5.2.4), keeping a trailing slash.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, seg)
		}
	}
	r := strings.Join(out, "/")
	if !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
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

// asciiHost returns host with an internationalised name in A-labels
// ("bücher.example" is "xn--bcher-kva.example"), as browsers' location.href
// and DNS name it and net/http dials it, so that either spelling is one
// page and one site's domain. An ASCII host is returned as it is; ok is
// false for a name IDNA refuses.
func asciiHost(host string) (string, bool) {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			a, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return "", false
			}
			return a, true
		}
	}
	return host, true
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
		default:
			return false
		}
	}
	// No empty label: the one trailing dot of a fully qualified name is
	// gone by now, and "a.." is no name ("http://0.." once canonicalised
	// to "http://0./", whose canonical form is "http://0/").
	return !strings.HasPrefix(h, ".") && !strings.HasSuffix(h, ".") && !strings.Contains(h, "..")
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
		// The key is read from the pair as it is written out, so that the
		// canonical URL sorts the same way again.
		kv = normalizeEscapes(kv)
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
	if !onDomains(strings.ToLower(u.Hostname()), domains) {
		return ErrForeignDomain
	}
	return nil
}

// onDomains reports whether host (lower case) is one of domains or a
// subdomain of one; an internationalised name matches in either spelling.
func onDomains(host string, domains []string) bool {
	host, ok := asciiHost(host)
	if !ok {
		return false
	}
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
		if d, ok = asciiHost(d); !ok || d == "" {
			continue
		}
		if host == d || strings.HasSuffix(host, "."+d) && net.ParseIP(d) == nil {
			return true
		}
	}
	return false
}

// SitesOf returns an Options.Sites over the domain lists of every
// registered site: for a page, those of the sites it is on.
func SitesOf(sites [][]string) func(pageURL string) [][]string {
	return func(pageURL string) [][]string {
		var on [][]string
		for _, d := range sites {
			if CheckDomain(pageURL, d) == nil {
				on = append(on, d)
			}
		}
		return on
	}
}

// maxIgnored bounds the parameter names one path's rule keeps.
const maxIgnored = 32

// ruleKey is the key of the record that lists the query parameters the
// pages at canonical URL c's path do not vary by: c without its query,
// and a "?" that no canonical URL ends with.
func ruleKey(c string) string {
	bare, _, _ := strings.Cut(c, "?")
	return bare + "?"
}

// queryPairs splits a canonical URL's query into its key=value pairs and
// their unescaped keys.
func queryPairs(c string) (kvs, keys []string) {
	_, q, ok := strings.Cut(c, "?")
	if !ok || q == "" {
		return nil, nil
	}
	kvs = strings.Split(q, "&")
	keys = make([]string, len(kvs))
	for i, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		keys[i] = k
	}
	return kvs, keys
}

// droppedParams returns the names of the parameters canonical URL page
// has and c does not, when c is page with only those parameters left out
// (same scheme, host and path, every other pair as it is); else nil.
func droppedParams(page, c string) []string {
	if c == page || ruleKey(c) != ruleKey(page) {
		return nil
	}
	ckvs, ckeys := queryPairs(c)
	pkvs, pkeys := queryPairs(page)
	kept := make(map[string]int, len(ckvs))
	for _, kv := range ckvs {
		kept[kv]++
	}
	var dropped []string
	for i, kv := range pkvs {
		switch {
		case kept[kv] > 0:
			kept[kv]--
		case slices.Contains(ckeys, pkeys[i]):
			return nil // a kept parameter with another value: not a variant
		case !slices.Contains(dropped, pkeys[i]):
			dropped = append(dropped, pkeys[i])
		}
	}
	for _, n := range kept {
		if n > 0 {
			return nil // c has a pair the page has not
		}
	}
	return dropped
}

// withoutParams returns canonical URL c without the parameters named in
// names; it is canonical still.
func withoutParams(c string, names []string) string {
	kvs, keys := queryPairs(c)
	if len(kvs) == 0 {
		return c
	}
	var b strings.Builder
	for i, kv := range kvs {
		if slices.Contains(names, keys[i]) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv)
	}
	bare, _, _ := strings.Cut(c, "?")
	if b.Len() == 0 {
		return bare
	}
	return bare + "?" + b.String()
}
