package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRetentionMetrics(t *testing.T) {
	m := New()
	m.RetentionExported("clicks", 120, 4096)
	m.RetentionExported("clicks", 30, 1024)
	m.RetentionLateExported("clicks", 3, 100)
	m.RetentionDeleted("clicks", 150)
	m.RetentionError()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	for _, want := range []string{
		`adlink_retention_days_exported_total{log="clicks"} 2`,
		`adlink_retention_rows_exported_total{log="clicks"} 153`,
		`adlink_retention_late_rows_total{log="clicks"} 3`,
		`adlink_retention_export_bytes_total{log="clicks"} 5220`,
		`adlink_retention_rows_deleted_total{log="clicks"} 150`,
		`adlink_retention_errors_total 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var none *Metrics
	none.RetentionExported("clicks", 1, 1)
	none.RetentionLateExported("clicks", 1, 1)
	none.RetentionDeleted("clicks", 1)
	none.RetentionError()
}
