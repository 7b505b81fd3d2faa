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

// RedisStore counts one store's calls to the shared Redis state. Its
// counters are resolved once, when it is made, since the stores count on
// the request path. The zero value and the RedisStore of a nil *Metrics
// count nothing.
type RedisStore struct {
	name           string
	call, fallback prometheus.Counter
}

// RedisStore returns the counters of store: "limits", "windows",
// "decisions" or "budget".
func (m *Metrics) RedisStore(store string) RedisStore {
	if m == nil {
		return RedisStore{name: store}
	}
	return RedisStore{name: store, call: m.redis.calls.WithLabelValues(store),
		fallback: m.redis.fallback.WithLabelValues(store)}
}

// Name is the store's label.
func (s RedisStore) Name() string { return s.name }

// Call counts one call of the store to the shared Redis state, whether
// Redis or the fallback answers it.
func (s RedisStore) Call() {
	if s.call != nil {
		s.call.Inc()
	}
}

// Fallback counts one call that the shared Redis state could not answer
// and the process's own answered instead.
func (s RedisStore) Fallback() {
	if s.fallback != nil {
		s.fallback.Inc()
	}
}
