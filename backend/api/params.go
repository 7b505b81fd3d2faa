package api

import (
	"net/url"
	"strings"

	"github.com/adlink/adlink/match"
)

// The special loc and lang values.
const (
	locUseGeo     = match.UseGeo
	langUseLocale = match.UseLocale
)

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

// values reads single-valued parameters, noting a repeated one as a problem.
type values struct {
	v    url.Values
	errs problems
}

// get returns the parameter's value; ok is false when it is absent or
// repeated (a problem, since we cannot tell which value was meant).
func (p *values) get(name string) (string, bool) {
	switch vs := p.v[name]; len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	default:
		p.errs.invalid(name, "%s is given %d times; give it once", name, len(vs))
		return "", false
	}
}

// required returns a parameter that must be there and not blank.
func (p *values) required(name string) string {
	s, ok := p.get(name)
	switch {
	case len(p.v[name]) > 1:
		return "" // get reported it
	case !ok || strings.TrimSpace(s) == "":
		p.errs.missing(name)
		return ""
	}
	return s
}

// optional returns an optional parameter; empty counts as absent, as an
// HTML form sends an unset field.
func (p *values) optional(name string) (string, bool) {
	s, ok := p.get(name)
	return s, ok && s != ""
}

// parseSearch reads every /v2/search/link parameter and reports every bad
// one together. Unknown parameters (a cache-buster "_") are ignored.
func parseSearch(v url.Values) (searchParams, error) {
	p := values{v: v}
	sp := searchParams{
		Size:               match.DefaultSize,
		DistinctAdvertiser: match.DefaultDistinctAdvertiser,
		Operator:           match.OpOr,
		Dist:               match.DistHigh,
	}
	if q := p.required("q"); q != "" {
		var msg string
		sp.Q, msg = match.ParseText(q)
		p.note("q", msg)
	}
	sp.APIKey = p.required("api_key")
	sp.SiteID = p.required("site_id")
	sp.Callback = parseCallback(&p)
	sp.Loc = parseLoc(&p)
	sp.Lang = parseLang(&p)
	if s, ok := p.optional("fields"); ok {
		var msgs []string
		sp.Fields, msgs = match.ParseFields(s, match.SearchFieldNames)
		p.note("fields", msgs...)
	}
	sp.LogoDim = parseLogoDim(&p)
	if s, ok := p.optional("ad_type"); ok {
		var msgs []string
		sp.Kinds, msgs = match.ParseKinds(s, match.SearchKindNames)
		p.note("ad_type", msgs...)
	}
	op, _ := p.optional("q_operator")
	dist, _ := p.optional("ctx.dist")
	var param, msg string
	sp.Operator, sp.Dist, param, msg = match.ParseOperator(op, dist)
	p.note(param, msg)
	if s, ok := p.optional("yk_tag"); ok {
		var msg string
		sp.YkTag, msg = match.ParseYkTag(s)
		p.note("yk_tag", msg)
	}
	if s, ok := p.optional("size"); ok {
		var msg string
		sp.Size, msg = match.ParseCount("size", s, 1, match.MaxSize)
		p.note("size", msg)
	}
	if s, ok := p.optional("distinct_advertiser"); ok {
		var msg string
		sp.DistinctAdvertiser, msg = match.ParseCount("distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
		p.note("distinct_advertiser", msg)
	}
	if err := p.errs.err(); err != nil {
		return searchParams{}, err
	}
	return sp, nil
}

// parseLogoDim reads logo.dim: "" or one of match.LogoDims, any case.
func parseLogoDim(p *values) string { return p.parse("logo.dim", match.ParseLogoDim) }

// parseLoc reads loc: "", a lower-case ISO 3166 alpha-2 code or
// match.UseGeo.
func parseLoc(p *values) string { return p.parse("loc", match.ParseCountry) }

// parseLang reads lang: "", a lower-case ISO 639-1 code or
// match.UseLocale.
func parseLang(p *values) string { return p.parse("lang", match.ParseLang) }

// parse reads an optional parameter with one of match's rules; "" when it
// is absent or bad (a problem then).
func (p *values) parse(name string, rule func(string) (string, string)) string {
	s, ok := p.optional(name)
	if !ok {
		return ""
	}
	v, msg := rule(s)
	p.note(name, msg)
	return v
}

// note records each non-empty message of match's parameter functions as
// a problem with param.
func (p *values) note(param string, msgs ...string) {
	for _, m := range msgs {
		if m != "" {
			p.errs.invalid(param, "%s", m)
		}
	}
}

// parseCallback reads the JSONP callback; an invalid one is a problem, and
// the error is then written as plain JSON.
func parseCallback(p *values) string {
	s, ok := p.optional("callback")
	if !ok {
		return ""
	}
	if !validCallback(s) {
		p.errs.invalid("callback", "callback must be a JavaScript function name (letters, digits, _ and $, dotted) of at most %d characters", maxCallback)
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
