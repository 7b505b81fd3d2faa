package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestDashboardFiles: the dashboard's page, script and style are served
// with their types, revalidated each time, under a policy that allows no
// inline script or style and no framing.
func TestDashboardFiles(t *testing.T) {
	env := newInPageEnv(t, false)
	for _, tc := range []struct{ path, ctype string }{
		{"/dashboard", "text/html; charset=utf-8"},
		{"/dashboard.js", "text/javascript; charset=utf-8"},
		{"/dashboard.css", "text/css; charset=utf-8"},
	} {
		res := env.get(t, tc.path, header("Accept-Encoding", "gzip"), "")
		readBody(t, res)
		h := res.Header
		if res.StatusCode != http.StatusOK || h.Get("Content-Type") != tc.ctype || h.Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: %d %q %q", tc.path, res.StatusCode, h.Get("Content-Type"), h.Get("Cache-Control"))
		}
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self';", "style-src 'self';", "frame-ancestors 'none'", "form-action 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", tc.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: Content-Security-Policy %q allows something unsafe", tc.path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: X-Frame-Options %q, Referrer-Policy %q, X-Content-Type-Options %q", tc.path,
				h.Get("X-Frame-Options"), h.Get("Referrer-Policy"), h.Get("X-Content-Type-Options"))
		}
	}
	for _, p := range []string{"/dashboard/", "/dashboard.html", "/dashboard/x.js"} {
		if res := env.get(t, p, nil, ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, res.StatusCode)
		}
	}
}
