package metrics

import "github.com/prometheus/client_golang/prometheus"

func newRedisFallback(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "adlink_redis_fallback_total",
		Help: "Calls that Redis could not answer and this process's own state answered, by store (limits, windows, decisions, budget).",
	}, []string{"store"})
	reg.MustRegister(c)
	return c
}

// RedisFallback counts one call that the shared Redis state could not
// answer and the process's own answered instead: "limits", "windows",
// "decisions" or "budget".
func (m *Metrics) RedisFallback(store string) {
	if m == nil {
		return
	}
	m.redisFallback.WithLabelValues(store).Inc()
}
