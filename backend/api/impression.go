package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// MaxImpressionAds is how many ads one impression beacon may report.
const MaxImpressionAds = 16

// MaxImpressionAge is the longest age a beacon's age parameter is taken
// as: the longest impression window (config.ImpressionWindow).
const MaxImpressionAge = 24 * time.Hour

// impression answers GET /v1/impression?api_key=..&site_id=..&url=..&ad=..:
// the page's report of the ads it placed that a reader could see (each at
// least half in view for a second). Each ad is the query string of its
// click URL. The impressions are recorded, and the answer
// {"ct":["<token>",...]} gives each ad, in order, the click token its link
// needs to bill: bound to the ad and its click parameters, this client's
// network and user agent, and a short expiry. Only links the server or
// the page made count (madeHere), each ad once per beacon: a copy of a
// link gets its token, and another link of the same ad (another
// criterion, context or yk_tag) a token of its own but no second
// impression. An ad counts at most once per site and client network in
// each impression window (config.ImpressionWindow), whatever pages of the
// site it was seen on, as the page's URL is the client's to vary, and at
// most config.ImpressionPrefixNetworks times from one IPv6 /48, as its /64s
// are the client's to vary too (clicks.ImpressionNetworks): a
// beacon sent again, here or to another replica, or from another page,
// gets its tokens again but counts no more (clicks.ImpressionKey). A
// beacon sent again after one whose answer it never had (age, how long
// after that first one, clamped to one window) counts in the first one's
// window: one that had reached the server counts no second impression
// across a window's end. age can name the window before this one at
// most, each window of an ad counts once, so a client that sends it to
// count more gets one impression more at most, ever. An ad the
// catalog no longer has, or whose adType is not its own, gets "" and no
// impression; so does every ad of a client that is no browser.
func (s *server) impression(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	apiKey, siteID, page, ads, age, err := parseImpression(v)
	if err != nil {
		return err
	}
	site, err := s.authorize(r.Context(), apiKey, siteID)
	if err != nil {
		return err
	}
	if err := pages.CheckDomain(page, site.Domains); err != nil {
		return problemError(http.StatusForbidden, contract.ForeignURL(siteID), err)
	}
	if s.imps == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeInternal,
			Message: "impressions are not recorded here", Err: errors.New("no impression store")}
	}
	now := s.now()
	ip, ua := s.clientIP(r), truncate(r.UserAgent(), maxUserAgent)
	bot := clicks.IsBot(ua)
	cat := s.catalogOf(r)
	ix := cat.Indexes.All()
	tokens := make([]string, len(ads))
	imps := make([]clicks.Impression, 0, len(ads))
	ttl, window := s.cfg.ClickTokenTTL, s.cfg.ImpressionWindow
	if ttl <= 0 {
		ttl = config.Default().ClickTokenTTL
	}
	if window <= 0 {
		window = config.Default().ImpressionWindow
	}
	network, keyNetwork := clicks.ImpressionNetworks(ip, s.cfg.ImpressionPrefixNetworks)
	keyAt := now.Add(-min(age, window))
	country := s.geoCountry(r)
	// seen is where each link was first judged in this beacon: a copy of
	// it gets that one's token. counted holds the ads counted: one of
	// another link (another criterion, context or yk_tag) gets a token of
	// its own if it is one adlink made, but no second impression.
	seen := make(map[contract.Redirect]int, len(ads))
	counted := make(map[string]bool, len(ads))
	for i, a := range ads {
		if j, ok := seen[a]; ok {
			tokens[i] = tokens[j]
			continue
		}
		seen[a] = i
		at, ok := ix.Lookup(a.AdID)
		if !ok || bot {
			continue
		}
		ad := ix.Ad(at)
		if ad.Kind != a.AdType {
			continue
		}
		p := clicks.Params{Type: a.Type, AdID: a.AdID, AdType: a.AdType.String(), APIKey: apiKey,
			SiteID: siteID, Criterion: a.Criterion, YkTag: a.YkTag}
		criterion, ok := s.madeHere(cat, ix, at, &p, &a, now)
		if !ok {
			continue
		}
		if !counted[a.AdID] {
			counted[a.AdID] = true
			tag := p.YkTag
			if s.judge.Keys != nil && a.Sig == "" && a.Exp == "" {
				tag = s.pageTag(r.Context(), apiKey, siteID, tag, now) // the page made it
			}
			imps = append(imps, clicks.Impression{Time: now, AdID: p.AdID, AdType: p.AdType, Type: p.Type,
				APIKey: apiKey, SiteID: siteID, Criterion: criterion, YkTag: tag, Page: page, IP: ip, UserAgent: ua,
				Country: country, Advertiser: ad.Advertiser, Currency: catalog.ClickCurrency(&ad),
				Key: clicks.ImpressionKey(p.AdID, apiKey, siteID, keyNetwork, keyAt, window)})
		}
		if s.judge.Keys != nil {
			tokens[i] = s.judge.Keys.ClickToken(&p, network, ua, now, now.Add(ttl))
		}
	}
	repeats := 0
	if len(imps) > 0 {
		if repeats, err = s.imps.Append(r.Context(), imps); err != nil {
			return internal(fmt.Errorf("recording impressions: %w", err))
		}
	}
	s.metrics.Impressions(len(imps)-repeats, repeats)
	// Tokens are of A-Z, a-z, 0-9, '.', '_' and '-': nothing to escape.
	b := append(make([]byte, 0, 8+len(ads)*128), `{"ct":[`...)
	for i, t := range tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), t...), '"')
	}
	b = append(b, "]}"...)
	w.Header().Set("Cache-Control", "no-store")
	respond(w, http.StatusOK, b, "")
	return nil
}

// madeHere reports whether ad a, the ad at in ix, the indexes of catalog
// c, of click parameters p, is a link the server or the page made, and
// the criterion its impression records. One the server made is signed,
// its signature covering its criterion and yk_tag, and unexpired: it
// records its criterion as the server wrote it. One the page made
// carries an unexpired site token of its partner, and, as the page cannot
// sign, a criterion the page's match can have named for the ad: one or
// more of the ad's criteria (match.Index.IsCriterionOf) in c, or, for a
// click token's TTL after a refresh, in the catalog before it, whose
// shards the page may still have matched on (Catalog.criterionOf), or
// words all in the ad's text, as a looser search match names. It
// records it as the one of the ad's criteria it names that the ad lists
// first, as the ad spells it (match.Index.CanonicalCriterion), as a
// public site token lets anyone spell, order and combine them in endless
// ways, each a report row of its own; the looser match's words as no
// criterion. Its yk_tag is the publisher's own,
// checked as the parse checks it, and recorded only when its site's day
// admits it (pageTag): the first -site-daily-tags of the day, as anyone
// can vary it too. Without keys nothing is signed and every link passes,
// with its criterion as it is.
func (s *server) madeHere(c *Catalog, ix *match.Index, at int, p *clicks.Params, a *contract.Redirect, now time.Time) (criterion string, ok bool) {
	ks := s.judge.Keys
	switch {
	case ks == nil:
		return p.Criterion, true
	case a.Sig != "" || a.Exp != "":
		return p.Criterion, ks.Verify(p, a.D, a.Exp, a.Sig, now) == ""
	case ks.VerifyToken(p.APIKey, p.SiteID, a.Tok, now) != "":
		return "", false
	default:
		return c.criterionOf(ix, at, p.AdID, p.Criterion, now)
	}
}

// parseImpression reads an impression beacon: its partner, its page's
// canonical URL, its ads, each a click URL's query of that partner, and
// how long after a first try it is sent again (age, 0 for a first), or
// the 400 that names what is wrong.
func parseImpression(v url.Values) (apiKey, siteID, page string, ads []contract.Redirect, age time.Duration, err error) {
	var problems []contract.Problem
	missing := func(name string) {
		problems = append(problems, contract.Problem{Code: CodeMissingParameter, Param: name, Message: name + " is required"})
	}
	invalid := func(name, msg string) {
		problems = append(problems, contract.Problem{Code: CodeInvalidParameter, Param: name, Message: msg})
	}
	apiKey, siteID = v.Get("api_key"), v.Get("site_id")
	if apiKey == "" {
		missing("api_key")
	}
	if siteID == "" {
		missing("site_id")
	}
	if raw := v.Get("url"); raw == "" {
		missing("url")
	} else if c, msg := canonicalURL(raw); msg != "" {
		invalid("url", msg)
	} else {
		page = c
	}
	switch n := len(v["ad"]); {
	case n == 0:
		missing("ad")
	case n > MaxImpressionAds:
		invalid("ad", "at most "+strconv.Itoa(MaxImpressionAds)+" ad parameters, not "+strconv.Itoa(n))
	}
	switch raw := v["age"]; {
	case len(raw) > 1:
		// Which one would count is the client's to pick: none does.
		invalid("age", "at most one age parameter, not "+strconv.Itoa(len(raw)))
	case len(raw) == 1 && raw[0] != "":
		// Digits only (no sign, no spaces). Longer than a day is no
		// window's: it is taken as a day, however many digits it has.
		ms, perr := strconv.ParseUint(raw[0], 10, 64)
		if perr != nil && !errors.Is(perr, strconv.ErrRange) {
			invalid("age", "age must be whole milliseconds, 0 or more")
		} else {
			age = time.Duration(min(ms, uint64(MaxImpressionAge/time.Millisecond))) * time.Millisecond
		}
	}
	if len(problems) == 0 {
		for i, q := range v["ad"] {
			name := "ad[" + strconv.Itoa(i) + "]"
			av, perr := url.ParseQuery(strings.TrimPrefix(q[strings.IndexByte(q, '?')+1:], "&"))
			if perr != nil {
				invalid("ad", name+" is no click URL query")
				break
			}
			a, ps := contract.ParseRedirect(av)
			if len(ps) > 0 {
				invalid("ad", name+": "+contract.Join(ps).Message)
				break
			}
			if a.APIKey != apiKey || a.SiteID != siteID {
				invalid("ad", name+" is another partner's ad")
				break
			}
			ads = append(ads, a)
		}
	}
	if len(problems) > 0 {
		return "", "", "", nil, 0, badRequest(problems)
	}
	return apiKey, siteID, page, ads, age, nil
}
