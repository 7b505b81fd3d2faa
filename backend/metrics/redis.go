package metrics

import "github.com/prometheus/client_golang/prometheus"

// redisMetrics count the stores' calls to the shared Redis state: all of
// them, and those their fallbacks answered. The share of the two tells a
// Redis that does not answer (nearly every call) from a timeout now and
// then (the calls of RetryAfter after it).
type redisMetrics struct {
	calls    *prometheus.CounterVec
	fallback *prometheus.CounterVec
}

func newRedisMetrics(reg *prometheus.Registry) redisMetrics {
	m := redisMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_redis_calls_total",
			Help: "Calls the stores made to the shared Redis state, answered or not, by store (limits, windows, decisions, budget).",
		}, []string{"store"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_redis_fallback_total",
			Help: "Calls that Redis could not answer and this process's own state answered, by store (limits, windows, decisions, budget).",
		}, []string{"store"}),
	}
	reg.MustRegister(m.calls, m.fallback)
	return m
}

// RedisCall counts one call of store to the shared Redis state, whether
// Redis or the fallback answers it: "limits", "windows", "decisions" or
// "budget".
func (m *Metrics) RedisCall(store string) {
	if m == nil {
		return
	}
	m.redis.calls.WithLabelValues(store).Inc()
}

// RedisFallback counts one call that the shared Redis state could not
// answer and the process's own answered instead: "limits", "windows",
// "decisions" or "budget".
func (m *Metrics) RedisFallback(store string) {
	if m == nil {
		return
	}
	m.redis.fallback.WithLabelValues(store).Inc()
}
