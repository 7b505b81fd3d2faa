package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// maxPartnerID bounds the api_key and site_id a click records: a click
// for a key or site that is no partner's is recorded too, not refused.
const maxPartnerID = 256

// maxCriterion bounds the criterionId a click records.
const maxCriterion = match.MaxQueryBytes

// redirectParams is a /v1/redirect request, parsed and validated once.
type redirectParams struct {
	Type      string // match.ContextSearch or match.ContextPage
	AdID      string
	AdType    match.Kind
	APIKey    string
	SiteID    string
	Criterion string
	YkTag     string
	// Auth is the click's exp and sig (a link the server made) or tok (a
	// link the page made).
	Auth clicks.Auth
}

func parseRedirect(v url.Values) (redirectParams, error) {
	p := newValues(v)
	var rp redirectParams
	switch t := p.Required("type"); t {
	case "":
	case match.ContextSearch, match.ContextPage:
		rp.Type = t
	default:
		p.invalid("type", "type must be search or intext, not %s", quote(t))
	}
	rp.AdID = p.Required("adId")
	if t := p.Required("adType"); t != "" {
		k, ok := match.ParseKind(t)
		if !ok {
			p.invalid("adType", "adType must be advertiser, product or coupon, not %s", quote(t))
		}
		rp.AdType = k
	}
	rp.APIKey = p.Required("api_key")
	rp.SiteID = p.Required("site_id")
	rp.Criterion = p.Required("criterionId")
	if !utf8.ValidString(rp.Criterion) || len(rp.Criterion) > maxCriterion {
		p.invalid("criterionId", "criterionId must be valid UTF-8 of at most %d bytes", maxCriterion)
	}
	if s, ok := p.Optional("yk_tag"); ok {
		var msg string
		rp.YkTag, msg = match.ParseYkTag(s)
		p.Note("yk_tag", msg)
	}
	rp.Auth.Exp, _ = p.Optional("exp")
	rp.Auth.Sig, _ = p.Optional("sig")
	rp.Auth.Tok, _ = p.Optional("tok")
	if err := p.err(); err != nil {
		return redirectParams{}, err
	}
	return rp, nil
}

// redirect answers GET /v1/redirect: it finds the ad by adId in the full
// index, judges the click, commits it, then sends the client to the ad's
// landing URL from the catalog. The target never comes from the request,
// so this is no open redirect. Once the ad is found the client always
// lands: a forged, expired, unsigned, bot or repeated click, or one whose
// partner is gone, is recorded as not billable with its reason rather than
// refused. A HEAD (link scanners, prefetchers) gets the same answer but
// records no click.
func (s *server) redirect(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	p, err := parseRedirect(v)
	if err != nil {
		return err
	}
	ix := s.indexes.All()
	i, ok := ix.Lookup(p.AdID)
	if !ok {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Param: "adId",
			Message: "no ad has adId " + quote(p.AdID)}
	}
	ad := ix.Ad(i)
	landing, err := url.Parse(ad.Landing)
	if err != nil || (landing.Scheme != "http" && landing.Scheme != "https") || landing.Host == "" {
		return internal(fmt.Errorf("ad %s has no usable landing URL %q", p.AdID, ad.Landing))
	}
	// adlink never made a link whose adType is not its ad's, nor one for
	// a key or site that is not a partner's.
	refuse := ""
	if ad.Kind != p.AdType {
		refuse = clicks.ReasonForged
	}
	if _, err := s.authorize(r.Context(), p.APIKey, p.SiteID); err != nil {
		if asError(err).Status >= 500 {
			return err
		}
		if refuse == "" {
			refuse = clicks.ReasonPartner
		}
	}
	if r.Method != http.MethodHead {
		c := clicks.Click{
			Time:      s.now(),
			AdID:      p.AdID,
			AdType:    ad.Kind.String(),
			Type:      p.Type,
			APIKey:    truncate(p.APIKey, maxPartnerID),
			SiteID:    truncate(p.SiteID, maxPartnerID),
			Criterion: p.Criterion,
			YkTag:     p.YkTag,
			IP:        s.clientIP(r),
			UserAgent: truncate(r.UserAgent(), 512),
		}
		s.judge.Judge(&c, p.Auth, refuse)
		if err := s.clicks.Append(r.Context(), c); err != nil {
			return internal(fmt.Errorf("recording click: %w", err))
		}
		s.metrics.Click(c.Billable, c.Reason)
	}
	h := w.Header()
	h.Set("Location", ad.Landing)
	h.Set("Cache-Control", "no-store")
	// The click URL carries the partner's key and site; the advertiser
	// learns nothing from the referrer.
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusFound)
	return nil
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "")
}
