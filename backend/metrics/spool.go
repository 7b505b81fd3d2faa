package metrics

import "github.com/prometheus/client_golang/prometheus"

// spoolMetrics count the clicks spooled to the local file while Postgres
// did not answer, and those shipped to it since.
type spoolMetrics struct {
	spooled, shipped prometheus.Counter
}

func newSpoolMetrics(reg *prometheus.Registry) spoolMetrics {
	s := spoolMetrics{
		spooled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_clicks_spooled_total",
			Help: "Clicks spooled to the local file because Postgres did not answer.",
		}),
		shipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_clicks_shipped_total",
			Help: "Spooled clicks shipped to Postgres.",
		}),
	}
	reg.MustRegister(s.spooled, s.shipped)
	return s
}

// ClickSpooled counts one click spooled to the local file.
func (m *Metrics) ClickSpooled() {
	if m == nil {
		return
	}
	m.spool.spooled.Inc()
}

// ClicksShipped counts n spooled clicks shipped to Postgres.
func (m *Metrics) ClicksShipped(n int) {
	if m == nil {
		return
	}
	m.spool.shipped.Add(float64(n))
}

// WatchSpool exports the clicks waiting in the spool, read from depth at
// each scrape, as adlink_click_spool_depth.
func (m *Metrics) WatchSpool(depth func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "adlink_click_spool_depth",
		Help: "Clicks spooled to the local file and not yet shipped to Postgres.",
	}, func() float64 { return float64(depth()) }))
}
