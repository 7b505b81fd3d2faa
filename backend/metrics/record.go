package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newClickRecord is the time the click ledger takes to record a click,
// the store's own share of a redirect: a slow disk under adlink.db or a
// Postgres that answers late shows here, where readers who give up
// before their 302 hide it from the redirect's errors.
func newClickRecord(reg *prometheus.Registry) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "adlink_click_record_duration_seconds",
		Help:    "Time the click ledger took to record a click (with -postgres, a spooled one's wait included), by outcome (recorded, failed).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"outcome"})
	reg.MustRegister(h)
	return h
}

// ClickRecord counts one click the ledger recorded in d, or failed to.
func (m *Metrics) ClickRecord(d time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := "recorded"
	if err != nil {
		outcome = "failed"
	}
	m.clickRecord.WithLabelValues(outcome).Observe(d.Seconds())
}
