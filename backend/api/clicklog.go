package api

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/adlink/adlink/backend/report"
)

// clickList answers GET /v2/clicks: the clicks of the account whose report
// token the Authorization header carries (on a partner's sites, on an
// advertiser's ads), one row each with its verdict, over from..to, a page
// at a time, as JSON or CSV. Authorised, limited and kept from caches and
// other origins as /v2/report is.
func (s *server) clickList(w http.ResponseWriter, r *http.Request) error {
	var repeated []report.Problem
	acc, get, err := s.accountRequest(w, r, &repeated)
	if err != nil {
		return err
	}
	h := w.Header()
	req, problems := report.ParseClicks(get, s.now())
	if err := reportProblems(append(repeated, problems...)); err != nil {
		return err
	}
	q, ok := req.Query(acc)
	if !ok {
		return internal(fmt.Errorf("clicks: account of kind %q", acc.Kind))
	}
	if s.clickLog == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeInternal,
			Message: "clicks are not available here", Err: errors.New("no click log")}
	}
	page, more, err := s.clickLog.List(r.Context(), q)
	if err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeReportsUnavailable, RetryAfter: reportRetry,
			Message: "the clicks' store did not answer", Err: fmt.Errorf("clicks: %w", err)}
	}
	h.Set("X-Adlink-Timezone", req.ZoneName())
	next := report.Next(&req, page, more)
	if next != "" {
		h.Set("X-Adlink-Next", next)
	}
	if req.Format == "csv" {
		var buf bytes.Buffer
		if err := report.WriteClicksCSV(&buf, req.Zone, page); err != nil {
			return internal(err)
		}
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="adlink-clicks-`+req.From.Format(time.DateOnly)+"-"+req.To.Format(time.DateOnly)+`.csv"`)
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		w.Write(buf.Bytes())
		return nil
	}
	respond(w, http.StatusOK, report.AppendClicksJSON(nil, acc, req, page, next), "")
	return nil
}
