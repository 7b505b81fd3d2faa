package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/match"
)

// CodeForeignURL is the error code of a page URL outside the site's
// domains (403).
const CodeForeignURL = "url_not_allowed"

// CodeQueueFull is the error code of an unseen page that cannot be queued
// now (503 with Retry-After).
const CodeQueueFull = "queue_full"

// queueFullRetry is the Retry-After of a 503 for a full queue.
const queueFullRetry = 5 * time.Second

// Pages is the page context as the page handler uses it; *pages.Service
// is the real one.
type Pages interface {
	// LookupAdmit returns what is known of a canonical page URL, queueing
	// it when needed; pages.ErrQueueFull when it cannot be queued, or
	// admit's error when admit refuses a page not queued yet.
	LookupAdmit(ctx context.Context, pageURL string, admit func() error) (*pages.Result, error)
}

var _ Pages = (*pages.Service)(nil)

// pageParams is a /v2/page/link request, parsed and validated once.
type pageParams struct {
	// URL is the canonical page URL (pages.Canonical).
	URL      string
	APIKey   string
	SiteID   string
	Callback string
	// Loc is "", a lower-case ISO 3166 alpha-2 code or locUseGeo.
	Loc     string
	Fields  match.Fields
	LogoDim string
	Kinds   match.Kinds
}

// parsePage reads every /v2/page/link parameter and reports every bad one
// together.
func parsePage(v url.Values) (pageParams, error) {
	p := newValues(v)
	var pp pageParams
	if raw := p.Required("url"); raw != "" {
		c, err := pages.Canonical(raw)
		var bad *pages.BadURLError
		switch {
		case errors.As(err, &bad):
			p.invalid("url", "%s", bad.Error())
		case err != nil:
			p.invalid("url", "url is not a valid page URL")
		default:
			pp.URL = c
		}
	}
	pp.APIKey = p.Required("api_key")
	pp.SiteID = p.Required("site_id")
	pp.Callback = parseCallback(&p)
	pp.Loc = parseLoc(&p)
	if s, ok := p.Optional("fields"); ok {
		var msgs []string
		pp.Fields, msgs = match.ParseFields(s, match.PageFieldNames)
		p.Note("fields", msgs...)
	}
	pp.LogoDim = parseLogoDim(&p)
	if s, ok := p.Optional("ad_type"); ok {
		var msgs []string
		pp.Kinds, msgs = match.ParseKinds(s, match.PageKindNames)
		p.Note("ad_type", msgs...)
	}
	if err := p.err(); err != nil {
		return pageParams{}, err
	}
	return pp, nil
}

// page answers GET /v2/page/link: ads for an analysed page, pending (202)
// for one being analysed, failed (200) for one that could not be.
func (s *server) page(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	p, err := parsePage(v)
	if err != nil {
		return err
	}
	site, err := s.authorize(r.Context(), p.APIKey, p.SiteID)
	if err != nil {
		return err
	}
	if err := pages.CheckDomain(p.URL, site.Domains); err != nil {
		return &Error{Status: http.StatusForbidden, Code: CodeForeignURL, Param: "url",
			Message: "url must be on one of the domains of site " + quote(p.SiteID), Err: err}
	}
	if s.pages == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeInternal,
			Message: "the page context is not available", Err: errors.New("no pages service")}
	}
	res, err := s.pages.LookupAdmit(r.Context(), p.URL, s.admitPage(w, r, p.APIKey, p.SiteID))
	var limited *Error
	if errors.As(err, &limited) {
		return limited
	}
	if errors.Is(err, pages.ErrQueueFull) {
		w.Header().Set("Retry-After", strconv.Itoa(int(queueFullRetry/time.Second)))
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeQueueFull,
			Message: "too many pages are waiting for analysis; retry later", Err: err}
	}
	if err != nil {
		return internal(err)
	}
	buf := getBuf()
	defer putBuf(buf)
	b := (*buf)[:0]
	switch res.Status {
	case pages.StatusPending:
		ms := res.RetryAfter.Milliseconds()
		secs := (ms + 999) / 1000
		w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
		w.Header().Set("Cache-Control", "no-store")
		b = append(b, `{"link":[],"status":"pending","retry_after_ms":`...)
		b = strconv.AppendInt(b, ms, 10)
		b = append(b, '}')
		*buf = b
		respond(w, http.StatusAccepted, b, p.Callback)
		return nil
	case pages.StatusFailed:
		w.Header().Set("Cache-Control", "no-store")
		b = append(b, `{"link":[],"status":"failed","reason":`...)
		reason, err := json.Marshal(res.Reason)
		if err != nil {
			return internal(err)
		}
		b = append(b, reason...)
		b = append(b, '}')
		*buf = b
		respond(w, http.StatusOK, b, p.Callback)
		return nil
	}
	q := match.Query{Page: true, Title: res.Title, Text: res.Text, Country: p.Loc, Kinds: p.Kinds}
	if q.Country == locUseGeo {
		q.Country = s.geoCountry(r)
		w.Header().Add("Vary", s.cfg.CountryHeader)
	}
	ix := s.index(q.Country, "")
	hits := ix.Match(&q)
	*buf = ix.AppendResponse(b, hits, &match.LinkOptions{
		RedirectURL: s.cfg.RedirectURL,
		Context:     match.ContextPage,
		APIKey:      p.APIKey,
		SiteID:      p.SiteID,
		Fields:      p.Fields,
		LogoDim:     p.LogoDim,
		Sign:        s.signLinks(),
	})
	respond(w, http.StatusOK, *buf, p.Callback)
	return nil
}
