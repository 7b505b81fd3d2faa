package web

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
)

// dashCSVOffered tells whether the dashboard offers the CSV download: its
// button shown and enabled.
const dashCSVOffered = `(() => { const b = document.getElementById("csv"); return b.offsetParent !== null && !b.disabled; })()`

// heldFirstTry keeps the page's timer of 10 s, the wait the first
// Retry-After asks for, for the test to fire (window.firstTry) as the
// clock would, once it has read what the dashboard says: the test reads
// the waits and that the dashboard tried again by itself, not how long
// it waited. The second wait, twice as long, is a real one.
const heldFirstTry = `(() => {
  const set = window.setTimeout;
  window.setTimeout = (f, ms, ...args) => {
    if (ms !== 10000 || window.firstTry) return set(f, ms, ...args);
    window.firstTry = () => f(...args);
    return -1;
  };
})()`

// TestDashboardReportsUnavailable: a server whose report store (Postgres)
// is down answers the dashboard's first load 503 reports_unavailable; the
// dashboard says the reports are unavailable for now, offers no CSV, and
// tries again by itself after the answer's Retry-After, then after twice
// that; once Postgres is back, Try again shows the report, made before
// the outage, with its CSV.
func TestDashboardReportsUnavailable(t *testing.T) {
	pg := testpg.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := config.Default()
	cfg.Addr, cfg.RedirectURL, cfg.DataDir, cfg.Demo, cfg.PostgresURL = ln.Addr().String(), base, t.TempDir(), true, pg.URL()
	a, err := app.New(cfg, app.Options{Matcher: matcherWasm, MatcherZstd: matcherZstd})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.Handler}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	// A reader's clicks, so that the report, once back, has rows.
	makeTraffic(t, base, visit{query: "iphone 15 hülle", network: "198.51.100.60", views: 1, clicks: 2})
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v2/report?group_by=day", nil)
	req.Header.Set("Authorization", "Bearer "+demoPartnerReport)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a report with Postgres down: %s, Retry-After %q; the test needs a 503 with one", res.Status, res.Header.Get("Retry-After"))
	}

	br := newBrowser(t)
	br.onEveryPage(t, heldFirstTry)
	view := func() dashView { return eval[dashView](t, br, jsCall(dashViewScript)) }
	if s := dashSignIn(t, br, base, demoPartnerReport); s != "unavailable" {
		t.Fatalf("Postgres down: state %q (%+v), want unavailable", s, view())
	}
	v := view()
	if !strings.Contains(v.NetError, "unavailable") || !strings.Contains(v.NetError, "again") || !v.Dash || v.SignIn || v.Session == nil {
		t.Errorf("Postgres down: %+v, want the dashboard saying the reports are unavailable and will be tried again", v)
	}
	if eval[bool](t, br, dashCSVOffered) {
		t.Error("Postgres down: the CSV download is offered")
	}
	if !strings.Contains(v.NetError, "in 10 s") {
		t.Errorf("Postgres down: %q, want the first try again after the 10 s Retry-After", v.NetError)
	}
	// Still down at the try again: the next waits twice as long.
	if !eval[bool](t, br, `typeof window.firstTry === "function" && (window.firstTry(), true)`) {
		t.Fatalf("Postgres down: the dashboard set no 10 s timer to try again (%+v)", view())
	}
	waitCtx, waitCancel := context.WithTimeout(br.ctx, time.Minute)
	defer waitCancel()
	if _, err := chromedp.Run(waitCtx, chromedp.Evaluate[bool](`new Promise((resolve) => {
		const text = document.getElementById("neterror-text");
		const done = () => text.textContent.includes("in 20 s") && (resolve(true), true);
		if (!done()) new MutationObserver((_, o) => done() && o.disconnect()).observe(text, { childList: true, characterData: true, subtree: true });
	})`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("Postgres still down: the dashboard did not wait twice as long the second time: %v (%+v)", err, view())
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	// Try again, pressed, asks at once (it tried by itself above).
	br.do(t, chromedp.Click("#retry"))
	ctx, cancel := context.WithTimeout(br.ctx, 2*time.Minute)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise((resolve) => {
		const done = () => ["ready", "empty"].includes(document.body.dataset.state) && (resolve(document.body.dataset.state), true);
		if (!done()) new MutationObserver((_, o) => done() && o.disconnect()).observe(document.body, { attributes: true, attributeFilter: ["data-state"] });
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("Postgres back: the dashboard never showed the report by itself: %v (%+v)", err, view())
	}
	if v := view(); s != "ready" || v.NetError != "" || len(v.Rows) == 0 {
		t.Errorf("Postgres back: state %s, %+v, want the report's rows", s, v)
	}
	if !eval[bool](t, br, dashCSVOffered) {
		t.Error("Postgres back: the CSV download is not offered")
	}
	br.noPageErrors(t)
}
