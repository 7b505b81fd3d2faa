package api

import (
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/adlink/adlink/match"
)

// The special loc and lang values.
const (
	locUseGeo     = "use_geo"
	langUseLocale = "use_locale"
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
		sp.Q = strings.TrimSpace(q)
		switch {
		case !utf8.ValidString(sp.Q):
			p.errs.invalid("q", "q is not valid UTF-8")
		case len(sp.Q) > match.MaxQueryBytes:
			p.errs.invalid("q", "q is %d bytes long; the most is %d", len(sp.Q), match.MaxQueryBytes)
		}
	}
	sp.APIKey = p.required("api_key")
	sp.SiteID = p.required("site_id")
	sp.Callback = parseCallback(&p)
	sp.Loc = parseLoc(&p)
	if s, ok := p.optional("lang"); ok {
		switch {
		case s == langUseLocale:
			sp.Lang = s
		case isAlpha2(s):
			sp.Lang = strings.ToLower(s)
		default:
			p.errs.invalid("lang", "lang must be a two-letter ISO 639-1 language code (de, en) or use_locale, not %s", quote(s))
		}
	}
	if s, ok := p.optional("fields"); ok {
		sp.Fields = parseFields(&p.errs, "fields", s, match.SearchFieldNames)
	}
	sp.LogoDim = parseLogoDim(&p)
	if s, ok := p.optional("ad_type"); ok {
		sp.Kinds = parseKinds(&p.errs, s)
	}
	op, opGiven := p.optional("q_operator")
	switch op {
	case "", "or":
	case "and":
		sp.Operator = match.OpAnd
	default:
		opGiven = false
		p.errs.invalid("q_operator", "q_operator must be and or or, not %s", quote(op))
	}
	dist, distGiven := p.optional("ctx.dist")
	switch dist {
	case "", "high":
	case "low":
		sp.Dist = match.DistLow
	case "none":
		sp.Dist = match.DistNone
	default:
		distGiven = false
		p.errs.invalid("ctx.dist", "ctx.dist must be high, low or none, not %s", quote(dist))
	}
	if opGiven && sp.Operator == match.OpAnd {
		if distGiven && sp.Dist != match.DistNone {
			p.errs.invalid("q_operator", "q_operator=and needs ctx.dist=none (or no ctx.dist), not ctx.dist=%s", dist)
		}
		sp.Dist = match.DistNone
	}
	if s, ok := p.optional("yk_tag"); ok {
		if validYkTag(s) {
			sp.YkTag = s
		} else {
			p.errs.invalid("yk_tag", "yk_tag must be 1 to 64 of A-Z, a-z, 0-9, _, - and :, not %s", quote(s))
		}
	}
	if s, ok := p.optional("size"); ok {
		sp.Size = parseInt(&p.errs, "size", s, 1, match.MaxSize)
	}
	if s, ok := p.optional("distinct_advertiser"); ok {
		sp.DistinctAdvertiser = parseInt(&p.errs, "distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
	}
	if err := p.errs.err(); err != nil {
		return searchParams{}, err
	}
	return sp, nil
}

// parseLogoDim reads logo.dim: "" or one of match.LogoDims, any case.
func parseLogoDim(p *values) string {
	s, ok := p.optional("logo.dim")
	if !ok {
		return ""
	}
	if i := slices.Index(match.LogoDims, strings.ToUpper(s)); i >= 0 {
		return match.LogoDims[i]
	}
	p.errs.invalid("logo.dim", "logo.dim must be one of %s, not %s", strings.Join(match.LogoDims, ", "), quote(s))
	return ""
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

// parseFields reads a comma-separated fields list against the names the
// context accepts. Blank items are skipped.
func parseFields(errs *problems, param, s string, allowed []string) match.Fields {
	var f match.Fields
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		v, ok := match.ParseField(item)
		if !ok || !slices.Contains(allowed, item) {
			errs.invalid(param, "%s must be a comma-separated list of %s; %s is not one", param, strings.Join(allowed, ", "), quote(item))
			continue
		}
		f |= v
	}
	return f
}

// parseKinds reads ad_type: values separated by commas, spaces or '+', so
// the seed's "product coupon" is two values.
func parseKinds(errs *problems, s string) match.Kinds {
	var k match.Kinds
	items := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '+' })
	for _, item := range items {
		kind, ok := match.ParseKind(item)
		if !ok {
			errs.invalid("ad_type", "ad_type must be a list of advertiser, product and coupon; %s is not one", quote(item))
			continue
		}
		k = k.Add(kind)
	}
	return k
}

// parseInt reads a decimal integer in [min, max]; no sign, no clamping.
func parseInt(errs *problems, param, s string, min, max int) int {
	n := 0
	ok := len(s) > 0 && len(s) <= 4
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= '0' && c <= '9'
		n = n*10 + int(c-'0')
	}
	if !ok || n < min || n > max {
		errs.invalid(param, "%s must be a whole number from %d to %d, not %s", param, min, max, quote(s))
		return 0
	}
	return n
}

// validYkTag reports whether s is a sub id we carry into click URLs:
// ^[A-Za-z0-9_:-]{1,64}$.
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

// isAlpha2 reports whether s is two ASCII letters, either case.
func isAlpha2(s string) bool {
	return len(s) == 2 && isLetter(s[0]) && isLetter(s[1])
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
