package api

import "net/http"

// dashboardPolicy is the Content-Security-Policy of the report dashboard:
// its own script, style and API only, nothing inline, nothing evaluated,
// no form that sends anywhere, and no framing, since the page holds a
// report token and a framing page could trick a reader into using it.
const dashboardPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboard serves a file of the report dashboard (/dashboard and its
// script and style) under dashboardPolicy. Readers revalidate it each
// time (no-cache): a fix reaches them at once, and the ETag keeps that
// cheap.
func (s *server) dashboard(name, contentType string) http.Handler {
	h := s.plain(s.webFile(name, contentType, nil, "no-cache"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", dashboardPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}
