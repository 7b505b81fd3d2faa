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
		var msg string
		q.Text, msg = match.ParseText(t)
		p.note("q", msg)
	}
	o.APIKey = p.required("api_key")
	o.SiteID = p.required("site_id")
	o.RedirectURL = strings.TrimRight(p.required("redirect_url"), "/")
	if tok, ok := p.optional("tok"); ok {
		if validToken(tok) {
			o.Sign = appendToken(tok)
		} else {
			p.invalid("tok", "tok must be the site token of the shard manifest, not "+match.Quote(tok))
		}
	}
	q.Country = p.market("loc", match.ParseCountry)
	q.Lang = p.market("lang", match.ParseLang)
	names, kinds := match.SearchFieldNames, match.SearchKindNames
	if page {
		names, kinds = match.PageFieldNames, match.PageKindNames
	}
	if s, ok := p.optional("fields"); ok {
		var msgs []string
		o.Fields, msgs = match.ParseFields(s, names)
		p.note("fields", msgs...)
	}
	if s, ok := p.optional("logo.dim"); ok {
		var msg string
		o.LogoDim, msg = match.ParseLogoDim(s)
		p.note("logo.dim", msg)
	}
	if s, ok := p.optional("ad_type"); ok {
		var msgs []string
		q.Kinds, msgs = match.ParseKinds(s, kinds)
		p.note("ad_type", msgs...)
	}
	if !page {
		p.searchOptions(&q, &o)
	}
	return q, o, p.errs
}

// market reads loc or lang: a lower-cased two-letter code, or "" for none
// and for use_geo and use_locale, which the page resolves itself.
func (p *params) market(name string, parse func(string) (string, string)) string {
	s, ok := p.optional(name)
	if !ok {
		return ""
	}
	v, msg := parse(s)
	p.note(name, msg)
	if v == match.UseGeo || v == match.UseLocale {
		return ""
	}
	return v
}

// note records each non-empty message of match's parameter functions as
// a problem with param.
func (p *params) note(param string, msgs ...string) {
	for _, m := range msgs {
		if m != "" {
			p.invalid(param, m)
		}
	}
}

// searchOptions reads the search context's q_operator, ctx.dist, yk_tag,
// size and distinct_advertiser.
func (p *params) searchOptions(q *match.Query, o *match.LinkOptions) {
	op, _ := p.optional("q_operator")
	dist, _ := p.optional("ctx.dist")
	var param, msg string
	q.Operator, q.Dist, param, msg = match.ParseOperator(op, dist)
	p.note(param, msg)
	if s, ok := p.optional("yk_tag"); ok {
		o.YkTag, msg = match.ParseYkTag(s)
		p.note("yk_tag", msg)
	}
	q.Size = match.DefaultSize
	if s, ok := p.optional("size"); ok {
		q.Size, msg = match.ParseCount("size", s, 1, match.MaxSize)
		p.note("size", msg)
	}
	q.DistinctAdvertiser = match.DefaultDistinctAdvertiser
	if s, ok := p.optional("distinct_advertiser"); ok {
		q.DistinctAdvertiser, msg = match.ParseCount("distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
		p.note("distinct_advertiser", msg)
	}
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
