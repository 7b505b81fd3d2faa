package web

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardSignOutForgetsChartSummary: signing out leaves nothing of
// the report in the page, the chart's figures in words for a screen
// reader included, so that whoever uses the browser next cannot read the
// account's traffic.
func TestDashboardSignOutForgetsChartSummary(t *testing.T) {
	b := startBackend(t)
	makeTraffic(t, b.URL, visit{query: "iphone 15 hülle", ykTag: "signout-test", network: "198.51.100.71", views: 1, clicks: 1})
	br := newBrowser(t)
	if s := dashSignIn(t, br, b.URL, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	const summary = `document.getElementById("chart-summary").textContent`
	if s := eval[string](t, br, summary); s == "" {
		t.Fatal("signed in: the chart has no summary in words")
	}
	if s := evalCall[string](t, br, dashPress, "signout", jsSource(dashSettled)); s != "signed-out" {
		t.Fatalf("signed out: state %q", s)
	}
	if s := eval[string](t, br, summary); s != "" {
		t.Errorf("signed out: the chart's summary still reads %q", s)
	}
}

// dashSignIn opens the dashboard of the server at base in br, signs in
// with token, and returns the state the dashboard settles in.
func dashSignIn(t *testing.T, br *browser, base, token string) string {
	t.Helper()
	br.do(t, chromedp.Navigate(base+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))
	br.do(t, chromedp.SendKeys("#token", token))
	return evalCall[string](t, br, dashPress, "go", jsSource(dashSettled))
}
