package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/report"
)

// CodeReportsBusy: the reports running on the server hold every row it
// lets reports hold (-report-rows), or the account's reports hold its
// share of them: a report waited reportWait in vain to start, or needed
// more rows as it read and none were free (503 with a Retry-After).
const CodeReportsBusy = "reports_busy"

// reportWait is how long a report waits to start for rows that the
// reports running hold before it is refused: about as long as a small
// report takes, far less than a client's timeout.
const reportWait = 2 * time.Second

// reportBusyRetry is the Retry-After, in seconds, of a report refused
// with reports_busy.
const reportBusyRetry = 5

// reportSteps is how many parts of the server's rows a report takes at
// most as its rows grow: a part is small enough that many reports run
// beside a large one, and large enough that the large one asks seldom.
const reportSteps = 64

// reportFirst are the rows a report takes to start, or a part when that
// is fewer: most reports are a few rows, so that hundreds of them run
// together.
const reportFirst = 1000

// reportRows are the rows the reports running on a server hold together
// (config.ReportRows): a report is kept whole in memory until it is
// written, so many accounts' large reports at once would exhaust the
// server's. Nil bounds nothing.
//
// A report waits only to start, before it reads the store, and the
// reports waiting to start are given their rows in the order asked. A
// report that needs more rows as it reads takes them at once or is
// refused: it holds a Postgres connection or a bbolt read transaction
// meanwhile, which clicks need to commit. So a report reading has the
// free rows before those waiting to start, and a report starting leaves
// a part free while others run (kept), which they may need as they read:
// a stream of small reports cannot take every row a large one needs.
// Once read, a report gives back what it holds past its rows.
//
// The reports of one account hold at most share rows together, so that
// they leave the others room; while no other account's report holds
// rows or waits to start, up to lend, all but the rows of the largest
// report, which another account may then still run.
type reportRows struct {
	// step is a part of the rows a report grows by; first the part it
	// starts with; share the most one account's reports hold, lend the
	// most while they are the only ones.
	step, first, share, lend int64

	mu sync.Mutex
	// all are the rows of the bound, free those no report holds.
	all, free int64
	// held are the rows each account's reports hold.
	held map[accounts.Account]int64
	// queue are the reports waiting to start, first asked first.
	queue []*rowsAsked
}

// rowsAsked is a report waiting for its first part of the rows.
type rowsAsked struct {
	acc accounts.Account
	// given is closed when the part is the report's.
	given chan struct{}
}

// errServerRows and errAccountRows are why a report got no rows: every
// row is held (or asked for by the reports waiting to start), or its
// account's reports hold their share.
var (
	errServerRows  = errors.New("the reports running hold every row of -report-rows")
	errAccountRows = errors.New("the account's reports hold its share of -report-rows")
)

// newReportRows bounds reports to n rows together; 0 bounds nothing.
// An account's share is half of n, but never less than the largest
// report (report.MaxRows), which one account may always run; alone, it
// may hold all but one largest report.
func newReportRows(n int) *reportRows {
	if n <= 0 {
		return nil
	}
	all := int64(n)
	step := max(1, all/reportSteps)
	share := max(all/2, min(all, int64(report.MaxRows)))
	return &reportRows{all: all, free: all, step: step, first: min(step, reportFirst),
		share: share, lend: max(share, all-int64(report.MaxRows)), held: map[accounts.Account]int64{}}
}

// start takes the first part of the rows for a report of acc, waiting
// until ctx is done at most: errServerRows or errAccountRows then.
func (b *reportRows) start(ctx context.Context, acc accounts.Account) error {
	b.mu.Lock()
	a := &rowsAsked{acc: acc, given: make(chan struct{})}
	b.queue = append(b.queue, a)
	b.settle()
	b.mu.Unlock()
	select {
	case <-a.given:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-a.given: // given meanwhile
		return nil
	default:
	}
	for i, q := range b.queue {
		if q == a {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.settle() // those asked after may now be given
	if !b.roomFor(acc, b.first) {
		return errAccountRows
	}
	return errServerRows
}

// roomFor is whether acc's reports may hold n more rows (b.mu held):
// within the share, at once, without looking for other accounts.
func (b *reportRows) roomFor(acc accounts.Account, n int64) bool {
	h := b.held[acc] + n
	return h <= b.share || h <= b.limit(acc)
}

// limit is the most rows acc's reports may hold: share, or lend while
// no other account's report holds rows or waits to start (b.mu held).
func (b *reportRows) limit(acc accounts.Account) int64 {
	if b.lend == b.share {
		return b.share
	}
	for a := range b.held {
		if a != acc {
			return b.share
		}
	}
	for _, a := range b.queue {
		if a.acc != acc {
			return b.share
		}
	}
	return b.lend
}

// kept are the rows a report starting leaves free: a part, while other
// reports run, that they may need as they read and cannot wait for
// (b.mu held).
func (b *reportRows) kept() int64 {
	if b.free == b.all {
		return 0
	}
	return b.step
}

// settle gives the reports waiting to start their first parts, in the
// order asked, while the rows are free past kept; a report whose account
// holds its share waits on, and those after it are given theirs (b.mu
// held).
func (b *reportRows) settle() {
	waiting := b.queue[:0]
	for _, a := range b.queue {
		if b.free >= b.first+b.kept() && b.roomFor(a.acc, b.first) {
			b.free -= b.first
			b.held[a.acc] += b.first
			close(a.given)
			continue
		}
		waiting = append(waiting, a)
	}
	clear(b.queue[len(waiting):])
	b.queue = waiting
}

// grow takes at once between least and most more rows for a report of
// acc, as many as are free up to most, but only least of the last part
// free, or none: errServerRows when fewer are free, errAccountRows when
// acc's reports would hold more than their limit. The reports waiting to
// start wait on: this one reads already.
func (b *reportRows) grow(acc accounts.Account, least, most int64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.limit(acc)
	if b.held[acc]+least > limit {
		return 0, errAccountRows
	}
	room := min(b.free, limit-b.held[acc], most)
	// Of the part kept free for the reports reading, a report takes only
	// the rows it needs now: one that took it whole for a row would leave
	// none to the next to ask, refused at once.
	if spare := b.free - b.step; room > spare {
		room = min(room, max(least, spare))
	}
	if room < least {
		return 0, errServerRows
	}
	b.free -= room
	b.held[acc] += room
	return room, nil
}

// put gives back n rows that a report of acc held.
func (b *reportRows) put(acc accounts.Account, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	if b.held[acc] -= n; b.held[acc] <= 0 {
		delete(b.held, acc)
	}
	b.settle()
}

// holding are the rows the reports running hold.
func (b *reportRows) holding() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.all - b.free
}

// reportHold is the rows one report holds.
type reportHold struct {
	s    *server
	acc  accounts.Account
	held int64
	// most are the rows a report may come to hold, report.MaxRows: its
	// last part is no larger, so that -report-rows holds its multiples
	// of the largest report.
	most int64
}

// holdReport takes the first part of the server's rows for a report of
// acc, before it reads the store, waiting reportWait at most for the
// reports running to give some back.
func (s *server) holdReport(r *http.Request, acc accounts.Account) (*reportHold, error) {
	h := &reportHold{s: s, acc: acc, most: int64(report.MaxRows)}
	b := s.reportRows
	if b == nil {
		return h, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), reportWait)
	defer cancel()
	if err := b.start(ctx, acc); err != nil {
		if r.Context().Err() != nil {
			return nil, r.Context().Err() // the client is gone
		}
		return nil, s.reportsBusy(err)
	}
	h.held = b.first
	return h, nil
}

// hold takes another part of the server's rows when the report is to
// hold more rows than it does: the reports' rows bound (RunHolding). It
// is asked as the store is read, and never waits: a report given no rows
// is refused, and gives back the store and its rows at once.
func (h *reportHold) hold(rows int) error {
	b := h.s.reportRows
	if b == nil || int64(rows) <= h.held {
		return nil
	}
	n, err := b.grow(h.acc, int64(rows)-h.held, max(0, min(b.step, h.most-h.held)))
	if err != nil {
		return h.s.reportsBusy(err)
	}
	h.held += n
	return nil
}

// keep gives back what the report holds past its rows, once it is read:
// it holds them as it is written, which a slow client makes long, and a
// report of one row started with a part.
func (h *reportHold) keep(rows int) {
	if b := h.s.reportRows; b != nil && h.held > int64(rows) {
		b.put(h.acc, h.held-int64(rows))
		h.held = int64(rows)
	}
}

// reportsBusy is the 503 of a report given no rows for cause.
func (s *server) reportsBusy(cause error) error {
	s.metrics.ReportBusy()
	msg := "the server is running as many reports as it can hold in memory"
	if errors.Is(cause, errAccountRows) {
		msg = "this report token's reports running hold as many rows as one account may on this server"
	}
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeReportsBusy, RetryAfter: reportBusyRetry,
		Message: msg + ": ask again in " + strconv.Itoa(reportBusyRetry) + " seconds",
		Err:     fmt.Errorf("report: %w", cause)}
}

// release gives the report's rows back, once its answer is written.
func (h *reportHold) release() {
	if h.held > 0 {
		h.s.reportRows.put(h.acc, h.held)
		h.held = 0
	}
}
