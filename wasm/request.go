package main

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/adlink/adlink/match"
)

// A request is the query string of the matching /v2 endpoint plus
// redirect_url, the base of the click URLs, and tok, the site token of the
// shard manifest that the click URLs carry:
//
//	match_search: q=lg+handy&api_key=demo&site_id=demo&loc=de&lang=de&ctx.dist=low&redirect_url=http%3A%2F%2Flocalhost%3A8080
//	match_page:   text=...&title=...&api_key=demo&site_id=demo&loc=de&lang=de&fields=price&redirect_url=...
//
// It is parsed here by hand, with the backend's option semantics, because
// net/url and fmt would cost the module tens of kilobytes. Empty values
// count as absent, repeated names are an error and unknown names are
// ignored, as on the server. loc=use_geo and lang=use_locale mean "no
// filter": the page resolves them before it asks.

// problem is one bad parameter, as the server's error body names it.
type problem struct {
	code, param, msg string
}

const (
	codeMissing = "missing_parameter"
	codeInvalid = "invalid_parameter"
)

// params are a request's decoded parameters.
type params struct {
	v    map[string][]string
	errs []problem
}

// parseQuery decodes a URL query string. Bad escapes are kept literally,
// as a browser's URLSearchParams does.
func parseQuery(s string) map[string][]string {
	v := make(map[string][]string)
	for s != "" {
		var kv string
		kv, s, _ = strings.Cut(s, "&")
		if kv == "" {
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		k = unescape(k)
		v[k] = append(v[k], unescape(val))
	}
	return v
}

// unescape decodes '+' and %XX of a query component.
func unescape(s string) string {
	if !strings.ContainsAny(s, "+%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

func (p *params) invalid(param, msg string) {
	p.errs = append(p.errs, problem{codeInvalid, param, msg})
}

// get returns a parameter given once; a repeated one is a problem.
func (p *params) get(name string) (string, bool) {
	switch vs := p.v[name]; len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	default:
		p.invalid(name, name+" is given "+strconv.Itoa(len(vs))+" times; give it once")
		return "", false
	}
}

// required returns a parameter that must be there and not blank.
func (p *params) required(name string) string {
	s, ok := p.get(name)
	if !ok && len(p.v[name]) > 1 {
		return ""
	}
	if strings.TrimSpace(s) == "" {
		p.errs = append(p.errs, problem{codeMissing, name, name + " is required"})
		return ""
	}
	return s
}

// optional returns an optional parameter; empty counts as absent.
func (p *params) optional(name string) (string, bool) {
	s, ok := p.get(name)
	return s, ok && s != ""
}

// parseRequest reads a match_search (page false) or match_page request into
// the query and the link options the server would use for the same request.
func parseRequest(s string, page bool) (match.Query, match.LinkOptions, []problem) {
	p := params{v: parseQuery(s)}
	q := match.Query{Page: page}
	o := match.LinkOptions{Context: match.ContextSearch}
	if page {
		o.Context = match.ContextPage
		q.Title, _ = p.optional("title")
		q.Text, _ = p.optional("text")
		if !utf8.ValidString(q.Title) || !utf8.ValidString(q.Text) {
			p.invalid("text", "text is not valid UTF-8")
		}
	} else if t := p.required("q"); t != "" {
		q.Text = strings.TrimSpace(t)
		switch {
		case !utf8.ValidString(q.Text):
			p.invalid("q", "q is not valid UTF-8")
		case len(q.Text) > match.MaxQueryBytes:
			p.invalid("q", "q is "+strconv.Itoa(len(q.Text))+" bytes long; the most is "+strconv.Itoa(match.MaxQueryBytes))
		}
	}
	o.APIKey = p.required("api_key")
	o.SiteID = p.required("site_id")
	o.RedirectURL = strings.TrimRight(p.required("redirect_url"), "/")
	if tok, ok := p.optional("tok"); ok {
		if validToken(tok) {
			o.Sign = appendToken(tok)
		} else {
			p.invalid("tok", "tok must be the site token of the shard manifest, not "+strconv.Quote(tok))
		}
	}
	q.Country = p.market("loc", "use_geo", "loc must be a two-letter ISO 3166 country code (de, US) or use_geo")
	q.Lang = p.market("lang", "use_locale", "lang must be a two-letter ISO 639-1 language code (de, en) or use_locale")
	if s, ok := p.optional("fields"); ok {
		names := match.SearchFieldNames
		if page {
			names = match.PageFieldNames
		}
		o.Fields = p.fields(s, names)
	}
	if s, ok := p.optional("logo.dim"); ok {
		o.LogoDim = ""
		for _, d := range match.LogoDims {
			if strings.EqualFold(d, s) {
				o.LogoDim = d
			}
		}
		if o.LogoDim == "" {
			p.invalid("logo.dim", "logo.dim must be one of "+strings.Join(match.LogoDims, ", ")+", not "+strconv.Quote(s))
		}
	}
	if s, ok := p.optional("ad_type"); ok {
		q.Kinds = p.kinds(s)
	}
	if !page {
		p.searchOptions(&q, &o)
	}
	return q, o, p.errs
}

// market reads loc or lang: a lower-cased two-letter code, or "" for none
// and for the value the page resolves itself.
func (p *params) market(name, special, msg string) string {
	s, ok := p.optional(name)
	switch {
	case !ok || s == special:
		return ""
	case len(s) == 2 && isLetter(s[0]) && isLetter(s[1]):
		return strings.ToLower(s)
	}
	p.invalid(name, msg+", not "+strconv.Quote(s))
	return ""
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// searchOptions reads the search context's q_operator, ctx.dist, yk_tag,
// size and distinct_advertiser.
func (p *params) searchOptions(q *match.Query, o *match.LinkOptions) {
	op, opGiven := p.optional("q_operator")
	switch op {
	case "", "or":
	case "and":
		q.Operator = match.OpAnd
	default:
		opGiven = false
		p.invalid("q_operator", "q_operator must be and or or, not "+strconv.Quote(op))
	}
	dist, distGiven := p.optional("ctx.dist")
	switch dist {
	case "", "high":
	case "low":
		q.Dist = match.DistLow
	case "none":
		q.Dist = match.DistNone
	default:
		distGiven = false
		p.invalid("ctx.dist", "ctx.dist must be high, low or none, not "+strconv.Quote(dist))
	}
	if opGiven && q.Operator == match.OpAnd {
		if distGiven && q.Dist != match.DistNone {
			p.invalid("q_operator", "q_operator=and needs ctx.dist=none (or no ctx.dist), not ctx.dist="+dist)
		}
		q.Dist = match.DistNone
	}
	if s, ok := p.optional("yk_tag"); ok {
		if validYkTag(s) {
			o.YkTag = s
		} else {
			p.invalid("yk_tag", "yk_tag must be 1 to 64 of A-Z, a-z, 0-9, _, - and :, not "+strconv.Quote(s))
		}
	}
	q.Size = match.DefaultSize
	if s, ok := p.optional("size"); ok {
		q.Size = p.number("size", s, 1, match.MaxSize)
	}
	q.DistinctAdvertiser = match.DefaultDistinctAdvertiser
	if s, ok := p.optional("distinct_advertiser"); ok {
		q.DistinctAdvertiser = p.number("distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
	}
}

// fields reads a comma-separated fields list against the allowed names.
func (p *params) fields(s string, allowed []string) match.Fields {
	var f match.Fields
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		v, ok := match.ParseField(item)
		known := false
		for _, a := range allowed {
			known = known || a == item
		}
		if !ok || !known {
			p.invalid("fields", "fields must be a comma-separated list of "+strings.Join(allowed, ", ")+"; "+strconv.Quote(item)+" is not one")
			continue
		}
		f |= v
	}
	return f
}

// kinds reads ad_type: values separated by commas, spaces or '+'.
func (p *params) kinds(s string) match.Kinds {
	var k match.Kinds
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '+' }) {
		kind, ok := match.ParseKind(item)
		if !ok {
			p.invalid("ad_type", "ad_type must be a list of advertiser, product and coupon; "+strconv.Quote(item)+" is not one")
			continue
		}
		k = k.Add(kind)
	}
	return k
}

// number reads a decimal integer in [lo, hi]; no sign, no clamping.
func (p *params) number(name, s string, lo, hi int) int {
	n := 0
	ok := len(s) > 0 && len(s) <= 4
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] >= '0' && s[i] <= '9'
		n = n*10 + int(s[i]-'0')
	}
	if !ok || n < lo || n > hi {
		p.invalid(name, name+" must be a whole number from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi)+", not "+strconv.Quote(s))
		return 0
	}
	return n
}

// appendToken returns a Sign hook that appends the site token the shard
// manifest handed the page, "&tok=...", to each click URL: the page holds
// no secret to sign with, and the server bills a click only with a valid
// sig or tok.
func appendToken(tok string) func(dst, query []byte) []byte {
	return func(dst, _ []byte) []byte {
		return append(append(dst, "&tok="...), tok...)
	}
}

// validToken reports whether s can be a site token: 1 to 128 of A-Z, a-z,
// 0-9, '.', '_' and '-', none of which a query string escapes.
func validToken(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// validYkTag reports whether s matches ^[A-Za-z0-9_:-]{1,64}$.
func validYkTag(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
