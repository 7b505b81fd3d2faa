package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/semaphore"

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
type reportRows struct {
	sem  *semaphore.Weighted
	step int64
}

// newReportRows bounds reports to n rows together; 0 bounds nothing.
func newReportRows(n int) *reportRows {
	if n <= 0 {
		return nil
	}
	return &reportRows{sem: semaphore.NewWeighted(int64(n)), step: max(1, int64(n)/reportSteps)}
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
	if err := b.sem.Acquire(ctx, part); err != nil {
		if h.ctx.Err() != nil {
			return h.ctx.Err() // the client is gone
		}
		h.s.metrics.ReportBusy()
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeReportsBusy, RetryAfter: reportBusyRetry,
			Message: "the server is running as many reports as it can hold in memory: ask again in " + strconv.Itoa(reportBusyRetry) + " seconds",
			Err:     errors.New("report: the reports running hold every row of -report-rows")}
	}
	h.held += part
	return nil
}

// release gives the report's rows back, once its answer is written.
func (h *reportHold) release() {
	if h.held > 0 {
		h.s.reportRows.sem.Release(h.held)
		h.held = 0
	}
}
