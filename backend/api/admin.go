package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/report"
)

// The admin listener's routes: /metrics, the catalog's reload and a backup
// of the state file, on an address of their own (loopback by default), so
// that none is reachable where the public API is and the public port
// stays GET-only.

// AdminDeps are what the admin handler serves.
type AdminDeps struct {
	// Metrics are served at GET /metrics; nil serves a 404 there.
	Metrics *metrics.Metrics
	// Reload refreshes the catalog now, and force swaps in a catalog the
	// checks would refuse (one that lost too many ads, or is empty); nil
	// answers POST /admin/reload with a 404.
	Reload func(ctx context.Context, force bool) Reload
	// Invalidate credits the billed clicks an Invalidation selects, logs
	// the run and says what it credited, also when it failed midway
	// (app.Invalidate over a clicks.Invalidator); nil answers
	// POST /admin/invalidate with a 404.
	Invalidate func(ctx context.Context, inv clicks.Invalidation) (clicks.Credit, error)
	// Rollups are what GET /admin/sites/review reads (report.Sites);
	// nil answers it with a 404.
	Rollups clicks.RollupReader
	// ReviewTimeout is how long one site review may read Rollups; 0 is
	// DefaultReviewTimeout.
	ReviewTimeout time.Duration
	// Backup returns a consistent copy of the state file, open at its
	// start, for GET /admin/backup to send and close (store.Backup); nil
	// answers it with a 404.
	Backup func() (*os.File, error)
	// BackupStall is how long one write of a backup may wait on a client
	// that stops reading before the backup is dropped, freeing its copy
	// and its turn; 0 is DefaultBackupStall.
	BackupStall time.Duration
	// Logger logs a backup that failed; nil logs nothing.
	Logger *slog.Logger
	// Hosts are the host names /admin/ answers under besides addresses,
	// localhost and names without a dot (config.AdminHosts).
	Hosts []string
	// Now times a running backup, whose progress sets the Retry-After of
	// another refused meanwhile; nil is time.Now.
	Now func() time.Time
}

// Reload is how a refresh ended, the answer of POST /admin/reload.
type Reload struct {
	// Result is swapped, unchanged, refused (by the checks; the old
	// catalog serves) or failed (a feed could not be read or parsed).
	Result string `json:"result"`
	// Version and Ads are of the catalog served after the refresh.
	Version string `json:"version"`
	Ads     int    `json:"ads"`
	// Error says why a refresh was refused or failed.
	Error string `json:"error,omitempty"`
	// Accounts is how the partners and advertisers files fared, apart
	// from the catalog: swapped (either read again and served, with the
	// catalog or alone), else refused (by their checks, or their budgets'
	// currencies against the catalog served) or failed (not read or
	// parsed), or empty when they are as served. Result is the catalog's
	// alone.
	Accounts string `json:"accounts,omitempty"`
	// Partners and Advertisers are how each file fared on its own, in the
	// same words: a file refused or failed keeps its accounts served, and
	// the other's change is swapped in with them.
	Partners    string `json:"partners,omitempty"`
	Advertisers string `json:"advertisers,omitempty"`
	// AccountsError says, naming the file, why one was refused or failed
	// and that its accounts served stay, and what of those served is not
	// served yet (the budget gate kept).
	AccountsError string `json:"accounts_error,omitempty"`
	// Warnings are what the feeds say that is not read, the catalog
	// loading all the same: each Merchant Center attribute that is
	// neither adlink's nor Google's, as "file:line: name: message" with
	// the attribute it likely misspells, the first catalog.MaxErrors of a
	// feed and a line counting the rest. They are the feeds' as last
	// read, whether or not this refresh read them again.
	Warnings []string `json:"warnings,omitempty"`
}

// NewAdmin returns the admin listener's handler.
func NewAdmin(d AdminDeps) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.Metrics.Handler())
	mux.HandleFunc("POST /admin/reload", func(w http.ResponseWriter, r *http.Request) {
		if d.Reload == nil {
			respondError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no catalog to reload"})
			return
		}
		force := false
		if v := r.URL.Query().Get("force"); v != "" {
			var err error
			if force, err = strconv.ParseBool(v); err != nil {
				respondError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Param: "force",
					Message: "force " + quote(v) + ": want true or false"})
				return
			}
		}
		res := d.Reload(r.Context(), force)
		// The catalog's result decides the status; when it is served,
		// the accounts files' does, a file kept while the other swapped
		// too.
		status := http.StatusOK
		for _, result := range []string{res.Result, res.Accounts, res.Partners, res.Advertisers} {
			switch result {
			case "refused":
				status = http.StatusConflict
			case "failed":
				status = http.StatusBadGateway
			default:
				continue
			}
			break
		}
		body, _ := json.Marshal(res) // strings and ints always marshal
		w.Header().Set("Cache-Control", "no-store")
		respond(w, status, body, "")
	})
	mux.HandleFunc("POST /admin/invalidate", func(w http.ResponseWriter, r *http.Request) { invalidate(w, r, d) })
	mux.Handle("GET /admin/sites/review", reviewSites(d))
	mux.Handle("GET /admin/backup", backup(d))
	// Each route's path with another method: without these, the mux
	// would send it to "/" as a path it does not serve.
	for path, allow := range map[string]string{"/metrics": "GET, HEAD", "/admin/reload": "POST", "/admin/invalidate": "POST", "/admin/sites/review": "GET, HEAD", "/admin/backup": "GET, HEAD"} {
		mux.Handle(path, wrongMethod(allow))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		respondError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: "no such endpoint: " + quote(r.Method+" "+r.URL.Path) + "; the admin listener serves GET /metrics, POST /admin/reload, POST /admin/invalidate, GET /admin/sites/review and GET /admin/backup"})
	})
	return fromOperator(mux, d.Hosts)
}

// MaxAdminBody bounds a request body of the admin listener: the form of
// POST /admin/invalidate, where a list of click ids fits. The server's
// own bound on the listener's bodies must not be smaller.
const MaxAdminBody = 1 << 20

// Invalidated is the answer of POST /admin/invalidate: the billed clicks
// made not billable (or, with dry_run, that would be) and their bids by
// currency, in millionths.
type Invalidated struct {
	DryRun bool             `json:"dry_run"`
	Clicks int64            `json:"clicks"`
	Micros map[string]int64 `json:"micros"`
}

// invalidate answers POST /admin/invalidate: its parameters, in the query
// or a form body, are clicks.ParseInvalidation's; ids may also be given
// as id repeated.
func invalidate(w http.ResponseWriter, r *http.Request, d AdminDeps) {
	if d.Invalidate == nil {
		respondError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no click log to invalidate clicks in"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxAdminBody)
	if err := r.ParseForm(); err != nil {
		respondError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Message: "unreadable form: " + err.Error()})
		return
	}
	get := func(k string) string {
		if k == "id" {
			return strings.Join(r.Form["id"], ",")
		}
		return r.Form.Get(k)
	}
	inv, err := clicks.ParseInvalidation(get)
	if err == nil {
		err = inv.Check()
	}
	var credit clicks.Credit
	if err == nil {
		credit, err = d.Invalidate(r.Context(), inv)
	}
	var ie *clicks.InvalidationError
	switch {
	case errors.As(err, &ie):
		respondError(w, &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Param: ie.Param, Message: ie.Message})
		return
	case err != nil:
		// d.Invalidate logged the run, its error and what it credited.
		respondError(w, &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
			Message: "invalidate failed: " + err.Error() + "; the batches credited before (" + strconv.FormatInt(credit.Clicks, 10) +
				" clicks) stay credited, and running it again credits the rest"})
		return
	}
	if credit.Micros == nil {
		credit.Micros = map[string]int64{}
	}
	body, _ := json.Marshal(Invalidated{DryRun: inv.DryRun, Clicks: credit.Clicks, Micros: credit.Micros})
	w.Header().Set("Cache-Control", "no-store")
	respond(w, http.StatusOK, body, "")
}

// DefaultReviewTimeout is how long a site review may read the rollups by
// default.
const DefaultReviewTimeout = time.Minute

// CodeReviewBusy is the error code of a site review asked for while
// another runs; CodeReviewTimeout that of one that read the rollups past
// its deadline.
const (
	CodeReviewBusy    = "site_review_in_progress"
	CodeReviewTimeout = "site_review_timeout"
)

// reviewSites answers GET /admin/sites/review: the sites whose billable
// click-through rate, or share of clicks refused as a script's, is
// furthest above the median site's (report.ParseSites' parameters,
// report.Sites' answer), for the
// operator to look at and, found invalid, credit. One review runs at a
// time, so that reviews hold at most one Postgres connection or bbolt
// read transaction: another asked for meanwhile gets a 503 with a
// Retry-After (as long again as the running one has run, at most until
// its deadline). A review reads for d.ReviewTimeout at most. A HEAD
// checks the parameters as a GET does, answers 200 to good ones, and
// sums nothing.
func reviewSites(d AdminDeps) http.Handler {
	timeout := d.ReviewTimeout
	if timeout <= 0 {
		timeout = DefaultReviewTimeout
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	turn := make(chan struct{}, 1)
	var started atomic.Int64 // the running review's start, in Unix nanoseconds
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Rollups == nil {
			respondError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no reports to review sites in"})
			return
		}
		req, problems := report.ParseSites(r.URL.Query().Get, now())
		if err := reportProblems(problems); err != nil {
			respondError(w, err.(*Error))
			return
		}
		if r.Method == http.MethodHead {
			// Checks the parameters only: summing the rollups for an
			// answer without a body would spend the turn for nothing.
			setReviewHeaders(w.Header())
			w.WriteHeader(http.StatusOK)
			return
		}
		select {
		case turn <- struct{}{}:
			started.Store(now().UnixNano())
		default:
			ran := now().Sub(time.Unix(0, started.Load()))
			retry := min(max(math.Ceil(min(ran, timeout-ran).Seconds()), 1), math.Ceil(timeout.Seconds()))
			respondError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeReviewBusy, RetryAfter: int64(retry),
				Message: "another site review is running, and one runs at a time"})
			return
		}
		// The turn is given back once the read ends, before the answer
		// is written, so that a client told the review is done finds
		// the turn free.
		var timedOut bool
		review, err := func() (report.SiteReview, error) {
			defer func() { <-turn }()
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			review, err := report.Sites(ctx, d.Rollups, req)
			timedOut = ctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil
			return review, err
		}()
		if err != nil {
			if d.Logger != nil {
				d.Logger.Error("site review", "err", err)
			}
			if timedOut {
				respondError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeReviewTimeout,
					Message: "the site review read the rollups for longer than " + timeout.String() + "; review fewer days"})
				return
			}
			respondError(w, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "site review failed: " + err.Error()})
			return
		}
		setReviewHeaders(w.Header())
		respond(w, http.StatusOK, review.JSON(), "")
	})
}

// setReviewHeaders sets the headers of a site review's 200 but its
// length, which only the sums give.
func setReviewHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// wrongMethod answers a request to an admin route with a method it does
// not take: 405, the methods it does take in Allow.
func wrongMethod(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		respondError(w, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: "method " + quote(r.Method) + " is not allowed on " + quote(r.URL.Path) + "; use " + strings.ReplaceAll(allow, ", ", " or ")})
	})
}

// CodeForbidden is the error code of an admin request a web page could
// have sent.
const CodeForbidden = "forbidden"

// fromOperator refuses what a web page open in a browser on the admin
// listener's machine could send it, loopback or not: a cross-origin POST
// (a form, a no-cors fetch), and, under /admin/, a request the browser
// says another site made (an <img> of /admin/backup, which would copy the
// state file and hold off the operator's backups), or one by a dotted
// name, which may be a page's own name rebound to the listener's address
// (DNS rebinding), whose answers the page then reads. The operator's
// tools ask by address, localhost, the machine's own name or one of
// hosts, the names the operator gave; /metrics stays open to a scraper
// that names the host in full.
func fromOperator(h http.Handler, hosts []string) http.Handler {
	refuse := func(w http.ResponseWriter, _ *http.Request) {
		respondError(w, &Error{Status: http.StatusForbidden, Code: CodeForbidden,
			Message: "a cross-origin request is refused: the admin listener is for the operator's tools"})
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(refuse))
	h = cop.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/admin/") {
			h.ServeHTTP(w, r)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			refuse(w, r)
			return
		}
		if !operatorHost(r.Host, hosts) {
			respondError(w, &Error{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: "host " + quote(r.Host) + " is refused: ask by address (127.0.0.1), localhost or the machine's name, or name the host in -admin-hosts"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// operatorHost reports whether a request's Host is one no web page but
// the listener's own can have: an IP address, a name without a dot
// (localhost, the machine's name), a name under .localhost, none, or one
// of hosts, which the operator named.
func operatorHost(hostport string, hosts []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return !strings.Contains(host, ".") || strings.HasSuffix(host, ".localhost") ||
		slices.ContainsFunc(hosts, func(h string) bool { return strings.EqualFold(strings.TrimSuffix(h, "."), host) })
}

// DefaultBackupStall is how long one write of a backup waits on its client
// by default.
const DefaultBackupStall = time.Minute

// CodeBackupBusy is the error code of a backup asked for while another is
// taken or sent.
const CodeBackupBusy = "backup_in_progress"

// maxBackupRetry caps the Retry-After of a backup refused while another
// runs: a client told to wait longer would rather ask again.
const maxBackupRetry = 300

// backupRun is the progress of the backup that holds the turn.
type backupRun struct {
	start time.Time
	// size is the copy's size once it is made (0 while it is copied),
	// sent how many of its bytes the client has taken.
	size, sent atomic.Int64
}

// backupRetry estimates, in whole seconds from 1 to maxBackupRetry, how
// long a backup has left that began elapsed ago and sent sent bytes of
// size: at the pace it went so far, the rest takes elapsed*(size-sent)/sent.
// With nothing sent yet (the copy is being made, or the client has taken
// no byte) the pace is unknown: as long again as it has run.
func backupRetry(elapsed time.Duration, sent, size int64) int {
	left := elapsed.Seconds()
	if sent > 0 {
		left *= float64(max(size-sent, 0)) / float64(sent)
	}
	return int(min(max(math.Ceil(left), 1), maxBackupRetry))
}

// backup answers GET and HEAD /admin/backup. A GET copies the state file
// to the data directory (d.Backup), then sends the copy; one backup runs
// at a time, from the copy's start to the end of its sending, so backups
// never hold more than one copy on the disk: another GET meanwhile gets a
// 503 with a Retry-After the running backup's pace sets (backupRetry). A
// HEAD says what a GET would get now, without
// copying anything. A client that stops reading for d.BackupStall is
// dropped, which ends its backup.
func backup(d AdminDeps) http.Handler {
	stall := d.BackupStall
	if stall <= 0 {
		stall = DefaultBackupStall
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	turn := make(chan struct{}, 1)
	var running atomic.Pointer[backupRun]
	busy := func(w http.ResponseWriter) {
		retry := 1
		if run := running.Load(); run != nil {
			retry = backupRetry(now().Sub(run.start), run.sent.Load(), run.size.Load())
		}
		respondError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeBackupBusy, RetryAfter: int64(retry),
			Message: "another backup is being taken or sent, and one runs at a time"})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Backup == nil {
			respondError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no state file to back up"})
			return
		}
		h := w.Header()
		if r.Method == http.MethodHead {
			if len(turn) > 0 {
				busy(w)
				return
			}
			setBackupHeaders(h)
			w.WriteHeader(http.StatusOK)
			return
		}
		select {
		case turn <- struct{}{}:
			run := &backupRun{start: now()}
			running.Store(run)
			defer func() {
				running.Store(nil)
				<-turn
			}()
		default:
			busy(w)
			return
		}
		f, err := d.Backup()
		if err != nil {
			if d.Logger != nil {
				d.Logger.Error("backup", "err", err)
			}
			respondError(w, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "backup failed: " + err.Error()})
			return
		}
		defer f.Close()
		run := running.Load()
		if fi, err := f.Stat(); err == nil {
			run.size.Store(fi.Size())
		}
		setBackupHeaders(h)
		// Sets Content-Length, and answers ranges.
		http.ServeContent(stallWriter{w, http.NewResponseController(w), stall, &run.sent}, r, "", time.Time{}, f)
	})
}

// setBackupHeaders sets the headers of a backup's 200.
func setBackupHeaders(h http.Header) {
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="adlink.db"`)
	h.Set("Cache-Control", "no-store")
}

// stallWriter gives each write of a response stall to go through, so a
// client that stops reading is dropped rather than held for ever.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	sent  *atomic.Int64 // the bytes written
}

func (w stallWriter) Write(p []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.stall)) // not every connection has deadlines
	n, err := w.ResponseWriter.Write(p)
	w.sent.Add(int64(n))
	return n, err
}

func respondError(w http.ResponseWriter, e *Error) {
	e.setRetryAfter(w.Header())
	respond(w, e.Status, e.body(), "")
}
