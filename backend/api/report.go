package api

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/report"
)

// CodeUnauthorized: a report request without a report token, or with one
// no account has (401).
const CodeUnauthorized = "unauthorized"

// CodeReportsUnavailable: the store the reports are read from did not
// answer (a Postgres that is down), 503 with a Retry-After.
const CodeReportsUnavailable = "reports_unavailable"

// reportRetry is the Retry-After, in seconds, of a report the store did
// not answer.
const reportRetry = 10

// reportRequest answers GET /v2/report: the report of the account whose
// report token the Authorization header carries (a partner's sites', an
// advertiser's ads'), over from..to, grouped by group_by, as JSON or CSV.
// The token never goes in the URL, and the answer is neither cached nor
// readable by other origins.
func (s *server) reportRequest(w http.ResponseWriter, r *http.Request) error {
	var repeated []report.Problem
	acc, get, err := s.accountRequest(w, r, &repeated)
	if err != nil {
		return err
	}
	h := w.Header()
	req, problems := report.Parse(get, s.now())
	if err := reportProblems(append(repeated, problems...)); err != nil {
		return err
	}
	if s.rollups == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeInternal,
			Message: "reports are not available here", Err: errors.New("no rollups")}
	}
	done, err := s.startReport(acc)
	if err != nil {
		return err
	}
	defer done()
	// The rows stay held until the answer is written: it is as large.
	held, err := s.holdReport(r, acc)
	if err != nil {
		return err
	}
	defer held.release()
	rows, err := report.RunHolding(r.Context(), s.rollups, acc, req, held.hold)
	if tooMany := (*report.TooManyRows)(nil); errors.As(err, &tooMany) {
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Param: "group_by", Message: tooMany.Error()}
	}
	if e := (*Error)(nil); errors.As(err, &e) {
		return err // reports_busy: hold's
	}
	if err != nil {
		// The request was read; what failed is the store (with -postgres,
		// one that is down while clicks are spooled). The client may try
		// again; the log has the cause.
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeReportsUnavailable, RetryAfter: reportRetry,
			Message: "the reports' store did not answer", Err: fmt.Errorf("report: %w", err)}
	}
	held.keep(len(rows))
	h.Set("X-Adlink-Timezone", req.ZoneName())
	h.Set("X-Content-Type-Options", "nosniff")
	// The answer is written as it is made, not held whole beside its
	// rows: whatever would change its status is known by now, and what
	// fails while it is written is the client, gone.
	if req.Format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="adlink-report-`+req.From.Format(time.DateOnly)+"-"+req.To.Format(time.DateOnly)+`.csv"`)
		w.WriteHeader(http.StatusOK)
		bw := bufio.NewWriterSize(w, reportChunk)
		if report.WriteCSV(bw, req, rows) == nil {
			bw.Flush()
		}
		return nil
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	report.WriteJSON(w, acc, req, rows)
	return nil
}

// reportChunk is the most of a CSV report kept before it is written.
const reportChunk = 64 << 10

// accountRequest starts the answer to a request of an account's own
// (/v2/report, /v2/clicks): kept from caches and told apart by its
// token, the account the Authorization header names, and the request's
// parameters, each read once (one given twice joins repeated).
func (s *server) accountRequest(w http.ResponseWriter, r *http.Request, repeated *[]report.Problem) (accounts.Account, func(string) string, error) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Authorization")
	acc, err := s.reportAccount(r)
	if err != nil {
		h.Set("WWW-Authenticate", `Bearer realm="adlink reports"`)
		return acc, nil, err
	}
	if err := s.limitAccount(w, r, acc); err != nil {
		return acc, nil, err
	}
	v, err := queryValues(r)
	if err != nil {
		return acc, nil, err
	}
	return acc, once(v, repeated), nil
}

// once reads the parameters of v, and adds to repeated a problem for
// each given twice: it is refused, as on every endpoint, rather than
// read as its first value alone.
func once(v url.Values, repeated *[]report.Problem) func(string) string {
	return func(name string) string {
		if n := len(v[name]); n > 1 && !slices.ContainsFunc(*repeated, func(p report.Problem) bool { return p.Param == name }) {
			*repeated = append(*repeated, report.Problem{Param: name, Message: name + " is given " + strconv.Itoa(n) + " times; give it once"})
		}
		return v.Get(name)
	}
}

// reportProblems is the 400 of a report's or a listing's problems, the
// first named, or nil when there are none.
func reportProblems(problems []report.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Message
	}
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Param: problems[0].Param, Message: strings.Join(msgs, "; ")}
}

// reportAccount is the account whose token the request's
// "Authorization: Bearer <token>" carries, or a 401.
func (s *server) reportAccount(r *http.Request) (accounts.Account, error) {
	auth := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	if auth == "" || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return accounts.Account{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
			Message: "a report needs the header Authorization: Bearer <report token>"}
	}
	book, err := s.accountsIn(r.Context())
	if err != nil {
		return accounts.Account{}, err
	}
	acc, ok := book.Authenticate(token)
	if !ok {
		return accounts.Account{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
			Message: "the report token is not valid"}
	}
	return acc, nil
}
