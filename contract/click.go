package contract

import "github.com/adlink/adlink/match"

// RedirectPath is the path of the click redirect, which every link entry's
// "ad" URL names.
const RedirectPath = "/v1/redirect"

// The type values of a click URL, as the seed spells them: the request's
// context (match.LinkOptions.Context).
const (
	TypeSearch = match.ContextSearch
	TypePage   = match.ContextPage
)

// ClickParams are the parameters of a click URL that name the click.
type ClickParams struct {
	Type, AdID, AdType, APIKey, SiteID, Criterion, YkTag string
}

// AppendClickQuery appends p as the query string of a click URL, in the
// seed's order and escaping; yk_tag only when set. The redirect rebuilds
// these bytes to check a signature, whatever escaping the URL went through.
func AppendClickQuery(q []byte, p *ClickParams) []byte {
	q = append(q, "type="...)
	q = AppendQueryEscape(q, p.Type)
	q = append(q, "&adId="...)
	q = AppendQueryEscape(q, p.AdID)
	q = append(q, "&adType="...)
	q = AppendQueryEscape(q, p.AdType)
	q = append(q, "&api_key="...)
	q = AppendQueryEscape(q, p.APIKey)
	q = append(q, "&site_id="...)
	q = AppendQueryEscape(q, p.SiteID)
	q = append(q, "&criterionId="...)
	q = AppendQueryEscape(q, p.Criterion)
	if p.YkTag != "" {
		q = append(q, "&yk_tag="...)
		q = AppendQueryEscape(q, p.YkTag)
	}
	return q
}

// Links are what a search or page request puts in each link entry of its
// answer: the parts of the click URLs that are the request's, and the
// extra fields.
type Links struct {
	// Base is the redirect server, without a trailing slash
	// ("https://r.example.com"); RedirectPath is appended.
	Base string
	// Type is TypeSearch or TypePage.
	Type    string
	APIKey  string
	SiteID  string
	YkTag   string
	Fields  match.Fields
	LogoDim string // "" or a value of match.LogoDims
	// Tok, when set, is the site token of the shard manifest, appended as
	// "&tok=...": the page's module signs its clicks with it, as it holds
	// no key.
	Tok string
	// Sign, when set, appends parameters that authenticate the click (the
	// server's "&d=...&exp=...&sig=...": a decision id minted for this
	// answer and ad, the expiry and the signature over them and the query),
	// of bytes a query holds unescaped; it gets the click URL's query so
	// far.
	Sign func(dst, query []byte) []byte
}

// Options returns the match.LinkOptions that write link entries with l's
// values: a copy of them, which the options' click URL writer keeps.
func (l Links) Options() match.LinkOptions {
	return match.LinkOptions{Context: l.Type, Fields: l.Fields, LogoDim: l.LogoDim,
		ClickBase: l.Base + RedirectPath + "?",
		ClickQuery: func(dst []byte, adID, adType, criterion string) []byte {
			start := len(dst)
			dst = AppendClickQuery(dst, &ClickParams{Type: l.Type, AdID: adID, AdType: adType,
				APIKey: l.APIKey, SiteID: l.SiteID, Criterion: criterion, YkTag: l.YkTag})
			if l.Tok != "" {
				dst = append(append(dst, "&tok="...), l.Tok...)
			}
			if l.Sign != nil {
				dst = l.Sign(dst, dst[start:])
			}
			return dst
		}}
}

// AppendQueryEscape appends s escaped as a URL query component, with a
// space as '+', exactly as net/url.QueryEscape does.
func AppendQueryEscape(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	// Runs of bytes that stand for themselves are copied at once.
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			continue
		}
		dst = append(dst, s[start:i]...)
		if c == ' ' {
			dst = append(dst, '+')
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	return append(dst, s[start:]...)
}
