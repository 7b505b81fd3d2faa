package web

import (
	"bytes"
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

// dashStateAfter, called with a script, runs it and resolves with the
// dashboard's state once it settles, and what its error line says then.
const dashStateAfter = `(act) => new Promise((resolve) => {
  const text = document.getElementById("neterror-text");
  new MutationObserver((_, o) => {
    const s = document.body.dataset.state;
    if (s && s !== "loading") {
      o.disconnect();
      resolve({ State: s, Text: text.textContent });
    }
  }).observe(document.body, { attributes: true, attributeFilter: ["data-state"] });
  new Function(act)();
})`

// waitJS resolves once the script's condition holds, checked as the page
// changes; it fails the test after a minute.
func waitJS(t *testing.T, br *browser, cond, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise((resolve) => {
		const done = () => (`+cond+`) && (resolve(true), true);
		if (!done()) new MutationObserver((_, o) => done() && o.disconnect()).observe(document.body, { attributes: true, childList: true, characterData: true, subtree: true });
	})`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("%s: %v (%+v)", what, err, eval[clicksView](t, br, dashClicksView))
	}
}

// TestDashboardClicksRefused: with the click log's Postgres down, the
// CSV download of the clicks waits for the answer's Retry-After and goes
// on once it is back, its file whole; a page of the clicks table asked
// for then (another filter) puts the dashboard in its unavailable state,
// and Try again lists the clicks once Postgres is back; a token that no
// longer opens /v2/clicks signs the reader out, as a refused report does.
func TestDashboardClicksRefused(t *testing.T) {
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
	makeTraffic(t, base, visit{query: "iphone 15 hülle", network: "198.51.100.80", views: 1, clicks: 2})
	makeTraffic(t, base, visit{query: "galaxy s24", network: "198.51.100.81", views: 1, clicks: 2, bot: true})
	listed, _ := listClicks(t, base, demoPartnerReport, "json", "", "", 10000)
	if len(listed) != 4 {
		t.Fatalf("/v2/clicks lists %d clicks, want the 4 made", len(listed))
	}

	br := newBrowser(t)
	br.onEveryPage(t, heldFirstTry)
	var requests requestLog
	keepLocal(t, br, base, make(chan string, 8), requests.add)
	if s := dashSignIn(t, br, base, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	if v := eval[clicksView](t, br, dashClicksView); len(v.Rows) != 4 {
		t.Fatalf("signed in: %d clicks listed, want 4", len(v.Rows))
	}

	// The download, Postgres down: it waits, then goes on.
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	downloaded := saveDownloads(t, br, 2*time.Minute, false)
	br.do(t, chromedp.Click("#clicks-csv"))
	waitJS(t, br, `document.getElementById("clicks-status").textContent.endsWith(" goes on in 10 s.")`, "Postgres down: the download does not say it waits 10 s")
	if st := eval[string](t, br, `document.body.dataset.state`); st != "ready" {
		t.Errorf("Postgres down, the download waiting: state %q, want the report still shown", st)
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	if !eval[bool](t, br, `typeof window.firstTry === "function" && (window.firstTry(), true)`) {
		t.Fatal("Postgres down: the download set no 10 s timer to go on")
	}
	got, _ := downloaded()
	if _, csv := listClicks(t, base, demoPartnerReport, "csv", "", "", 10000); !bytes.Equal(got, csv) {
		t.Errorf("downloaded %q; /v2/clicks' CSV is %q", got, csv)
	}

	// The table's next page, Postgres down: unavailable, as a report.
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	const billedOnly = `const f = document.getElementById("clicks-filter"); f.value = "true"; f.dispatchEvent(new Event("change"))`
	seen := evalCall[struct{ State, Text string }](t, br, dashStateAfter, billedOnly)
	if seen.State != "unavailable" || !strings.Contains(seen.Text, "unavailable") || !strings.Contains(seen.Text, "again in") {
		t.Errorf("Postgres down, the billed clicks asked for: %+v, want unavailable and tried again", seen)
	}
	if eval[bool](t, br, `document.getElementById("clicks-csv").offsetParent !== null`) {
		t.Error("Postgres down: the clicks' CSV download is offered")
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	br.do(t, chromedp.Click("#retry"))
	waitJS(t, br, `document.body.dataset.state === "ready"`, "Postgres back: the dashboard does not show the report")
	billed, _ := listClicks(t, base, demoPartnerReport, "json", "true", "desc", 10000)
	v := eval[clicksView](t, br, dashClicksView)
	if len(billed) == 0 || len(v.Rows) != len(billed) {
		t.Errorf("Postgres back: %d billed clicks listed, /v2/clicks has %d", len(v.Rows), len(billed))
	}
	for i, r := range v.Rows {
		if i < len(billed) && (r.ID != billed[i].ID || r.Cells[4] != "Billed") {
			t.Errorf("Postgres back: row %d %q, want the billed click %s", i, r.Cells, billed[i].ID)
		}
	}

	// A token /v2/clicks refuses: signed out.
	eval[bool](t, br, `sessionStorage.setItem("adlink.reportToken", "no-longer-a-token"), true`)
	const all = `const f = document.getElementById("clicks-filter"); f.value = ""; f.dispatchEvent(new Event("change"))`
	if seen := evalCall[struct{ State, Text string }](t, br, dashStateAfter, all); seen.State != "refused" {
		t.Errorf("a refused token: state %q, want refused", seen.State)
	}
	if v := eval[dashView](t, br, jsCall(dashViewScript)); !v.SignIn || v.Dash || v.Session != nil || v.Refused == "" {
		t.Errorf("a refused token: %+v, want signed out", v)
	}
	if n := eval[int](t, br, `document.querySelectorAll("#click-rows tr").length`); n != 0 {
		t.Errorf("signed out: %d clicks still in the page", n)
	}
	for _, u := range requests.all() {
		if strings.Contains(u, demoPartnerReport) || strings.Contains(u, "no-longer-a-token") {
			t.Errorf("a request carried the token in its URL: %s", u)
		}
	}
	br.noPageErrors(t)
}
