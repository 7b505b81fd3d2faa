package contract

import (
	"unicode/utf8"
	"unsafe"

	"github.com/adlink/adlink/match"
)

// A request to the page's module (match_search, match_page) is the query
// string of the matching /v2 endpoint, with the page's title and text for
// url, plus redirect_url, the base of the click URLs, tok, the site token
// of the shard manifest that the click URLs carry, and exclude, the
// manifest's advertiser groups whose ads are left out (their daily budget
// is spent):
//
//	match_search: q=lg+handy&api_key=demo&site_id=demo&loc=de&lang=de&ctx.dist=low&redirect_url=http%3A%2F%2Flocalhost%3A8080
//	match_page:   text=...&title=...&api_key=demo&site_id=demo&loc=de&lang=de&fields=price&redirect_url=...
//
// It is read here by hand, with the server's rules, because net/url and
// fmt would cost the module tens of kilobytes. Empty values count as
// absent, repeated names are an error and unknown names (callback) are
// ignored, as on the server. loc=use_geo and lang=use_locale mean "no
// filter": the page resolves them before it asks.

// ParseQuery appends the decoded name=value pairs of a URL query string
// to dst; "&&" adds none. It reads what MalformedQuery lets through, as
// net/url does; it keeps a bad escape literally and takes ';' for a plain
// byte, but ParseModule refuses those first, as the server does.
// Components without escapes are substrings of s; the others are decoded
// into one buffer for the whole query (an allocation apiece costs the
// module dearly).
func ParseQuery(s string, dst []Pair) []Pair {
	var buf []byte
	for s != "" {
		var kv string
		kv, s, _ = match.CutByte(s, '&')
		if kv == "" {
			continue
		}
		k, val, _ := match.CutByte(kv, '=')
		var p Pair
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

// ParseModule reads a match_search (page false) or match_page request
// into what the server would read from the same request: the query, with
// use_geo and use_locale as "", and the link entries' values. The pairs go
// into *scratch, when given, whose memory they reuse.
func ParseModule(s string, page bool, scratch *[]Pair) (Link, []Problem) {
	if msg := MalformedQuery(s); msg != "" {
		return Link{}, []Problem{{Code: CodeInvalidParameter, Message: msg}}
	}
	var pairs []Pair
	if scratch != nil {
		pairs = ParseQuery(s, (*scratch)[:0])
		*scratch = pairs
	} else {
		pairs = ParseQuery(s, nil)
	}
	p := &values{pairs: pairs}
	var l Link
	q := &l.Query
	l.Links.Type = TypeSearch
	if page {
		l.Links.Type = TypePage
		q.Page = true
		q.Title, _ = p.Optional("title")
		q.Text, _ = p.Optional("text")
		if !utf8.ValidString(q.Title) || !utf8.ValidString(q.Text) {
			p.invalid("text", "text is not valid UTF-8")
		}
	} else {
		q.Text = parseQ(p)
	}
	l.Links.APIKey = p.Required("api_key")
	l.Links.SiteID = p.Required("site_id")
	l.Links.Base = trimSlashes(p.Required("redirect_url"))
	if tok, ok := p.Optional("tok"); ok {
		if validToken(tok) {
			l.Links.Tok = tok
		} else {
			p.invalid("tok", "tok must be the site token of the shard manifest, not "+match.Quote(tok))
		}
	}
	q.Country = p.Parse("loc", ParseCountry)
	q.Lang = p.Parse("lang", ParseLang)
	if q.Country == UseGeo {
		q.Country = ""
	}
	if q.Lang == UseLocale {
		q.Lang = ""
	}
	// exclude: the advertiser groups the shard manifest tells the page to
	// leave out (match.Query.Exclude), separated by commas.
	if s, ok := p.Optional("exclude"); ok {
		for more, msg := true, ""; more && msg == ""; {
			var g int
			var num string
			num, s, more = match.CutByte(s, ',')
			g, msg = ParseCount("exclude", num, 0, 1<<30)
			p.note("exclude", msg)
			q.Exclude = append(q.Exclude, uint32(g))
		}
	}
	if page {
		l.parseFilters(p, PageFieldNames, PageKindNames)
	} else {
		l.parseFilters(p, SearchFieldNames, SearchKindNames)
		l.parseSearchOptions(p)
	}
	return l, p.problems
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
