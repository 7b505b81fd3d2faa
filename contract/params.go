package contract

import (
	"unicode/utf8"

	"github.com/adlink/adlink/match"
)

// The parameter rules of the /v2 endpoints and the click redirect, in one
// place: the server's handlers and the page's module both read requests
// with them, so a value one accepts the other accepts, and the messages are
// the same. Each rule reads one parameter's value and returns, besides the
// value, "" or a message for the client that names the parameter and what
// it allows.

// values reads single-valued request parameters and collects what is
// wrong with them, so that one answer can name every bad parameter. The
// parsers of this package name it p, where the OpenAPI test looks for the
// parameters each endpoint reads.
type values struct {
	// v holds the parameters by name; when it is nil, pairs holds them
	// in request order.
	v map[string][]string
	// pairs suits the page's module, which reads a dozen parameters: a
	// scan of them costs it less than hashing each name into a map.
	pairs    []Pair
	problems []Problem
}

// Pair is one name=value of a query string, decoded.
type Pair struct {
	Name, Value string
	_           [0]func() // not comparable: no equality function in the module
}

// lookup returns the first value of a parameter and how many it has.
func (p *values) lookup(name string) (string, int) {
	if p.v != nil {
		vs := p.v[name]
		if len(vs) == 0 {
			return "", 0
		}
		return vs[0], len(vs)
	}
	first, n := "", 0
	for i := range p.pairs {
		if p.pairs[i].Name == name {
			if n == 0 {
				first = p.pairs[i].Value
			}
			n++
		}
	}
	return first, n
}

// single returns a parameter's value and how many it has, reporting a
// repeat (a problem: which value was meant cannot be told).
func (p *values) single(name string) (string, int) {
	v, n := p.lookup(name)
	if n > 1 {
		p.invalid(name, name+" is given "+match.Itoa(n)+" times; give it once")
		return "", n
	}
	return v, n
}

// Get returns a parameter's value; ok is false when it is absent or
// repeated.
func (p *values) Get(name string) (string, bool) {
	v, n := p.single(name)
	return v, n == 1
}

// Required returns a parameter that must be there and not blank.
func (p *values) Required(name string) string {
	s, n := p.single(name)
	switch {
	case n > 1:
		return "" // single reported it
	case n == 0 || match.TrimSpace(s) == "":
		p.problems = append(p.problems, Problem{Code: CodeMissingParameter, Param: name, Message: name + " is required"})
		return ""
	}
	return s
}

// Optional returns an optional parameter; empty counts as absent, as an
// HTML form sends an unset field.
func (p *values) Optional(name string) (string, bool) {
	s, ok := p.Get(name)
	return s, ok && s != ""
}

// invalid records a bad value of param. It and note run only on bad
// input: not inlined, as their appends at each caller cost the module
// bytes.
//
//go:noinline
func (p *values) invalid(param, msg string) {
	p.problems = append(p.problems, Problem{Code: CodeInvalidParameter, Param: param, Message: msg})
}

// note records each non-empty message of the rules below as a bad value of
// param.
//
//go:noinline
func (p *values) note(param string, msgs ...string) {
	for _, m := range msgs {
		if m != "" {
			p.invalid(param, m)
		}
	}
}

// Parse reads an optional parameter with one of the rules below; "" when
// it is absent or bad (a problem then).
func (p *values) Parse(name string, rule func(string) (string, string)) string {
	s, ok := p.Optional(name)
	if !ok {
		return ""
	}
	v, msg := rule(s)
	p.note(name, msg)
	return v
}

// The special values of loc and lang: the server resolves them from the
// request's headers, the page before it asks its module.
const (
	UseGeo    = "use_geo"
	UseLocale = "use_locale"
)

// ParseText checks q: trimmed, valid UTF-8, at most match.MaxQueryBytes.
func ParseText(s string) (string, string) {
	s = match.TrimSpace(s)
	switch {
	case !utf8.ValidString(s):
		return "", "q is not valid UTF-8"
	case len(s) > match.MaxQueryBytes:
		return "", "q is " + match.Itoa(len(s)) + " bytes long; the most is " + match.Itoa(match.MaxQueryBytes)
	}
	return s, ""
}

// ParseCountry reads loc: a two-letter ISO 3166-1 code in either case
// (returned lower case), or UseGeo (returned as is). Two letters that name
// no country (xx) are refused with the same words as three.
func ParseCountry(s string) (string, string) {
	const msg = "loc must be a two-letter ISO 3166 country code (de, US) or use_geo, not "
	v, m := parseCode(s, UseGeo, msg)
	if m == "" && v != UseGeo && !IsCountry(v) {
		m = msg + match.Quote(s)
		if v == "uk" {
			m += " (the United Kingdom is gb)"
		}
		return "", m
	}
	return v, m
}

// IsCountry reports whether s is an assigned ISO 3166-1 alpha-2 code, in
// either case.
func IsCountry(s string) bool {
	if len(s) != 2 {
		return false
	}
	a, b := (s[0]|0x20)-'a', (s[1]|0x20)-'a'
	if a >= 26 || b >= 26 {
		return false
	}
	i := int(a)*26 + int(b)
	return countries[i>>3]&(1<<(i&7)) != 0
}

// countries is the set of assigned ISO 3166-1 alpha-2 codes as a bitmap:
// bit a*26+b for the code of letters a and b (0 for A). A map or a list
// would cost the module many times its 85 bytes; contract's tests check it
// against the readable list.
const countries = "\x78\x59\xdf\xee\xef\xbd\xdd\xde\x27\x3f\x84\x15\x80\xd4\x00\x0e\x00\x5c\x09\xb0\x9f\xfb\x15\x00\x8d\x06\x18\x78\x0f\x40\x40\x03\x00\x1d\x2b\xf4\x41\x81\x4f\xfd\xfc\xff\xd7\x25\x4b\x08\x00\x01\x40\x3c\x8f\x53\x01\x00\x00\x40\x00\x51\xf1\xfd\xe7\x3a\xbb\x9f\x9a\x41\x10\x04\x57\x85\x40\x00\x02\x40\x00\x00\x00\x00\x10\x00\x08\x04\x40\x00\x01"

func parseCode(s, special, msg string) (string, string) {
	if s == special {
		return s, ""
	}
	if len(s) == 2 && s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z' && s[1]|0x20 >= 'a' && s[1]|0x20 <= 'z' {
		if s[0] >= 'a' && s[1] >= 'a' {
			return s, ""
		}
		return string([]byte{s[0] | 0x20, s[1] | 0x20}), ""
	}
	return "", msg + match.Quote(s)
}

// ParseFields reads a comma-separated fields list against the names a
// context allows (SearchFieldNames or PageFieldNames); blank items are
// skipped. It returns a message for the first bad item, as for any other
// bad value: one per item would let a list of thousands within the URL's
// bound make an answer of megabytes.
func ParseFields(s string, allowed []string) (match.Fields, []string) {
	var f match.Fields
	for rest, more := s, true; more; {
		var item string
		item, rest, more = match.CutByte(rest, ',')
		item = match.TrimSpace(item)
		if item == "" {
			continue
		}
		v, ok := match.ParseField(item)
		if !ok || !contains(allowed, item) {
			return 0, []string{"fields must be a comma-separated list of " + match.JoinStrings(allowed, ", ") + "; " + match.Quote(item) + " is not one"}
		}
		f |= v
	}
	return f, nil
}

// ParseLogoDim reads logo.dim, in either case ("90x90" is "90X90").
func ParseLogoDim(s string) (string, string) {
	for _, d := range match.LogoDims {
		if equalFoldASCII(d, s) {
			return d, ""
		}
	}
	return "", "logo.dim must be one of " + match.JoinStrings(match.LogoDims, ", ") + ", not " + match.Quote(s)
}

// SearchFieldNames and PageFieldNames list the fields values each context
// accepts, in the order error messages name them. "logoad_type" is spelled
// as the seed lists it and means logo and ad_type together.
var (
	SearchFieldNames = []string{"price", "manufacturer", "logoad_type", "logo", "ad_type", "description", "advertiser", "gtin", "category"}
	PageFieldNames   = []string{"price", "manufacturer", "logo", "ad_type"}
)

// SearchKindNames and PageKindNames are the ad_type values of each context.
var (
	SearchKindNames = []string{"advertiser", "product", "coupon"}
	PageKindNames   = []string{"advertiser", "product"}
)

// ParseKinds reads ad_type: values separated by commas, spaces or '+', so
// the seed's "product coupon" is two values. It returns a message for the
// first bad item, as ParseFields does.
func ParseKinds(s string, allowed []string) (match.Kinds, []string) {
	var k match.Kinds
	for _, item := range splitKinds(s) {
		kind, ok := match.ParseKind(item)
		if !ok || !contains(allowed, item) {
			return 0, []string{"ad_type must be a list of " + match.JoinStrings(allowed, ", ") + "; " + match.Quote(item) + " is not one"}
		}
		k = k.Add(kind)
	}
	return k, nil
}

// ParseOperator reads q_operator and ctx.dist together, since and needs
// none: absent ctx.dist is implied, high or low given with and is a
// problem. Empty strings are absent parameters. A message comes with the
// parameter it is about.
func ParseOperator(op, dist string) (match.Operator, match.Dist, string, string) {
	var o match.Operator
	var d match.Dist
	switch op {
	case "", "or":
	case "and":
		o = match.OpAnd
	default:
		return 0, 0, "q_operator", "q_operator must be and or or, not " + match.Quote(op)
	}
	switch dist {
	case "", "high":
	case "low":
		d = match.DistLow
	case "none":
		d = match.DistNone
	default:
		return 0, 0, "ctx.dist", "ctx.dist must be high, low or none, not " + match.Quote(dist)
	}
	if o == match.OpAnd {
		if dist != "" && d != match.DistNone {
			return 0, 0, "q_operator", "q_operator=and needs ctx.dist=none (or no ctx.dist), not ctx.dist=" + dist
		}
		d = match.DistNone
	}
	return o, d, "", ""
}

// ParseYkTag reads yk_tag: 1 to 64 of A-Z, a-z, 0-9, '_', '-' and ':'.
func ParseYkTag(s string) (string, string) {
	ok := len(s) > 0 && len(s) <= 64
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '-'
	}
	if !ok {
		return "", "yk_tag must be 1 to 64 of A-Z, a-z, 0-9, _, - and :, not " + match.Quote(s)
	}
	return s, ""
}

// ParseCount reads a whole number from lo to hi for the parameter name:
// digits only, no sign, never clamped; leading zeros count for nothing,
// however many (05 and 0000000005 are 5).
func ParseCount(name, s string, lo, hi int) (int, string) {
	n := 0
	ok := len(s) > 0
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] >= '0' && s[i] <= '9'
		if n <= hi { // past hi it is refused; growing no further, it cannot overflow
			n = n*10 + int(s[i]-'0')
		}
	}
	if !ok || n < lo || n > hi {
		return 0, name + " must be a whole number from " + match.Itoa(lo) + " to " + match.Itoa(hi) + ", not " + match.Quote(s)
	}
	return n, ""
}

// contains reports whether list holds s.
//
// It and the other small helpers of parameter parsing (splitKinds,
// match.ParseKind, match.ParseField, match.JoinStrings) are not inlined:
// they run once a request, and copies of them in each caller cost the
// module bytes that every first view downloads.
//
//go:noinline
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// equalFoldASCII compares a and b ignoring the case of ASCII letters.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// splitKinds splits an ad_type value at commas, spaces and '+', dropping
// empty items.
// Not inlined, for the module's size: see contains.
//
//go:noinline
func splitKinds(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' || s[i] == ' ' || s[i] == '+' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// MalformedQuery returns "" for a query string that url.ParseQuery reads
// without error, else the message a /v2 endpoint refuses it with: more
// than MaxQueryParams pairs, a ';' in a pair (net/url takes it for an old
// separator, which it refuses) or the first bad %-escape. The server and
// the page's module both ask it, so they refuse the same requests with the
// same words; the module cannot afford net/url.
func MalformedQuery(s string) string {
	if countByte(s, '&')+1 > MaxQueryParams {
		return "the query string is malformed: number of URL query parameters exceeded limit"
	}
	bad := ""
	for s != "" {
		var kv string
		kv, s, _ = match.CutByte(s, '&')
		if _, _, semi := match.CutByte(kv, ';'); semi {
			return "the query string is malformed: invalid semicolon separator in query"
		}
		if bad != "" {
			continue
		}
		k, v, _ := match.CutByte(kv, '=')
		// net/url reads the name first and drops the pair at its error.
		if e := badEscape(k); e != "" {
			bad = e
		} else {
			bad = badEscape(v)
		}
	}
	if bad != "" {
		return "the query string is malformed: invalid URL escape " + match.Quote(bad)
	}
	return ""
}

// MaxQueryParams is the most name=value pairs ("&" plus one) a query
// string may have: net/url's default (GODEBUG urlmaxqueryparams), so the
// server and the page's module refuse the same ones.
const MaxQueryParams = 10000

func countByte(s string, c byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
		}
	}
	return n
}

// badEscape returns the first malformed %-escape of s, at most three bytes
// from its '%', or "".
func badEscape(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !match.IsHex(s[i+1]) || !match.IsHex(s[i+2]) {
				return s[i:min(i+3, len(s))]
			}
			i += 2
		}
	}
	return ""
}

// MaxCallback is the longest JSONP callback name accepted.
const MaxCallback = 64

// ValidCallback reports whether s is a JSONP callback the server will
// call: dotted JavaScript identifiers,
// ^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$, at most MaxCallback bytes.
// Anything else could smuggle script into the response.
func ValidCallback(s string) bool {
	if len(s) == 0 || len(s) > MaxCallback {
		return false
	}
	start := true // at the start of an identifier
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if start {
				return false
			}
			start = true
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case c >= '0' && c <= '9':
			if start {
				return false
			}
		default:
			return false
		}
		start = false
	}
	return !start
}

// parseCallback reads the JSONP callback; an invalid one is a problem,
// and the error is then written as plain JSON.
func parseCallback(p *values) string {
	s, ok := p.Optional("callback")
	if !ok {
		return ""
	}
	if !ValidCallback(s) {
		p.invalid("callback", "callback must be a JavaScript function name (letters, digits, _ and $, dotted) of at most "+match.Itoa(MaxCallback)+" characters")
		return ""
	}
	return s
}
