package pages

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Record is the stored result of one page's analysis, under the page's
// canonical URL.
type Record struct {
	URL string `json:"url"`
	// Alias, when set, names the canonical URL the page declared; its
	// analysis is stored there.
	Alias string `json:"alias,omitempty"`
	// Source, when set, is the page whose fetch produced this analysis: an
	// alias that declared URL its canonical. A record without Source is
	// the page's own (analysis, failure or alias), and no record with
	// Source replaces it (Store.Complete).
	Source string `json:"source,omitempty"`
	// Ignore, on the record of a path's query rule (URL is the path's
	// canonical URL without its query, then "?"), names the query
	// parameters its pages were seen not to vary by: a page there declared
	// its own URL without them as its canonical.
	Ignore []string `json:"ignore,omitempty"`
	// Failed says the page could not be analysed, for Reason.
	Failed bool   `json:"failed,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Title and Text are the page's title with headings and its main text,
	// reduced to the index criteria they contain (match.Index.Reduce).
	Title string `json:"title,omitempty"`
	Text  string `json:"text,omitempty"`
	Lang  string `json:"lang,omitempty"`
	// Catalog is the version of the catalog Title and Text were reduced
	// against, and Full the page's whole title and text, compressed, to
	// reduce again against another (Options.Catalog); both are empty when
	// the service was given a bare reducer.
	Catalog string `json:"catalog,omitempty"`
	Full    []byte `json:"full,omitempty"`
	// At is when the page was analysed or failed.
	At time.Time `json:"at"`
	// Attempts counts the failures in a row; RetryAt is when a failed page
	// may be tried again.
	Attempts int       `json:"attempts,omitempty"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// Store keeps the page records and the durable queue of pages waiting for
// analysis. They are one interface because finishing a job stores its
// records and removes it from the queue in one step: a crash leaves the
// page analysed or still queued, never neither. Bolt is the embedded
// Store, pgstore.Pages the shared one; every implementation passes
// storetest.Pages. Implementations are safe for concurrent use.
//
// A job is a canonical page URL, queued at most once. A worker Claims it,
// holding it for a lease that it Extends while it works, then Completes or
// Releases it. A job whose holder died is claimed again once its lease has
// passed (a store whose holds live in its process, as Bolt's, ends them
// all when it closes), so a page may be analysed twice but a queued page
// is never lost, and a completed one is not claimed again.
type Store interface {
	// Get returns the record stored under url, or nil and no error when
	// there is none.
	Get(ctx context.Context, url string) (*Record, error)

	// Push queues url unless it is queued already, held or not, and reports
	// whether it added it; pushing a queued url is no error and changes
	// nothing. An added job is durable when Push returns; a crash during
	// Push may leave it queued or not. Over the queue's bound Push returns
	// ErrQueueFull, over the share of url's site (SiteKey) ErrSiteQueueFull,
	// and adds nothing.
	//
	// seen is the At of the record under url that the caller read before
	// deciding to push (the zero time when it found none). When the record
	// stored under url is newer, as when a worker completed the page
	// between that read and Push, Push adds nothing and reports no error:
	// the page is analysed once, not again for a lookup that raced its
	// analysis.
	//
	// admit, when not nil, gates a new job: it is called only once url is
	// found neither queued nor over a bound, while no other Push can add
	// url, and its error is returned unwrapped with nothing added. So
	// admit is called at most once per job added, however many Pushes of
	// the url run at once.
	Push(ctx context.Context, url string, seen time.Time, admit func() error) (added bool, err error)

	// Claim holds the oldest queued job that no one holds and returns its
	// url, waiting until there is one or ctx is done (then ctx.Err()). The
	// hold ends with Complete or Release, or when lease has passed; until
	// then no other Claim returns the job. lease must be positive.
	Claim(ctx context.Context, lease time.Duration) (url string, err error)

	// Extend moves the end of the hold on url to lease from now and
	// reports whether there was a hold to extend: false when url is not
	// queued, not held, its lease has passed, or (in a store that can tell
	// holders apart) another Claim holds it now. lease must be positive.
	Extend(ctx context.Context, url string, lease time.Duration) (bool, error)

	// Release ends the hold on url without finishing the job, so that a
	// Claim may take it again at once. Releasing a job not held, or not
	// queued, is no error.
	Release(ctx context.Context, url string) error

	// Complete stores recs, each replacing the record under its URL, and
	// removes the job url from the queue, ending its hold, in one atomic
	// step that is durable when Complete returns. A rec with Source set is
	// skipped when the record under its URL has none, so an alias never
	// replaces what a page's own fetch stored, however their jobs
	// interleave. url need not be queued
	// and recs may be empty. After an error the step may not have happened
	// and the job may be claimed again.
	Complete(ctx context.Context, url string, recs ...*Record) error

	// Queued reports whether url is queued, held or not.
	Queued(ctx context.Context, url string) (bool, error)

	// Len returns the number of queued jobs, held ones included.
	Len(ctx context.Context) (int, error)

	// Oldest returns when the oldest queued job was queued, by the real
	// clock; ok is false when the queue is empty. For a job queued by an
	// earlier process a store that does not keep that time may answer when
	// it was opened: later than the truth, never earlier.
	Oldest(ctx context.Context) (at time.Time, ok bool, err error)

	// Sweep deletes at most limit records whose At is before cutoff (a
	// record it cannot read counts as old) and returns how many it deleted.
	// The queue is untouched. Deletions are durable when Sweep returns; a
	// crash may leave some of them done.
	Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// ErrQueueFull is returned by Store.Push when the queue holds its maximum,
// or (wrapped, as ErrSiteQueueFull) its maximum for the page's site.
var ErrQueueFull = errors.New("page queue is full")

// ErrSiteQueueFull is returned by Store.Push when the page's site holds its
// share of the queue; it is an ErrQueueFull.
var ErrSiteQueueFull = fmt.Errorf("%w for this site", ErrQueueFull)

// SiteKey is what the queue's per-site share counts by: the page's
// registered domain (eTLD+1), or its host when it has none (an IP address,
// localhost).
func SiteKey(pageURL string) string {
	u, err := neturl.Parse(pageURL)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return host
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}
