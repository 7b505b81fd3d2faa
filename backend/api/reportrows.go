package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/adlink/adlink/backend/report"
)

// CodeReportsBusy: the reports running on the server hold every row it
// lets reports hold (-report-rows), and a report waited reportWait for
// some in vain (503 with a Retry-After).
const CodeReportsBusy = "reports_busy"

// reportWait is how long a report waits for rows that the reports
// running hold before it is refused: about as long as a small report
// takes, far less than a client's timeout.
const reportWait = 2 * time.Second

// reportBusyRetry is the Retry-After, in seconds, of a report refused
// with reports_busy.
const reportBusyRetry = 5

// reportSteps is how many parts of the server's rows a report takes at
// most, one at its start and one more each time its rows outgrow those
// it holds: a part is small enough that many small reports run beside a
// large one, and large enough that the large one asks seldom.
const reportSteps = 64

// reportRows are the rows the reports running on a server hold together
// (config.ReportRows): a report is kept whole in memory until it is
// written, so many accounts' large reports at once would exhaust the
// server's. Nil bounds nothing.
//
// The parts are given in the order asked. A report that holds rows and
// waits for more waits on the others to give some back: when every
// report holding rows waits so, none would, and the last to ask is
// refused at once rather than all waiting reportWait out.
type reportRows struct {
	step int64

	mu sync.Mutex
	// free are the rows no report holds.
	free int64
	// holding counts the reports holding rows; growing those of them
	// waiting for more.
	holding, growing int
	// queue are the parts asked for and not given, first asked first.
	queue []*rowsAsked
}

// rowsAsked is a part of the rows a report waits for.
type rowsAsked struct {
	n int64
	// grows is true when the report already holds rows.
	grows bool
	// given is closed when the part is the report's, or refused.
	given   chan struct{}
	refused bool
}

// errReportsStuck is a part refused because every report holding rows
// waited for more.
var errReportsStuck = errors.New("every report holding rows waits for more")

// newReportRows bounds reports to n rows together; 0 bounds nothing.
func newReportRows(n int) *reportRows {
	if n <= 0 {
		return nil
	}
	return &reportRows{free: int64(n), step: max(1, int64(n)/reportSteps)}
}

// take takes n rows, the first of a report unless grows, waiting until
// ctx is done at most: ctx's error, or errReportsStuck.
func (b *reportRows) take(ctx context.Context, n int64, grows bool) error {
	b.mu.Lock()
	if len(b.queue) == 0 && b.free >= n {
		b.give(n, grows)
		b.mu.Unlock()
		return nil
	}
	a := &rowsAsked{n: n, grows: grows, given: make(chan struct{})}
	b.queue = append(b.queue, a)
	if grows {
		b.growing++
	}
	b.settle()
	b.mu.Unlock()
	select {
	case <-a.given:
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-a.given: // given or refused meanwhile
		default:
			b.queue = slices.DeleteFunc(b.queue, func(q *rowsAsked) bool { return q == a })
			if grows {
				b.growing--
			}
			b.settle() // those asked after may now be given
			b.mu.Unlock()
			return ctx.Err()
		}
		b.mu.Unlock()
	}
	if a.refused {
		return errReportsStuck
	}
	return nil
}

// give gives n rows to a report (b.mu held).
func (b *reportRows) give(n int64, grows bool) {
	b.free -= n
	if !grows {
		b.holding++
	}
}

// settle gives the parts asked for, in order, while the rows are free,
// then refuses the last asked by a report holding rows when every one
// holding rows waits (b.mu held).
func (b *reportRows) settle() {
	for len(b.queue) > 0 && b.free >= b.queue[0].n {
		a := b.queue[0]
		b.queue = b.queue[1:]
		b.give(a.n, a.grows)
		if a.grows {
			b.growing--
		}
		close(a.given)
	}
	if b.growing == 0 || b.growing < b.holding {
		return
	}
	for i := len(b.queue) - 1; i >= 0; i-- {
		if a := b.queue[i]; a.grows {
			b.queue = slices.Delete(b.queue, i, i+1)
			b.growing--
			a.refused = true
			close(a.given)
			return
		}
	}
}

// put gives back the n rows of a report that held some.
func (b *reportRows) put(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	b.holding--
	b.settle()
}

// reportHold is the rows one report holds.
type reportHold struct {
	s    *server
	ctx  context.Context
	held int64
	// most are the rows a report may come to hold, report.MaxRows: its
	// last part is no larger, so that -report-rows holds its multiples
	// of the largest report.
	most int64
}

// holdReport takes the first part of the server's rows for a report of
// r, waiting reportWait at most for the reports running to give some
// back.
func (s *server) holdReport(r *http.Request) (*reportHold, error) {
	h := &reportHold{s: s, ctx: r.Context(), most: int64(report.MaxRows)}
	if err := h.hold(1); err != nil {
		return nil, err
	}
	return h, nil
}

// hold takes another part of the server's rows when the report is to
// hold more rows than it does: the reports' rows bound (RunHolding).
func (h *reportHold) hold(rows int) error {
	b := h.s.reportRows
	if b == nil || int64(rows) <= h.held {
		return nil
	}
	part := b.step
	if rest := h.most - h.held; rest >= int64(rows)-h.held && rest < part {
		part = rest
	}
	ctx, cancel := context.WithTimeout(h.ctx, reportWait)
	defer cancel()
	if err := b.take(ctx, part, h.held > 0); err != nil {
		if h.ctx.Err() != nil {
			return h.ctx.Err() // the client is gone
		}
		h.s.metrics.ReportBusy()
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeReportsBusy, RetryAfter: reportBusyRetry,
			Message: "the server is running as many reports as it can hold in memory: ask again in " + strconv.Itoa(reportBusyRetry) + " seconds",
			Err:     fmt.Errorf("report: the reports running hold every row of -report-rows: %w", err)}
	}
	h.held += part
	return nil
}

// release gives the report's rows back, once its answer is written.
func (h *reportHold) release() {
	if h.held > 0 {
		h.s.reportRows.put(h.held)
		h.held = 0
	}
}
