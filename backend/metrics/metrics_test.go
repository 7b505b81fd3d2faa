package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMetricsExposition(t *testing.T) {
	m := New()
	m.Request("GET /v2/search/link", "GET", 200, 3*time.Millisecond)
	m.Request("GET /v2/search/link", "GET", 429, time.Millisecond)
	m.Analysis("analysed")
	m.Click(true, "")
	m.Click(false, "duplicate")
	m.RateLimited("api_key")
	m.ClickRecord(2*time.Millisecond, nil)
	m.ClickRecord(time.Second, errors.New("disk full"))
	m.WatchQueue(func() QueueStats { return QueueStats{Depth: 7, OldestAge: 1500 * time.Millisecond} })
	limits := m.RedisStore("limits")
	limits.Call()
	limits.Call()
	limits.Fallback()
	m.RedisStore("budget").Call()

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	for _, want := range []string{
		`adlink_http_requests_total{method="GET",route="GET /v2/search/link",status="200"} 1`,
		`adlink_http_requests_total{method="GET",route="GET /v2/search/link",status="429"} 1`,
		`adlink_http_request_duration_seconds_count{route="GET /v2/search/link",status="200"} 1`,
		`adlink_page_analyses_total{outcome="analysed"} 1`,
		`adlink_clicks_total{billable="true",reason=""} 1`,
		`adlink_clicks_total{billable="false",reason="duplicate"} 1`,
		`adlink_rate_limited_total{limit="api_key"} 1`,
		`adlink_click_record_duration_seconds_count{outcome="recorded"} 1`,
		`adlink_click_record_duration_seconds_bucket{outcome="failed",le="0.5"} 0`,
		`adlink_click_record_duration_seconds_bucket{outcome="failed",le="1"} 1`,
		`adlink_page_queue_depth 7`,
		`adlink_redis_calls_total{store="limits"} 2`,
		`adlink_redis_fallback_total{store="limits"} 1`,
		`adlink_redis_calls_total{store="budget"} 1`,
		`adlink_redis_fallback_total{store="budget"} 0`, // made, not counted
		`adlink_page_queue_oldest_age_seconds 1.5`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.Request("GET /", "GET", 200, time.Millisecond)
	m.Analysis("failed")
	m.Click(false, "bot")
	m.RateLimited("ip")
	m.ClickRecord(time.Millisecond, nil)
	m.WatchQueue(func() QueueStats { t.Fatal("stats read"); return QueueStats{} })
	s := m.RedisStore("limits")
	s.Call()
	s.Fallback()
	if s.Name() != "limits" {
		t.Errorf("a nil Metrics's store is named %q, want limits", s.Name())
	}
	if m.Registry() != nil {
		t.Error("a nil Metrics has a registry")
	}
}
