package metrics

import "github.com/prometheus/client_golang/prometheus"

func newReportsBusy(reg *prometheus.Registry) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "adlink_reports_busy_total",
		Help: "Reports refused with 503 reports_busy: the reports running on the server held every row of -report-rows, or the account's reports their share, for the 2 s a report waits to start, or when it needed more rows as it read.",
	})
	reg.MustRegister(c)
	return c
}

// ReportBusy counts one report refused because the reports running
// held the server's rows (-report-rows), or its account's share.
func (m *Metrics) ReportBusy() {
	if m == nil {
		return
	}
	m.reportsBusy.Inc()
}

// WatchReportRows exports the rows the reports running on the server
// hold (-report-rows), read from held at each scrape, as
// adlink_report_rows_held. A second server on the same Metrics exports
// nothing more.
func (m *Metrics) WatchReportRows(held func() int64) {
	if m == nil {
		return
	}
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "adlink_report_rows_held",
		Help: "Rows the reports running on the server hold of -report-rows: a report holds a part or more as it reads, then only its rows as it is written.",
	}, func() float64 { return float64(held()) }))
}
