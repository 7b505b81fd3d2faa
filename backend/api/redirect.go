package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/contract"
)

// maxPartnerID bounds the api_key and site_id a click records of a key
// or site that is no partner's: such a click is recorded too, not
// refused. A partner's are the partners file's, recorded whole.
const maxPartnerID = 256

// maxUserAgent bounds the user agent a click or impression records, and
// a click token binds.
const maxUserAgent = 512

// redirect answers GET /v1/redirect: it finds the ad by adId in the full
// index, judges the click, commits it, then sends the client to the ad's
// landing URL from the catalog. The target never comes from the request,
// so this is no open redirect. Once the ad is found the client always
// lands: a forged, expired, too fast, unsigned or unverified (site token
// only), bot,
// unintended or repeated click (a decision id used before, or the
// network's window), one past the daily cap of its network or of its IPv6
// /48 or IPv4 /24, one whose partner is gone, and one over the network's request limit
// (limitIP) are recorded as not billable with their reason rather than
// refused. A HEAD (link scanners, prefetchers) gets the same answer but
// records no click.
func (s *server) redirect(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	req, problems := contract.ParseRedirect(v)
	if err := badRequest(problems); err != nil {
		return err
	}
	ad, ok := s.catalogOf(r).ad(req.AdID, s.now()) // a removed ad's links land until they expire
	if _, over := overLimitOf(r); !ok && !over {
		// Another replica may have made the link from the catalog this
		// one is still reading. A network over its limit waits not: a
		// flood of made-up ids holds no more requests than the limit.
		if r, ok = s.newerCatalog(w, r); ok {
			ad, ok = s.catalogOf(r).ad(req.AdID, s.now())
		}
	}
	if !ok {
		return problemError(http.StatusNotFound, contract.NoAd(req.AdID), nil)
	}
	// The catalog admits only such landings; checked again here, as this
	// is the URL the browser is sent to, whatever way the ad came in.
	if !catalog.IsWebURL(ad.Landing) {
		return internal(fmt.Errorf("ad %s has no usable landing URL %q", req.AdID, ad.Landing))
	}
	// adlink never made a link whose adType is not its ad's, nor one for
	// a key or site that is not a partner's.
	refuse, partner := "", true
	if ad.Kind != req.AdType {
		refuse = clicks.ReasonForged
	}
	if _, err := s.authorize(r.Context(), req.APIKey, req.SiteID); err != nil {
		if asError(err).Status >= 500 {
			return err
		}
		partner = false
		if refuse == "" {
			refuse = clicks.ReasonPartner
		}
	}
	id := "" // of the click recorded
	if r.Method != http.MethodHead {
		c := clicks.Click{
			ID:         clicks.NewID(),
			Time:       s.now(),
			AdID:       req.AdID,
			AdType:     ad.Kind.String(),
			Type:       req.Type,
			APIKey:     req.APIKey,
			SiteID:     req.SiteID,
			Criterion:  req.Criterion,
			YkTag:      req.YkTag,
			IP:         s.clientIP(r),
			UserAgent:  truncate(r.UserAgent(), maxUserAgent),
			Country:    s.geoCountry(r),
			Advertiser: ad.Advertiser,
			BidMicros:  ad.BidMicros,
			Currency:   catalog.ClickCurrency(&ad),
		}
		over, isOver := overLimitOf(r)
		var u clicks.Use
		if isOver {
			c.Reason = clicks.ReasonRateLimited
		} else {
			u = s.judge.Check(&c, clicks.Auth{D: req.D, Exp: req.Exp, Sig: req.Sig, CT: req.CT, Tok: req.Tok},
				clicks.IntentOf(r.Header), refuse)
			book, err := s.accountsIn(r.Context())
			if err != nil {
				return err
			}
			b, ok := book.Budget(ad.Advertiser)
			if !ok {
				// An advertiser gone from the file is held to its last
				// budget while its removed ads' links land.
				b, ok = s.catalogOf(r).keptBudget(req.AdID, c.Time)
			}
			if ok {
				// A bid in another currency is over the budget, which
				// counts only its own (the catalog's load refuses such ads).
				u.Budget, u.Currency, u.Zone = b.DailyMicros, b.Currency, b.Zone
			}
		}
		// Judged whole, as the signature or click token covers them whole.
		// A partner's are recorded whole, as its impressions are and its
		// report reads them; anyone else's cut.
		if !partner {
			c.APIKey, c.SiteID = truncate(c.APIKey, maxPartnerID), truncate(c.SiteID, maxPartnerID)
		}
		keepProven(&c, &req, partner)
		// When the click token of a link the page made, verified if c
		// keeps its criterion or yk_tag, was issued.
		shown, ok := clicks.TokenShown(req.CT)
		if !ok {
			shown = c.Time
		}
		if c.Criterion != "" && req.Sig == "" && req.Exp == "" {
			// Proven by a click token on a link the page made: its
			// criterion as the beacon recorded it (one of the ad's, as
			// match.Index.CanonicalCriterion reads it, or none for a
			// looser match's words), by the criteria
			// the catalog took when it issued the token, which may be past
			// a refresh's grace now.
			c.Criterion, _ = s.catalogOf(r).pageCriterion(req.AdID, c.Criterion, shown)
		}
		if c.YkTag != "" && req.Sig == "" && req.Exp == "" {
			// A page-made link's, proven by its click token: recorded as
			// its impression recorded it, when the day it was shown, which
			// may be before midnight, admits it.
			c.YkTag = s.pageTag(r.Context(), c.APIKey, c.SiteID, c.YkTag, shown)
		}
		if !isOver || over.record {
			// A reader who clicked and left before the 302 still clicked:
			// the record is not cut short with the request (with
			// -postgres, a click Postgres is slow to take is spooled, not
			// dropped), and the ledger's own wait bounds it.
			rctx := context.WithoutCancel(r.Context())
			began := time.Now()
			spooled, err := s.record(rctx, &c, u)
			s.metrics.ClickRecord(time.Since(began), err)
			if err != nil {
				return internal(fmt.Errorf("recording click: %w", err))
			}
			// The id the click is recorded under, for support to find it.
			w.Header().Set("X-Adlink-Click", c.ID)
			id = c.ID
			// The click is on disk; should its advertiser's spend not be
			// read now, the next click reads it, and the ledger holds the
			// budget meanwhile. A spooled click's spend is read once it
			// ships (clicks.SpoolerOptions.Recorded): read now, it would
			// only wait on the store that did not take it.
			if !spooled {
				if err := s.budgetIn(r.Context()).Clicked(rctx, &c); err != nil {
					s.log.Warn("budget", "err", err)
				}
			}
		}
		s.metrics.Click(c.Billable, c.Reason)
	}
	h := w.Header()
	h.Set("Location", s.landing(r, ad.Landing, ad.Advertiser, id))
	h.Set("Cache-Control", "no-store")
	// The click URL carries the partner's key and site; the advertiser
	// learns nothing from the referrer.
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusFound)
	return nil
}

// record records c in the server's ledger and says whether the ledger
// spooled it (Deps.Spooling) rather than recorded it in its store.
func (s *server) record(ctx context.Context, c *clicks.Click, u clicks.Use) (spooled bool, err error) {
	if s.spooling != nil {
		return s.spooling.RecordOrSpool(ctx, c, u)
	}
	return false, s.ledger.Record(ctx, c, u)
}

// keepProven clears what the client of a click URL wrote freely and
// nothing proves adlink made: its criterion and yk_tag unless a signature
// or click token verified them (an expired one too: its MAC holds; a site
// token covers the key and site alone), and the key and site unless they
// are a partner's or were signed (a revoked partner's link). Each value
// would be a report row of its own, kept for good in the rollups, so
// anyone could grow them without end with made-up URLs. Such a click
// never bills; its ad, context and client stay.
func keepProven(c *clicks.Click, req *contract.Redirect, partner bool) {
	signed := req.Sig != "" || req.Exp != "" || req.CT != ""
	switch c.Reason {
	case clicks.ReasonUnsigned, clicks.ReasonForged, clicks.ReasonRateLimited:
		signed = false // no proof, a false one, or none checked
	}
	if !signed {
		c.Criterion, c.YkTag = "", ""
	}
	if !partner && !signed {
		c.APIKey, c.SiteID = "", ""
	}
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
