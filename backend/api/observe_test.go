package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/metrics"
)

// syncBuffer is a log sink safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(s.b.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %s: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRequestIDOnResponseAndEveryLogLine(t *testing.T) {
	var logs syncBuffer
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Clicks: &clickRecorder{},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	serve := func(remote, id string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, "/v2/search/link?q=handy&size=99&api_key=demo&site_id=demo", nil)
		req.RemoteAddr = remote
		if id != "" {
			req.Header.Set("X-Request-Id", id)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	a, b := serve("203.0.113.9:1", ""), serve("203.0.113.9:1", "")
	if a.Header.Get("X-Request-Id") == "" || a.Header.Get("X-Request-Id") == b.Header.Get("X-Request-Id") {
		t.Errorf("generated ids %q and %q, want two distinct", a.Header.Get("X-Request-Id"), b.Header.Get("X-Request-Id"))
	}
	if got := serve("127.0.0.1:1", "lb-7f3a").Header.Get("X-Request-Id"); got != "lb-7f3a" {
		t.Errorf("a trusted proxy's id became %q", got)
	}
	for _, id := range []string{"forged", "bad id", strings.Repeat("x", 200)} {
		remote := "127.0.0.1:1"
		if id == "forged" {
			remote = "203.0.113.9:1" // not a proxy
		}
		if got := serve(remote, id).Header.Get("X-Request-Id"); got == id || got == "" {
			t.Errorf("id %q from %s kept as %q", id, remote, got)
		}
	}

	// The 400 logs "request failed" and the access line, both with the id.
	byID := map[string]int{}
	for _, l := range logs.lines(t) {
		id, _ := l["request_id"].(string)
		if id == "" {
			t.Errorf("log line without request_id: %v", l)
		}
		byID[id]++
	}
	if byID["lb-7f3a"] != 2 {
		t.Errorf("%d lines for request lb-7f3a, want 2 (failure and access)", byID["lb-7f3a"])
	}
}

func TestPanicIsA500WithRequestID(t *testing.T) {
	var logs syncBuffer
	s := &server{cfg: config.Default(), ids: newIDSource(),
		log: slog.New(requestIDHandler{slog.NewJSONHandler(&logs, nil)})}
	h := s.observe(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("index out of range") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/search/link", nil))
	res := rec.Result()
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(readBody(t, res), &body); err != nil {
		t.Fatal(err)
	}
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != http.StatusInternalServerError || body.Error.Code != CodeInternal || body.Error.RequestID != id || id == "" {
		t.Errorf("%s %+v, id %q", res.Status, body, id)
	}
	if strings.Contains(body.Error.Message, "index out of range") {
		t.Error("the panic's value reached the client")
	}
	lines := logs.lines(t)
	if len(lines) != 1 || lines[0]["request_id"] != id || !strings.Contains(lines[0]["stack"].(string), "observe_test.go") {
		t.Errorf("log %v, want one error line with the id and the stack", lines)
	}
}

func TestMetricsReadyzAndHealthz(t *testing.T) {
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	var notReady error
	h := NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Clicks: &clickRecorder{},
		Metrics: m, Ready: func(context.Context) error { return notReady }})
	get := func(target string) (*http.Response, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		res := rec.Result()
		return res, string(readBody(t, res))
	}
	get("/v2/search/link?q=handy&api_key=demo&site_id=demo")
	for i := range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("BREW"+strconv.Itoa(i), "/v2/search/link", nil))
	}
	get("/v2/search/link?q=handy&api_key=nope&site_id=demo")
	for i := range 3 {
		get("/no/such/path/" + string(rune('a'+i)))
	}
	if res, body := get("/readyz"); res.StatusCode != http.StatusOK || body != `{"status":"ready"}` {
		t.Errorf("readyz: %s %s", res.Status, body)
	}
	notReady = errors.New("shutting down")
	if res, body := get("/readyz"); res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, CodeNotReady) {
		t.Errorf("readyz while not ready: %s %s", res.Status, body)
	}
	if res, _ := get("/healthz"); res.StatusCode != http.StatusOK {
		t.Errorf("healthz while not ready: %s, want 200 (alive)", res.Status)
	}
	body := scrape(t, m)
	if res, _ := get("/metrics"); res.StatusCode != http.StatusNotFound {
		t.Errorf("public /metrics: %s, want 404 (metrics are on the admin listener)", res.Status)
	}
	for _, want := range []string{
		`adlink_http_requests_total{method="GET",route="GET /v2/search/link",status="200"} 1`,
		`adlink_http_requests_total{method="GET",route="GET /v2/search/link",status="401"} 1`,
		`adlink_http_requests_total{method="GET",route="/",status="404"} 3`,
		`adlink_http_requests_total{method="GET",route="GET /readyz",status="503"} 1`,
		`adlink_http_requests_total{method="other",route="/",status="405"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "/no/such/path") || strings.Contains(body, "BREW") {
		t.Error("a raw path or method became a label")
	}
}

func TestPanicAfterWritingCutsTheConnection(t *testing.T) {
	s := &server{cfg: config.Default(), ids: newIDSource(), log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"link":[`))
		w.(http.Flusher).Flush()
		panic("half way")
	})))
	defer srv.Close()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Error("a half-written answer read as complete")
	}
}

// TestTooLongURLIsJSON: a URL over MaxURLBytes is a 414 in JSON, under
// /v2 as JSONP when one valid callback can be read from the query,
// wherever it stands in it; header fields over MaxHeaderFieldBytes are a
// 431 alike.
func TestTooLongURLIsJSON(t *testing.T) {
	env := newEnv(t, fixture())
	const search = "/v2/search/link?q=handy&api_key=demo&site_id=demo"
	pad := "&pad=" + strings.Repeat("%41", MaxURLBytes/3)
	for _, tt := range []struct {
		name, target, callback string
		status                 int
	}{
		{"no callback", search + pad, "", http.StatusRequestURITooLong},
		{"callback last", search + pad + "&callback=adlink.cb", "adlink.cb", http.StatusOK},
		{"callback first", "/v2/page/link?callback=cb" + pad, "cb", http.StatusOK},
		{"escaped name", "/v2/shards?call%62ack=cb" + pad, "cb", http.StatusOK},
		{"invalid callback", search + pad + "&callback=alert(1)", "", http.StatusRequestURITooLong},
		{"callback twice", search + "&callback=a" + pad + "&callback=b", "", http.StatusRequestURITooLong},
		{"semicolon", search + pad + "&callback=a;b", "", http.StatusRequestURITooLong},
		{"redirect", "/v1/redirect?callback=cb" + pad, "", http.StatusRequestURITooLong},
	} {
		res := env.get(t, tt.target, nil, "")
		body := string(readBody(t, res))
		if res.StatusCode != tt.status {
			t.Errorf("%s: %s %.120s", tt.name, res.Status, body)
			continue
		}
		want := `{"error":{"code":"uri_too_long","message":"the URL is ` + strconv.Itoa(len(tt.target)) + ` bytes long; the most is 65536"}}`
		if tt.callback != "" {
			want = "/**/" + tt.callback + `({"http_status":414,` + want[1:] + ");"
		}
		if body != want {
			t.Errorf("%s: %s, want %s", tt.name, body, want)
		}
		if v2 := strings.HasPrefix(tt.target, "/v2/"); (res.Header.Get("Access-Control-Allow-Origin") == "*") != v2 {
			t.Errorf("%s: Access-Control-Allow-Origin %q", tt.name, res.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	// At the bound the request is the handler's, whatever it answers.
	target := search + "&pad="
	target += strings.Repeat("x", MaxURLBytes-len(target))
	if res := env.get(t, target, nil, ""); res.StatusCode != http.StatusOK {
		t.Errorf("a URL of MaxURLBytes: %s", res.Status)
	}
	res := env.get(t, search+"&callback=cb", header("Cookie", strings.Repeat("c", MaxHeaderFieldBytes)), "")
	if body := string(readBody(t, res)); res.StatusCode != http.StatusOK ||
		!strings.HasPrefix(body, `/**/cb({"http_status":431,"error":{"code":"headers_too_large"`) {
		t.Errorf("large header fields: %s %s", res.Status, body)
	}
}

// FuzzCallbackIn: the callback read from a raw query, however long, is
// the one the JSONP adapter reads from the parsed query.
func FuzzCallbackIn(f *testing.F) {
	for _, s := range []string{"callback=cb", "q=x&callback=a.b&callback=c", "call%62ack=cb&x=%zz", "callback=%zz&callback=cb",
		"callback=a;b", "callback=cb;&q", "callback=alert(1)", "callback"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if strings.Count(raw, "&") >= 1000 {
			return
		}
		q, _ := url.ParseQuery(raw)
		if got, want := callbackIn(raw), callbackOf(q); got != want {
			t.Fatalf("callbackIn(%q) = %q, callbackOf reads %q", raw, got, want)
		}
	})
}

// TestClientGoneIsNoServerError: a client that leaves while its request
// waits (here on a report's rows, or a store read that its context
// cancels) made no server error: its request is counted as 499, not as
// a 5xx that pages the operator, and no error is logged.
func TestClientGoneIsNoServerError(t *testing.T) {
	var logs syncBuffer
	m := metrics.New()
	s := &server{cfg: config.Default(), ids: newIDSource(), metrics: m,
		log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	waiting := make(chan struct{})
	ts := httptest.NewServer(s.observe(s.plain(func(w http.ResponseWriter, r *http.Request) error {
		close(waiting)
		<-r.Context().Done()
		return fmt.Errorf("report: reading the rollups: %w", r.Context().Err())
	})))
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-waiting; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v2/report", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the request was answered %s, want the client gone", res.Status)
	}
	counted := func(status string) bool {
		var out strings.Builder
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		out.Write(rec.Body.Bytes())
		return strings.Contains(out.String(), `status="`+status+`"`)
	}
	for !counted("499") {
		if counted("500") {
			t.Fatal("the client gone was counted as a 500")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, l := range logs.lines(t) {
		if l["level"] == "ERROR" {
			t.Errorf("logged as an error: %v", l)
		}
	}
	// A handler's own failure while the client is still there is a 500.
	ts2 := httptest.NewServer(s.observe(s.plain(func(http.ResponseWriter, *http.Request) error {
		return fmt.Errorf("report: %w", context.Canceled) // the store's own context, not the client's
	})))
	defer ts2.Close()
	res, err := http.Get(ts2.URL + "/v2/report")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusInternalServerError {
		t.Errorf("a cancelled store read with the client there: %s, want 500", res.Status)
	}
}
