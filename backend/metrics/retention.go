package metrics

import "github.com/prometheus/client_golang/prometheus"

// retentionMetrics count what the retention job exports and removes.
type retentionMetrics struct {
	days, rows, deleted *prometheus.CounterVec
	late                *prometheus.CounterVec
	bytes               *prometheus.CounterVec
	errors              prometheus.Counter
}

func newRetentionMetrics(reg *prometheus.Registry) retentionMetrics {
	r := retentionMetrics{
		days: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_retention_days_exported_total",
			Help: "UTC days of raw rows exported to files by retention, by log (clicks, impressions).",
		}, []string{"log"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_retention_rows_exported_total",
			Help: "Raw rows written to export files by retention, by log.",
		}, []string{"log"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_retention_export_bytes_total",
			Help: "Compressed bytes of the export files retention wrote, by log.",
		}, []string{"log"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_retention_late_rows_total",
			Help: "Raw rows that came to a day after its export (spooled clicks shipped late), exported to a late file of the day, by log.",
		}, []string{"log"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adlink_retention_rows_deleted_total",
			Help: "Raw rows removed from the state file once exported, by log.",
		}, []string{"log"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adlink_retention_errors_total",
			Help: "Retention passes that stopped on an error (the log says which).",
		}),
	}
	reg.MustRegister(r.days, r.rows, r.late, r.bytes, r.deleted, r.errors)
	return r
}

// RetentionExported counts one day of log exported: rows rows in a file
// of size bytes.
func (m *Metrics) RetentionExported(log string, rows int, size int64) {
	if m == nil {
		return
	}
	m.retention.days.WithLabelValues(log).Inc()
	m.retention.rows.WithLabelValues(log).Add(float64(rows))
	m.retention.bytes.WithLabelValues(log).Add(float64(size))
}

// RetentionLateExported counts rows of log that came to a day after its
// export, exported to a late file of size bytes: rows, not a day.
func (m *Metrics) RetentionLateExported(log string, rows int, size int64) {
	if m == nil {
		return
	}
	m.retention.late.WithLabelValues(log).Add(float64(rows))
	m.retention.rows.WithLabelValues(log).Add(float64(rows))
	m.retention.bytes.WithLabelValues(log).Add(float64(size))
}

// RetentionDeleted counts rows of log removed after their export.
func (m *Metrics) RetentionDeleted(log string, rows int) {
	if m == nil {
		return
	}
	m.retention.deleted.WithLabelValues(log).Add(float64(rows))
}

// RetentionError counts one retention pass that stopped on an error.
func (m *Metrics) RetentionError() {
	if m == nil {
		return
	}
	m.retention.errors.Inc()
}
