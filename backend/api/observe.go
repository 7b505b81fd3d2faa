package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/adlink/adlink/contract"
)

// The request id: taken from a trusted proxy's X-Request-Id, else made
// here; echoed in the response, on every log line of the request and in
// the body of a 5xx.

// requestIDKey is the context key of the request id.
type requestIDKey struct{}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// maxRequestID bounds an X-Request-Id taken from a proxy.
const maxRequestID = 128

// validRequestID reports whether a proxy's X-Request-Id is one we repeat in
// headers and logs: 1 to 128 visible ASCII characters.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// idSource makes request ids: a random prefix per process and a counter,
// unique without a random read per request.
type idSource struct {
	prefix string
	n      atomic.Uint64
}

func newIDSource() *idSource {
	var b [6]byte
	rand.Read(b[:])
	return &idSource{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (s *idSource) next() string {
	return s.prefix + strconv.FormatUint(s.n.Add(1), 36)
}

// requestIDHandler adds the request id of a record's context to it, so
// every line logged with the request's context carries it.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// statusWriter notes the status a handler writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends what is buffered, as the wrapped writer does.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe wraps every route: it gives the request its id, counts it by
// route pattern and status with its latency, logs it at debug level, and
// turns a handler's panic into a logged 500 with the request id instead of
// a dropped connection.
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if addr, ok := peer(r); !ok || !s.cfg.Trusted(addr) || !validRequestID(id) {
			id = s.ids.next()
		}
		w.Header().Set("X-Request-Id", id)
		r = s.withCatalog(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "handler panicked", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status != 0 {
					// Part of an answer is out: cut the connection so the
					// client cannot take it for the whole.
					s.metrics.Request(routeOf(r), methodLabel(r.Method), http.StatusInternalServerError, time.Since(start))
					panic(http.ErrAbortHandler)
				}
				e := internal(fmt.Errorf("panic: %v", v))
				sw.Header().Set("Cache-Control", errorCache)
				respond(sw, e.Status, e.bodyWithID(id), "")
			}
			route := routeOf(r)
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			s.metrics.Request(route, methodLabel(r.Method), status, d)
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.DebugContext(r.Context(), "request", "method", r.Method, "route", route,
					"path", r.URL.Path, "status", status, "duration_ms", float64(d.Microseconds())/1000)
			}
		}()
		if e := tooLarge(r); e != nil {
			s.refuseLarge(sw, r, e)
			return
		}
		next.ServeHTTP(sw, r)
	})
}

// The bounds of a request that the handler answers itself, in JSON or
// JSONP, before any route: net/http's own answer to a request over its
// MaxHeaderBytes is a plain-text 431 that a JSONP caller cannot read.
const (
	// MaxURLBytes bounds the request's target, path and query.
	MaxURLBytes = 64 << 10
	// MaxHeaderFieldBytes bounds the header fields together, each counted
	// as "Name: value" and a line break.
	MaxHeaderFieldBytes = 64 << 10
	// MaxHeaderBytes is the http.Server's MaxHeaderBytes: room above the
	// two bounds before it, so that a request over them reaches the
	// handler to be answered in JSON; beyond it net/http answers itself.
	MaxHeaderBytes = 1 << 20
)

// tooLarge returns the error of a request over MaxURLBytes or
// MaxHeaderFieldBytes, or nil.
func tooLarge(r *http.Request) *Error {
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	if n := len(target); n > MaxURLBytes {
		return &Error{Status: http.StatusRequestURITooLong, Code: CodeURITooLong,
			Message: "the URL is " + strconv.Itoa(n) + " bytes long; the most is " + strconv.Itoa(MaxURLBytes)}
	}
	n := 0
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	if n > MaxHeaderFieldBytes {
		return &Error{Status: http.StatusRequestHeaderFieldsTooLarge, Code: CodeHeadersTooLarge,
			Message: "the request's header fields are " + strconv.Itoa(n) + " bytes; the most is " + strconv.Itoa(MaxHeaderFieldBytes)}
	}
	return nil
}

// refuseLarge answers a request over a bound of tooLarge: under /v2 as
// the API answers there, readable from any origin and as JSONP when a
// valid callback can be read from the query, however long.
func (s *server) refuseLarge(w http.ResponseWriter, r *http.Request, e *Error) {
	w.Header().Set("Connection", "close")
	callback := ""
	if strings.HasPrefix(r.URL.Path, "/v2/") {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", exposedHeaders)
		callback = callbackIn(r.URL.RawQuery)
	}
	s.fail(w, r, e, callback)
}

// callbackIn is the callback of a raw query string when it is given once
// and valid, as callbackOf reads it from the parsed query, without
// parsing the rest: the query may be too long to parse.
func callbackIn(rawQuery string) string {
	callback, n := "", 0
	for rest := rawQuery; rest != ""; {
		var kv string
		kv, rest, _ = strings.Cut(rest, "&")
		if strings.Contains(kv, ";") {
			continue // net/url refuses the pair
		}
		k, v, _ := strings.Cut(kv, "=")
		if k != "callback" {
			if name, err := url.QueryUnescape(k); err != nil || name != "callback" {
				continue
			}
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			continue // net/url drops the pair
		}
		callback = value
		n++
	}
	if n == 1 && contract.ValidCallback(callback) {
		return callback
	}
	return ""
}

// routeOf is the route pattern that served r, as a metric label.
func routeOf(r *http.Request) string {
	if r.Pattern == "" {
		return "unmatched"
	}
	return r.Pattern
}

// methodLabel is the method as a metric label: a client may send any
// token as a method, and each label value is a time series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete:
		return m
	}
	return "other"
}

// healthz answers 200 {"status":"ok"} while the process serves: alive,
// whether or not it is ready.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	respond(w, http.StatusOK, []byte(`{"status":"ok"}`), "")
	return nil
}

// readyz answers 200 {"status":"ready"} when the catalog is loaded and the
// store is open, else 503, so a load balancer sends traffic elsewhere.
// A server that answers every request but with less than it should
// (Degraded: Postgres down, clicks spooled) answers 200
// {"status":"degraded","reason":...}: taking every replica out of the load
// balancer would land no visitor at all.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	if s.catalogOf(r).Indexes.All() == nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeNotReady, Message: "the catalog is not loaded"}
	}
	if s.ready != nil {
		if err := s.ready(r.Context()); err != nil {
			return &Error{Status: http.StatusServiceUnavailable, Code: CodeNotReady, Message: "not ready: " + err.Error()}
		}
	}
	answer := struct {
		Status  string        `json:"status"`
		Reason  string        `json:"reason,omitempty"`
		Catalog *CatalogState `json:"catalog,omitempty"`
	}{Status: "ready"}
	if s.degraded != nil {
		if why := s.degraded(r.Context()); why != "" {
			answer.Status, answer.Reason = "degraded", why
		}
	}
	// A refresh that failed leaves the old catalog serving: still ready,
	// and saying so.
	if s.state != nil {
		st := s.state()
		answer.Catalog = &st
	}
	body, err := json.Marshal(answer)
	if err != nil {
		return internal(err)
	}
	respond(w, http.StatusOK, body, "")
	return nil
}

// preflight answers a CORS preflight for /v2: GET and HEAD from any
// origin. The API reads no cookies, so no credentials are allowed.
func (s *server) preflight(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", "Accept-Language, X-Request-Id")
	}
	h.Set("Access-Control-Max-Age", "86400")
	h.Set("Allow", "GET, HEAD, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
	return nil
}
