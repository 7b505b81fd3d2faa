package main

import (
	"unicode/utf8"
	"unsafe"

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

// params are a request's decoded parameters, read with match's rules.
type params struct{ match.Values }

// parseQuery appends the decoded name=value pairs of a URL query string
// to dst; "&&" adds none. It reads what match.MalformedQuery lets
// through, as net/url does; it keeps a bad escape literally and takes ';'
// for a plain byte, but parseRequest refuses those first, as the server
// does. Components without escapes are substrings of s; the others are
// decoded into one buffer for the whole query (an allocation apiece costs
// the module dearly).
func parseQuery(s string, dst []match.Pair) []match.Pair {
	var buf []byte
	for s != "" {
		var kv string
		kv, s, _ = match.CutByte(s, '&')
		if kv == "" {
			continue
		}
		k, val, _ := match.CutByte(kv, '=')
		var p match.Pair
		p.Name, buf = unescape(k, buf, len(kv)+len(s))
		p.Value, buf = unescape(val, buf, len(val)+len(s))
		dst = append(dst, p)
	}
	return dst
}

// unescape decodes '+' and %XX of a query component. A decoded one is
// appended to buf, which is made with room for rest more bytes when it
// lacks room for s: decoded text is never longer than its source, and the
// strings already handed out keep the bytes they point at, as buf only
// grows into a new array.
func unescape(s string, buf []byte, rest int) (string, []byte) {
	// A plain loop: strings.ContainsAny costs the module a call per byte.
	i := 0
	for i < len(s) && s[i] != '+' && s[i] != '%' {
		i++
	}
	if i == len(s) {
		return s, buf
	}
	if cap(buf)-len(buf) < len(s) {
		buf = make([]byte, 0, max(rest, len(s)))
	}
	start := len(buf)
	buf = append(buf, s[:i]...)
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			buf = append(buf, ' ')
		case c == '%' && i+2 < len(s) && match.IsHex(s[i+1]) && match.IsHex(s[i+2]):
			buf = append(buf, match.Unhex(s[i+1])<<4|match.Unhex(s[i+2]))
			i += 2
		default:
			buf = append(buf, c)
		}
	}
	return unsafe.String(&buf[start], len(buf)-start), buf
}

// parseRequest reads a match_search (page false) or match_page request into
// the query and the link options the server would use for the same request.
// The pairs go into *scratch, when given, whose memory they reuse.
func parseRequest(s string, page bool, scratch *[]match.Pair) (match.Query, match.LinkOptions, []match.Problem) {
	if msg := match.MalformedQuery(s); msg != "" {
		return match.Query{}, match.LinkOptions{}, []match.Problem{{Code: match.ProblemInvalid, Message: msg}}
	}
	var pairs []match.Pair
	if scratch != nil {
		pairs = parseQuery(s, (*scratch)[:0])
		*scratch = pairs
	} else {
		pairs = parseQuery(s, nil)
	}
	p := params{match.Values{Pairs: pairs}}
	q := match.Query{Page: page}
	o := match.LinkOptions{Context: match.ContextSearch}
	if page {
		o.Context = match.ContextPage
		q.Title, _ = p.Optional("title")
		q.Text, _ = p.Optional("text")
		if !utf8.ValidString(q.Title) || !utf8.ValidString(q.Text) {
			p.Invalid("text", "text is not valid UTF-8")
		}
	} else if t := p.Required("q"); t != "" {
		var msg string
		q.Text, msg = match.ParseText(t)
		p.Note("q", msg)
	}
	o.APIKey = p.Required("api_key")
	o.SiteID = p.Required("site_id")
	o.RedirectURL = trimSlashes(p.Required("redirect_url"))
	if tok, ok := p.Optional("tok"); ok {
		if validToken(tok) {
			o.Sign = appendToken(tok)
		} else {
			p.Invalid("tok", "tok must be the site token of the shard manifest, not "+match.Quote(tok))
		}
	}
	q.Country = p.market("loc", match.ParseCountry)
	q.Lang = p.market("lang", match.ParseLang)
	names, kinds := match.SearchFieldNames, match.SearchKindNames
	if page {
		names, kinds = match.PageFieldNames, match.PageKindNames
	}
	if s, ok := p.Optional("fields"); ok {
		var msgs []string
		o.Fields, msgs = match.ParseFields(s, names)
		p.Note("fields", msgs...)
	}
	if s, ok := p.Optional("logo.dim"); ok {
		var msg string
		o.LogoDim, msg = match.ParseLogoDim(s)
		p.Note("logo.dim", msg)
	}
	if s, ok := p.Optional("ad_type"); ok {
		var msgs []string
		q.Kinds, msgs = match.ParseKinds(s, kinds)
		p.Note("ad_type", msgs...)
	}
	if !page {
		p.searchOptions(&q, &o)
	}
	return q, o, p.Problems
}

// market reads loc or lang: a lower-cased two-letter code, or "" for none
// and for use_geo and use_locale, which the page resolves itself.
func (p *params) market(name string, parse func(string) (string, string)) string {
	s, ok := p.Optional(name)
	if !ok {
		return ""
	}
	v, msg := parse(s)
	p.Note(name, msg)
	if v == match.UseGeo || v == match.UseLocale {
		return ""
	}
	return v
}

// searchOptions reads the search context's q_operator, ctx.dist, yk_tag,
// size and distinct_advertiser.
func (p *params) searchOptions(q *match.Query, o *match.LinkOptions) {
	op, _ := p.Optional("q_operator")
	dist, _ := p.Optional("ctx.dist")
	var param, msg string
	q.Operator, q.Dist, param, msg = match.ParseOperator(op, dist)
	p.Note(param, msg)
	if s, ok := p.Optional("yk_tag"); ok {
		o.YkTag, msg = match.ParseYkTag(s)
		p.Note("yk_tag", msg)
	}
	q.Size = match.DefaultSize
	if s, ok := p.Optional("size"); ok {
		q.Size, msg = match.ParseCount("size", s, 1, match.MaxSize)
		p.Note("size", msg)
	}
	q.DistinctAdvertiser = match.DefaultDistinctAdvertiser
	if s, ok := p.Optional("distinct_advertiser"); ok {
		q.DistinctAdvertiser, msg = match.ParseCount("distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
		p.Note("distinct_advertiser", msg)
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

// trimSlashes drops the trailing slashes of a redirect base.
func trimSlashes(s string) string {
	for s != "" && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
