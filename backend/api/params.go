package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/adlink/adlink/match"
)

// The special loc and lang values.
const (
	locUseGeo     = match.UseGeo
	langUseLocale = match.UseLocale
)

// queryValues reads a request's query string, refusing one that
// match.MalformedQuery refuses, as the page's module does, with the same
// message.
func queryValues(r *http.Request) (url.Values, error) {
	if msg := match.MalformedQuery(r.URL.RawQuery); msg != "" {
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Message: msg}
	}
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil { // a GODEBUG urlmaxqueryparams below net/url's default
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter,
			Message: "the query string is malformed: " + err.Error()}
	}
	return v, nil
}

// searchParams is a /v2/search/link request, parsed and validated once.
type searchParams struct {
	Q        string // trimmed, valid UTF-8, at most match.MaxQueryBytes
	APIKey   string
	SiteID   string
	Callback string // "" or a valid callback
	// Loc is "", a lower-case ISO 3166 alpha-2 code or locUseGeo.
	Loc string
	// Lang is "", a lower-case ISO 639-1 code or langUseLocale.
	Lang               string
	Fields             match.Fields
	LogoDim            string // "" or one of match.LogoDims
	Kinds              match.Kinds
	Operator           match.Operator
	Dist               match.Dist
	YkTag              string
	Size               int
	DistinctAdvertiser int
}

// values reads a request's parameters with match's rules, which the
// page's module shares.
type values struct{ match.Values }

func newValues(v url.Values) values { return values{match.Values{V: v}} }

// invalid records a bad value of param with a formatted message.
func (p *values) invalid(param, format string, a ...any) {
	p.Invalid(param, fmt.Sprintf(format, a...))
}

// err returns nil, or one 400 whose code and param are the first problem's
// and whose message lists them all.
func (p *values) err() error {
	if len(p.Problems) == 0 {
		return nil
	}
	msgs := make([]string, len(p.Problems))
	for i, pr := range p.Problems {
		msgs[i] = pr.Message
	}
	first := p.Problems[0]
	return &Error{Status: http.StatusBadRequest, Code: first.Code, Param: first.Param, Message: strings.Join(msgs, "; ")}
}

// parseSearch reads every /v2/search/link parameter and reports every bad
// one together. Unknown parameters (a cache-buster "_") are ignored.
func parseSearch(v url.Values) (searchParams, error) {
	p := newValues(v)
	sp := searchParams{
		Size:               match.DefaultSize,
		DistinctAdvertiser: match.DefaultDistinctAdvertiser,
		Operator:           match.OpOr,
		Dist:               match.DistHigh,
	}
	if q := p.Required("q"); q != "" {
		var msg string
		sp.Q, msg = match.ParseText(q)
		p.Note("q", msg)
	}
	sp.APIKey = p.Required("api_key")
	sp.SiteID = p.Required("site_id")
	sp.Callback = parseCallback(&p)
	sp.Loc = parseLoc(&p)
	sp.Lang = parseLang(&p)
	if s, ok := p.Optional("fields"); ok {
		var msgs []string
		sp.Fields, msgs = match.ParseFields(s, match.SearchFieldNames)
		p.Note("fields", msgs...)
	}
	sp.LogoDim = parseLogoDim(&p)
	if s, ok := p.Optional("ad_type"); ok {
		var msgs []string
		sp.Kinds, msgs = match.ParseKinds(s, match.SearchKindNames)
		p.Note("ad_type", msgs...)
	}
	op, _ := p.Optional("q_operator")
	dist, _ := p.Optional("ctx.dist")
	var param, msg string
	sp.Operator, sp.Dist, param, msg = match.ParseOperator(op, dist)
	p.Note(param, msg)
	if s, ok := p.Optional("yk_tag"); ok {
		var msg string
		sp.YkTag, msg = match.ParseYkTag(s)
		p.Note("yk_tag", msg)
	}
	if s, ok := p.Optional("size"); ok {
		var msg string
		sp.Size, msg = match.ParseCount("size", s, 1, match.MaxSize)
		p.Note("size", msg)
	}
	if s, ok := p.Optional("distinct_advertiser"); ok {
		var msg string
		sp.DistinctAdvertiser, msg = match.ParseCount("distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
		p.Note("distinct_advertiser", msg)
	}
	if err := p.err(); err != nil {
		return searchParams{}, err
	}
	return sp, nil
}

// parseLogoDim reads logo.dim: "" or one of match.LogoDims, any case.
func parseLogoDim(p *values) string { return p.Parse("logo.dim", match.ParseLogoDim) }

// parseLoc reads loc: "", a lower-case ISO 3166 alpha-2 code or
// match.UseGeo.
func parseLoc(p *values) string { return p.Parse("loc", match.ParseCountry) }

// parseLang reads lang: "", a lower-case ISO 639-1 code or
// match.UseLocale.
func parseLang(p *values) string { return p.Parse("lang", match.ParseLang) }

// parseCallback reads the JSONP callback; an invalid one is a problem, and
// the error is then written as plain JSON.
func parseCallback(p *values) string {
	s, ok := p.Optional("callback")
	if !ok {
		return ""
	}
	if !validCallback(s) {
		p.invalid("callback", "callback must be a JavaScript function name (letters, digits, _ and $, dotted) of at most %d characters", maxCallback)
		return ""
	}
	return s
}

// callbackOf is the request's callback when it is given once and valid,
// else "": the error adapter's way to answer in the form the client asked.
func callbackOf(q url.Values) string {
	if vs := q["callback"]; len(vs) == 1 && validCallback(vs[0]) {
		return vs[0]
	}
	return ""
}

// isAlpha2 reports whether s is two ASCII letters, either case.
func isAlpha2(s string) bool {
	return len(s) == 2 && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
