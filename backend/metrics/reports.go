package metrics

import "github.com/prometheus/client_golang/prometheus"

func newReportsBusy(reg *prometheus.Registry) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "adlink_reports_busy_total",
		Help: "Reports refused with 503 reports_busy: the reports running on the server held every row of -report-rows for longer than the report could wait.",
	})
	reg.MustRegister(c)
	return c
}

// ReportBusy counts one report refused because the reports running
// held the server's rows (-report-rows).
func (m *Metrics) ReportBusy() {
	if m == nil {
		return
	}
	m.reportsBusy.Inc()
}
