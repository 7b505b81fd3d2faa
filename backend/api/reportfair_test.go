package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/metrics"
)

// metricLines are m's lines of the series named.
func metricLines(m *metrics.Metrics, name string) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var out []string
	for l := range strings.SplitSeq(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// slowWriter is a client that reads a report slowly: its first write
// closes writing and waits for done.
type slowWriter struct {
	*httptest.ResponseRecorder
	once    sync.Once
	writing chan struct{}
	done    chan struct{}
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.writing)
		<-w.done
	})
	return w.ResponseRecorder.Write(p)
}

// A report once read holds only its rows while it is written, which a
// slow client makes long: a report of one row gives back the rest of
// the thousand it started with. Before, it held them all to its end.
func TestReportHoldsItsRowsAsItIsWritten(t *testing.T) {
	m := metrics.New()
	env := newReportEnvWith(t, func(d *Deps) {
		d.Config.ReportRows = 64 * reportFirst // it starts with a thousand
		d.Metrics = m
	})
	env.traffic(t)
	w := &slowWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan struct{}), done: make(chan struct{})}
	req := httptest.NewRequest(http.MethodGet, "/v2/report?from=2026-11-22&to=2026-11-23", nil)
	req.Header.Set("Authorization", "Bearer "+advertiserToken)
	served := make(chan struct{})
	go func() {
		defer close(served)
		env.handler.ServeHTTP(w, req)
	}()
	<-w.writing
	held := metricLines(m, "adlink_report_rows_held")
	close(w.done)
	<-served
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(w.Body.Bytes(), &all); err != nil || w.Code != http.StatusOK || len(all.Rows) != 1 {
		t.Fatalf("%d %s, want a row", w.Code, w.Body)
	}
	if held != "adlink_report_rows_held 1" {
		t.Errorf("a report of one row, as it is written: %q, want adlink_report_rows_held 1", held)
	}
	if held := metricLines(m, "adlink_report_rows_held"); held != "adlink_report_rows_held 0" {
		t.Errorf("once it is written: %q, want adlink_report_rows_held 0", held)
	}
}
