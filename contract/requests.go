package contract

import (
	"unicode/utf8"

	"github.com/adlink/adlink/match"
)

// The requests of the server's endpoints. Each parse reads every parameter
// of its endpoint and returns every problem together; unknown parameters
// (a cache-buster "_") are ignored. The server passes its query string as
// net/url reads it, after MalformedQuery.

// Link is a search or page request: what match answers and what its link
// entries carry.
type Link struct {
	// Query is what match answers. Its Country may be UseGeo and its Lang
	// UseLocale, for the server to resolve.
	Query match.Query
	// Links, as the server's parses return them, lack Base and Sign,
	// which the server adds.
	Links    Links
	Callback string // "" or a valid JSONP callback
}

// ParseSearch reads a /v2/search/link request.
func ParseSearch(v map[string][]string) (Link, []Problem) {
	p := &values{v: v}
	var l Link
	l.Links.Type = TypeSearch
	l.Query.Text = parseQ(p)
	l.Links.APIKey = p.Required("api_key")
	l.Links.SiteID = p.Required("site_id")
	l.Callback = parseCallback(p)
	l.Query.Country = p.Parse("loc", ParseCountry)
	l.Query.Lang = p.Parse("lang", ParseLang)
	l.parseFilters(p, SearchFieldNames, SearchKindNames)
	l.parseSearchOptions(p)
	return l, p.problems
}

// Page is a /v2/page/link request. Its query has no title and text yet:
// they come from the page's analysis (Link.PageQuery).
type Page struct {
	Link
	// URL is the page URL as the canonical hook of ParsePage returned it.
	URL string
}

// ParsePage reads a /v2/page/link request. canonical checks the page URL
// and returns its canonical form, or a message naming url.
func ParsePage(v map[string][]string, canonical func(raw string) (url, msg string)) (Page, []Problem) {
	p := &values{v: v}
	var pg Page
	pg.Links.Type = TypePage
	pg.Query.Page = true
	if raw := p.Required("url"); raw != "" {
		var msg string
		pg.URL, msg = canonical(raw)
		p.note("url", msg)
	}
	pg.Links.APIKey = p.Required("api_key")
	pg.Links.SiteID = p.Required("site_id")
	pg.Callback = parseCallback(p)
	pg.Query.Country = p.Parse("loc", ParseCountry)
	pg.parseFilters(p, PageFieldNames, PageKindNames)
	return pg, p.problems
}

// PageQuery is the query of a page request for the page's title and text.
func (l *Link) PageQuery(title, text string) match.Query {
	q := l.Query
	q.Title, q.Text = title, text
	return q
}

// Manifest is a /v2/shards request, for the manifest of a market's shard.
type Manifest struct {
	APIKey, SiteID string
	Callback       string
	// Country and Lang may be UseGeo and UseLocale, for the server to
	// resolve.
	Country, Lang string
}

// ParseManifest reads a /v2/shards request.
func ParseManifest(v map[string][]string) (Manifest, []Problem) {
	p := &values{v: v}
	var m Manifest
	m.APIKey = p.Required("api_key")
	m.SiteID = p.Required("site_id")
	m.Callback = parseCallback(p)
	m.Country = p.Parse("loc", ParseCountry)
	m.Lang = p.Parse("lang", ParseLang)
	return m, p.problems
}

// Redirect is a /v1/redirect request: a click.
type Redirect struct {
	Type      string // TypeSearch or TypePage
	AdID      string
	AdType    match.Kind
	APIKey    string
	SiteID    string
	Criterion string
	YkTag     string
	// D, Exp and Sig sign a link the server made (D is its decision id,
	// minted for one answer and ad), Tok one the page made, and CT is the
	// click token the impression beacon gave that link once its ad was
	// seen.
	D, Exp, Sig, CT, Tok string
}

// MaxCriterion bounds the criterionId of a click.
const MaxCriterion = match.MaxQueryBytes

// ParseRedirect reads a /v1/redirect request.
func ParseRedirect(v map[string][]string) (Redirect, []Problem) {
	p := &values{v: v}
	var r Redirect
	switch t := p.Required("type"); t {
	case "":
	case TypeSearch, TypePage:
		r.Type = t
	default:
		p.invalid("type", "type must be search or intext, not "+match.Quote(t))
	}
	r.AdID = p.Required("adId")
	if t := p.Required("adType"); t != "" {
		k, ok := match.ParseKind(t)
		if !ok {
			p.invalid("adType", "adType must be advertiser, product or coupon, not "+match.Quote(t))
		}
		r.AdType = k
	}
	r.APIKey = p.Required("api_key")
	r.SiteID = p.Required("site_id")
	r.Criterion = p.Required("criterionId")
	if !utf8.ValidString(r.Criterion) || len(r.Criterion) > MaxCriterion {
		p.invalid("criterionId", "criterionId must be valid UTF-8 of at most "+match.Itoa(MaxCriterion)+" bytes")
	}
	r.YkTag = p.Parse("yk_tag", ParseYkTag)
	r.D, _ = p.Optional("d")
	r.Exp, _ = p.Optional("exp")
	r.Sig, _ = p.Optional("sig")
	r.CT, _ = p.Optional("ct")
	r.Tok, _ = p.Optional("tok")
	return r, p.problems
}

// The parameters several requests share. The OpenAPI test follows the
// calls of a parse to find the parameters it reads.

// parseQ reads q, the search text.
func parseQ(p *values) string {
	q := p.Required("q")
	if q == "" {
		return ""
	}
	q, msg := ParseText(q)
	p.note("q", msg)
	return q
}

// parseFilters reads fields, logo.dim and ad_type against the names the
// request's context allows.
func (l *Link) parseFilters(p *values, fieldNames, kindNames []string) {
	if s, ok := p.Optional("fields"); ok {
		var msgs []string
		l.Links.Fields, msgs = ParseFields(s, fieldNames)
		p.note("fields", msgs...)
	}
	l.Links.LogoDim = p.Parse("logo.dim", ParseLogoDim)
	if s, ok := p.Optional("ad_type"); ok {
		var msgs []string
		l.Query.Kinds, msgs = ParseKinds(s, kindNames)
		p.note("ad_type", msgs...)
	}
}

// parseSearchOptions reads what only a search has: q_operator, ctx.dist,
// yk_tag, size and distinct_advertiser.
func (l *Link) parseSearchOptions(p *values) {
	q := &l.Query
	op, _ := p.Optional("q_operator")
	dist, _ := p.Optional("ctx.dist")
	var param, msg string
	q.Operator, q.Dist, param, msg = ParseOperator(op, dist)
	p.note(param, msg)
	l.Links.YkTag = p.Parse("yk_tag", ParseYkTag)
	q.Size = match.DefaultSize
	if s, ok := p.Optional("size"); ok {
		q.Size, msg = ParseCount("size", s, 1, match.MaxSize)
		p.note("size", msg)
	}
	q.DistinctAdvertiser = match.DefaultDistinctAdvertiser
	if s, ok := p.Optional("distinct_advertiser"); ok {
		q.DistinctAdvertiser, msg = ParseCount("distinct_advertiser", s, 1, match.MaxDistinctAdvertiser)
		p.note("distinct_advertiser", msg)
	}
}
