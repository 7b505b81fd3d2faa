package match

import (
	"unicode/utf8"
)

// The parameter rules of the /v2 endpoints, in one place: the server's
// handlers and the page's module both read requests with them, so a value
// one accepts the other accepts, and the messages are the same. Each
// function reads one parameter's value and returns, besides the value, ""
// or a message for the client that names the parameter and what it allows.

// The codes of a Problem, as the error body names them.
const (
	ProblemMissing = "missing_parameter"
	ProblemInvalid = "invalid_parameter"
)

// Problem is one bad parameter: its code, the parameter and a message for
// the client.
type Problem struct {
	Code, Param, Message string
}

// Values reads single-valued request parameters and collects what is wrong
// with them, so that one answer can name every bad parameter.
type Values struct {
	// V holds the parameters by name; when it is nil, Pairs holds them
	// in request order.
	V map[string][]string
	// Pairs suits the page's module, which reads a dozen parameters: a
	// scan of them costs it less than hashing each name into a map.
	Pairs    []Pair
	Problems []Problem
}

// Pair is one name=value of a query string, decoded.
type Pair struct{ Name, Value string }

// lookup returns the first value of a parameter and how many it has.
func (p *Values) lookup(name string) (string, int) {
	if p.V != nil {
		vs := p.V[name]
		if len(vs) == 0 {
			return "", 0
		}
		return vs[0], len(vs)
	}
	first, n := "", 0
	for i := range p.Pairs {
		if p.Pairs[i].Name == name {
			if n == 0 {
				first = p.Pairs[i].Value
			}
			n++
		}
	}
	return first, n
}

// single returns a parameter's value and how many it has, reporting a
// repeat (a problem: which value was meant cannot be told).
func (p *Values) single(name string) (string, int) {
	v, n := p.lookup(name)
	if n > 1 {
		p.Invalid(name, name+" is given "+itoa(n)+" times; give it once")
		return "", n
	}
	return v, n
}

// Get returns a parameter's value; ok is false when it is absent or
// repeated.
func (p *Values) Get(name string) (string, bool) {
	v, n := p.single(name)
	return v, n == 1
}

// Required returns a parameter that must be there and not blank.
func (p *Values) Required(name string) string {
	s, n := p.single(name)
	switch {
	case n > 1:
		return "" // single reported it
	case n == 0 || TrimSpace(s) == "":
		p.Problems = append(p.Problems, Problem{ProblemMissing, name, name + " is required"})
		return ""
	}
	return s
}

// Optional returns an optional parameter; empty counts as absent, as an
// HTML form sends an unset field.
func (p *Values) Optional(name string) (string, bool) {
	s, ok := p.Get(name)
	return s, ok && s != ""
}

// Invalid records a bad value of param. It and Note run only on bad
// input: not inlined, their appends at each caller cost the module 0.2 KB.
//
//go:noinline
func (p *Values) Invalid(param, msg string) {
	p.Problems = append(p.Problems, Problem{ProblemInvalid, param, msg})
}

// Note records each non-empty message of the functions below as a bad
// value of param.
//
//go:noinline
func (p *Values) Note(param string, msgs ...string) {
	for _, m := range msgs {
		if m != "" {
			p.Invalid(param, m)
		}
	}
}

// Parse reads an optional parameter with one of the rules below; "" when
// it is absent or bad (a problem then).
func (p *Values) Parse(name string, rule func(string) (string, string)) string {
	s, ok := p.Optional(name)
	if !ok {
		return ""
	}
	v, msg := rule(s)
	p.Note(name, msg)
	return v
}

// The special values of loc and lang.
const (
	UseGeo    = "use_geo"
	UseLocale = "use_locale"
)

// ParseText checks q: trimmed, valid UTF-8, at most MaxQueryBytes.
func ParseText(s string) (string, string) {
	s = TrimSpace(s)
	switch {
	case !utf8.ValidString(s):
		return "", "q is not valid UTF-8"
	case len(s) > MaxQueryBytes:
		return "", "q is " + itoa(len(s)) + " bytes long; the most is " + itoa(MaxQueryBytes)
	}
	return s, ""
}

// ParseCountry reads loc: a two-letter ISO 3166 code in either case
// (returned lower case), or UseGeo (returned as is).
func ParseCountry(s string) (string, string) {
	return parseCode(s, UseGeo, "loc must be a two-letter ISO 3166 country code (de, US) or use_geo, not ")
}

// ParseLang reads lang: a two-letter ISO 639-1 code in either case
// (returned lower case), or UseLocale (returned as is).
func ParseLang(s string) (string, string) {
	return parseCode(s, UseLocale, "lang must be a two-letter ISO 639-1 language code (de, en) or use_locale, not ")
}

func parseCode(s, special, msg string) (string, string) {
	if s == special {
		return s, ""
	}
	if l := lower(s); isAlpha2(l) {
		return l, ""
	}
	return "", msg + Quote(s)
}

// ParseFields reads a comma-separated fields list against the names a
// context allows (SearchFieldNames or PageFieldNames); blank items are
// skipped. It returns a message for each bad item.
func ParseFields(s string, allowed []string) (Fields, []string) {
	var f Fields
	var msgs []string
	for rest, more := s, true; more; {
		var item string
		item, rest, more = CutByte(rest, ',')
		item = TrimSpace(item)
		if item == "" {
			continue
		}
		v, ok := ParseField(item)
		if !ok || !contains(allowed, item) {
			msgs = append(msgs, "fields must be a comma-separated list of "+joinStrings(allowed, ", ")+"; "+Quote(item)+" is not one")
			continue
		}
		f |= v
	}
	return f, msgs
}

// ParseLogoDim reads logo.dim, in either case ("90x90" is "90X90").
func ParseLogoDim(s string) (string, string) {
	for _, d := range LogoDims {
		if equalFoldASCII(d, s) {
			return d, ""
		}
	}
	return "", "logo.dim must be one of " + joinStrings(LogoDims, ", ") + ", not " + Quote(s)
}

// SearchKindNames and PageKindNames are the ad_type values of each context.
var (
	SearchKindNames = []string{"advertiser", "product", "coupon"}
	PageKindNames   = []string{"advertiser", "product"}
)

// ParseKinds reads ad_type: values separated by commas, spaces or '+', so
// the seed's "product coupon" is two values. It returns a message for
// each bad item.
func ParseKinds(s string, allowed []string) (Kinds, []string) {
	var k Kinds
	var msgs []string
	for _, item := range splitKinds(s) {
		kind, ok := ParseKind(item)
		if !ok || !contains(allowed, item) {
			msgs = append(msgs, "ad_type must be a list of "+joinStrings(allowed, ", ")+"; "+Quote(item)+" is not one")
			continue
		}
		k = k.Add(kind)
	}
	return k, msgs
}

// ParseOperator reads q_operator and ctx.dist together, since and needs
// none: absent ctx.dist is implied, high or low given with and is a
// problem. Empty strings are absent parameters. A message comes with the
// parameter it is about.
func ParseOperator(op, dist string) (Operator, Dist, string, string) {
	var o Operator
	var d Dist
	switch op {
	case "", "or":
	case "and":
		o = OpAnd
	default:
		return 0, 0, "q_operator", "q_operator must be and or or, not " + Quote(op)
	}
	switch dist {
	case "", "high":
	case "low":
		d = DistLow
	case "none":
		d = DistNone
	default:
		return 0, 0, "ctx.dist", "ctx.dist must be high, low or none, not " + Quote(dist)
	}
	if o == OpAnd {
		if dist != "" && d != DistNone {
			return 0, 0, "q_operator", "q_operator=and needs ctx.dist=none (or no ctx.dist), not ctx.dist=" + dist
		}
		d = DistNone
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
		return "", "yk_tag must be 1 to 64 of A-Z, a-z, 0-9, _, - and :, not " + Quote(s)
	}
	return s, ""
}

// ParseCount reads a whole number from lo to hi for the parameter name:
// digits only, no sign, never clamped.
func ParseCount(name, s string, lo, hi int) (int, string) {
	n := 0
	ok := len(s) > 0 && len(s) <= 4
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] >= '0' && s[i] <= '9'
		n = n*10 + int(s[i]-'0')
	}
	if !ok || n < lo || n > hi {
		return 0, name + " must be a whole number from " + itoa(lo) + " to " + itoa(hi) + ", not " + Quote(s)
	}
	return n, ""
}

// Quote shows a client's value in a message, in double quotes and cut to a
// readable length. Quotes and backslashes are escaped with a backslash,
// \n \t \r by name, other control bytes and bytes that are not UTF-8 as
// \xNN; other characters stand as they are (by hand: strconv.Quote's
// tables of printable characters cost the module kilobytes). The message
// is JSON-escaped where it is written.
func Quote(s string) string {
	const most = 40
	more := ""
	if len(s) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, more = s[:cut], "..."
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2+len(more))
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	b = append(b, '"')
	return string(b) + more
}

// contains reports whether list holds s.
//
// It and the other small helpers of parameter parsing (splitKinds,
// ParseKind, ParseField, joinStrings) are not inlined (go:noinline): they
// run once a request or once an ad shown, and copies of them in each
// caller cost the module bytes every first view downloads (1.6 KB with
// zstd together; BenchmarkQuery no slower).
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
// separator, which it refuses) or the first bad %-escape. The server and the page's module both ask it,
// so they refuse the same requests with the same words; the module cannot
// afford net/url.
func MalformedQuery(s string) string {
	if countByte(s, '&')+1 > MaxQueryParams {
		return "the query string is malformed: number of URL query parameters exceeded limit"
	}
	bad := ""
	for s != "" {
		var kv string
		kv, s, _ = CutByte(s, '&')
		if _, _, semi := CutByte(kv, ';'); semi {
			return "the query string is malformed: invalid semicolon separator in query"
		}
		if bad != "" {
			continue
		}
		k, v, _ := CutByte(kv, '=')
		// net/url reads the name first and drops the pair at its error.
		if e := badEscape(k); e != "" {
			bad = e
		} else {
			bad = badEscape(v)
		}
	}
	if bad != "" {
		return "the query string is malformed: invalid URL escape " + Quote(bad)
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
			if i+2 >= len(s) || !IsHex(s[i+1]) || !IsHex(s[i+2]) {
				return s[i:min(i+3, len(s))]
			}
			i += 2
		}
	}
	return ""
}

// IsHex reports whether c is a hexadecimal digit.
func IsHex(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}

// Unhex returns the value of the hexadecimal digit c (IsHex(c)).
func Unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
