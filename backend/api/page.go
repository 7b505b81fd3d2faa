package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/pages"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/contract"
)

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

// page answers GET /v2/page/link: ads for an analysed page, pending (202)
// for one being analysed, failed (200) for one that could not be.
func (s *server) page(w http.ResponseWriter, r *http.Request) error {
	v, err := queryValues(r)
	if err != nil {
		return err
	}
	req, problems := contract.ParsePage(v, canonicalURL)
	if err := badRequest(problems); err != nil {
		return err
	}
	apiKey, siteID := req.Links.APIKey, req.Links.SiteID
	site, err := s.authorize(r.Context(), apiKey, siteID)
	if err != nil {
		return err
	}
	if err := pages.CheckDomain(req.URL, site.Domains); err != nil {
		return problemError(http.StatusForbidden, contract.ForeignURL(siteID), err)
	}
	if s.pages == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeInternal,
			Message: "the page context is not available", Err: errors.New("no pages service")}
	}
	res, err := s.pages.LookupAdmit(r.Context(), req.URL, s.admitPage(w, r, apiKey, siteID))
	var limited *Error
	if errors.As(err, &limited) {
		return limited
	}
	if errors.Is(err, pages.ErrQueueFull) {
		e := problemError(http.StatusServiceUnavailable, contract.QueueFull(), err)
		e.RetryAfter = int64(queueFullRetry / time.Second)
		return e
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
		respond(w, http.StatusAccepted, b, req.Callback)
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
		respond(w, http.StatusOK, b, req.Callback)
		return nil
	}
	q := req.PageQuery(res.Title, res.Text)
	q.Country, _ = s.market(w, r, q.Country, "")
	if q.Country == "" {
		// No country: the page's language picks its market (the one market
		// in it), or filters the whole catalog by it; a language no market
		// serves gets no ads.
		q.Lang = res.Lang
	}
	ix := s.index(s.catalogOf(r), q.Country, q.Lang)
	q.Exclude = s.budgetIn(r.Context()).Exclude(ix)
	hits := ix.Match(&q)
	// What the site's pages are about chooses the shard its unseen pages
	// load: learnt once per page, from the page alone, as a request
	// without loc matches it (its language's market). Not from this
	// request's market: the key is public, and whoever asks for a page
	// first would choose what it teaches (another market's ads, or none
	// from a country no ad runs in).
	own, ownIx := q, ix
	if q.Country != "" {
		own.Country, own.Lang = "", res.Lang
		ownIx = s.index(s.catalogOf(r), "", res.Lang)
	}
	s.sites.Observe(siteshards.SiteKey(apiKey, siteID), res.URL, ownIx, own)
	o := s.linkOptions(&req.Links)
	*buf = ix.AppendServerResponse(b, hits, &o)
	w.Header().Set("Cache-Control", answerCache)
	respond(w, http.StatusOK, *buf, req.Callback)
	return nil
}
