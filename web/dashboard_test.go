package web

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/adlink/adlink/backend/clicks"
)

// updateScreenshot rewrites docs/dashboard.png, the dashboard as the
// README shows it.
var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/dashboard.png")

// The report tokens of the demo partner and of an advertiser of the demo
// catalog, which -demo adds.
const (
	demoPartnerReport    = "demo-partner-report"
	demoAdvertiserReport = "demo-advertiser-report"
)

var (
	// dashSettled resolves with the dashboard's state once it is no
	// longer loading.
	//
	//go:embed testdata/dashboard/settled.js
	dashSettled string
	// dashPress, called with a button's id and dashSettled, clicks the
	// button and resolves with the state it settles in.
	//
	//go:embed testdata/dashboard/press.js
	dashPress string
	// dashViewScript describes what the dashboard shows (dashView).
	//
	//go:embed testdata/dashboard/view.js
	dashViewScript string
)

// dashView is what view.js reports.
type dashView struct {
	State, Refused, NetError, Account, Range     string
	SignIn, Dash, SignOut, SpendLine, ChartEmpty bool
	Kpis                                         []string
	Days, ClickBars, BillableBars, Local         int
	Rows                                         [][]string
	Session                                      *string
}

// reportAnswer is a JSON answer of /v2/report.
type reportAnswer struct {
	Account  struct{ Kind, ID string }
	From, To string
	Rows     []map[string]any
}

// fetchReport asks base's /v2/report for the last 30 days, as the
// dashboard does, and returns the body of its 200 answer and the
// Content-Disposition header.
func fetchReport(tb testing.TB, base, token, groupBy, format string) ([]byte, string) {
	tb.Helper()
	to := time.Now().UTC()
	q := url.Values{"from": {to.AddDate(0, 0, -29).Format(time.DateOnly)}, "to": {to.Format(time.DateOnly)},
		"group_by": {groupBy}, "format": {format}}
	req, _ := http.NewRequest(http.MethodGet, base+"/v2/report?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		tb.Fatalf("report %s %s: %d %s %v", groupBy, format, res.StatusCode, body, err)
	}
	return body, res.Header.Get("Content-Disposition")
}

// visit is a reader's visit to the demo site: a search with yk_tag, its
// first ads shown, and some of them clicked.
type visit struct {
	query, ykTag string
	// network is the reader's address, which a trusted proxy's
	// X-Forwarded-For gives: a network of its own, so that one test's
	// clicks and another's do not judge each other as repeats.
	network string
	// views is how many times the page reported the ads as seen; clicks
	// how many of them were clicked, at most 3 and at most as many as
	// the search found.
	views, clicks int
	// bot clicks without a person's navigation: recorded, not billed.
	bot bool
}

// makeTraffic makes v through the real endpoints, as a reader's browser
// would: the search, the impression beacon and the clicks on /v1/redirect.
// It returns the ads clicked.
func makeTraffic(tb testing.TB, base string, v visit) []string {
	tb.Helper()
	var answer struct{ Link []struct{ Ad string } }
	body := get(tb, base+"/v2/search/link?"+url.Values{"q": {v.query}, "loc": {"de"}, "ctx.dist": {"low"}, "api_key": {"demo"},
		"site_id": {"demo"}, "yk_tag": {v.ykTag}}.Encode())
	if err := json.Unmarshal(body, &answer); err != nil || len(answer.Link) == 0 {
		tb.Fatalf("search %q: %v %s", v.query, err, body)
	}
	links := answer.Link[:min(3, len(answer.Link))]
	browserHeaders := func(h http.Header) {
		h.Set("User-Agent", desktopChrome)
		h.Set("X-Forwarded-For", v.network)
	}
	q := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "url": {base + "/demo/search.html"}}
	for _, l := range links {
		q.Add("ad", l.Ad[strings.IndexByte(l.Ad, '?')+1:])
	}
	for range v.views {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/impression?"+q.Encode(), nil)
		browserHeaders(req.Header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			tb.Fatalf("impression: %s", res.Status)
		}
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var ads []string
	for _, l := range links[:min(v.clicks, len(links))] {
		req, _ := http.NewRequest(http.MethodGet, l.Ad, nil)
		browserHeaders(req.Header)
		if !v.bot {
			clicks.Navigation.Header(req.Header)
		}
		res, err := noFollow.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusFound {
			tb.Fatalf("click %s: %s", l.Ad, res.Status)
		}
		u, _ := url.Parse(l.Ad)
		ads = append(ads, u.Query().Get("adId"))
	}
	return ads
}

// requestLog records the URL of every request the browser's tab makes.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) add(u string) {
	l.mu.Lock()
	l.urls = append(l.urls, u)
	l.mu.Unlock()
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.urls)
}

// digits keeps the digits of s: a number as the reader's locale wrote it,
// without its separators and currency.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// TestDashboard signs in to the dashboard in a German browser with the
// demo partner's report token, after ads were shown and clicked: the
// chart and the table show the report's figures in the reader's locale;
// a wrong token is refused; the token stays in sessionStorage and out of
// every URL; the CSV download is the report's CSV; signing out forgets
// the token; an advertiser then sees its own report.
func TestDashboard(t *testing.T) {
	b := startBackend(t)
	base := b.URL
	const ykTag = "dashboard-test"
	ads := makeTraffic(t, base, visit{query: "iphone 15 hülle", ykTag: ykTag, network: "198.51.100.30", views: 1, clicks: 3})

	br := newBrowser(t)
	send(t, br, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "de-DE"})
	var requests requestLog
	keepLocal(t, br, base, make(chan string, 8), requests.add)
	settled := jsSource(dashSettled)
	view := func() dashView { return eval[dashView](t, br, jsCall(dashViewScript)) }

	br.do(t, chromedp.Navigate(base+"/dashboard"))
	if s := eval[string](t, br, jsCall(dashSettled)); s != "signed-out" {
		t.Fatalf("a fresh tab: state %q, want signed-out", s)
	}

	// A token no header can carry: refused at once.
	br.do(t, chromedp.SendKeys("#token", "tökén"))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "refused" {
		t.Fatalf("a token of other characters: state %q, want refused", s)
	}
	eval[string](t, br, `document.getElementById("token").value = ""`)

	// A wrong token: refused, and the form stays.
	br.do(t, chromedp.SendKeys("#token", "not-the-token"))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "refused" {
		t.Fatalf("a wrong token: state %q, want refused", s)
	}
	if v := view(); !v.SignIn || v.Dash || v.Refused == "" || v.Session != nil {
		t.Errorf("a wrong token: %+v", v)
	}

	// The demo partner's token, typed in.
	eval[string](t, br, `document.getElementById("token").value = ""`)
	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "ready" {
		t.Fatalf("the demo partner's token: state %q (%+v), want ready", s, view())
	}
	v := view()
	if v.SignIn || !v.Dash || !v.SignOut || v.Refused != "" || v.Session == nil || *v.Session != demoPartnerReport || v.Local != 0 {
		t.Errorf("signed in: form %v, dashboard %v, sign-out %v, refusal %q, sessionStorage %v, localStorage %d",
			v.SignIn, v.Dash, v.SignOut, v.Refused, v.Session, v.Local)
	}
	if v.Account != "Partner demo" {
		t.Errorf("account %q, want Partner demo", v.Account)
	}

	// The chart: 30 days, today's clicks, billable clicks and spend.
	if v.Days != 30 || v.ClickBars == 0 || v.BillableBars == 0 || !v.SpendLine || v.ChartEmpty {
		t.Errorf("chart: %d days, %d click bars, %d billable bars, spend line %v, empty %v", v.Days, v.ClickBars, v.BillableBars, v.SpendLine, v.ChartEmpty)
	}
	// The figures are the report's, in German.
	body, _ := fetchReport(t, base, demoPartnerReport, "day", "json")
	var byDay reportAnswer
	if err := json.Unmarshal(body, &byDay); err != nil {
		t.Fatal(err)
	}
	var imps, clicked, billable float64
	for _, r := range byDay.Rows {
		imps += r["impressions"].(float64)
		clicked += r["clicks"].(float64)
		billable += r["billable_clicks"].(float64)
	}
	if billable == 0 {
		t.Fatalf("the report has no billable click after %d were made: %s", len(ads), body)
	}
	for i, want := range []float64{imps, clicked, billable} {
		if got := digits(v.Kpis[i]); got != strconv.FormatFloat(want, 'f', 0, 64) {
			t.Errorf("figure %d is %q, the report says %v", i, v.Kpis[i], want)
		}
	}
	if spend := v.Kpis[4]; !strings.Contains(spend, "€") || !strings.Contains(spend, ",") || strings.HasPrefix(spend, "€") {
		t.Errorf("spend %q is not written as in Germany (1,50 €)", spend)
	}

	// The table: the report's rows by site, ad and yk_tag, the clicked
	// ads among them.
	body, _ = fetchReport(t, base, demoPartnerReport, "site_id,ad,yk_tag", "json")
	var table reportAnswer
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	if len(v.Rows) != len(table.Rows) {
		t.Errorf("the table has %d rows, the report %d", len(v.Rows), len(table.Rows))
	}
	type key struct{ site, ad, yk string }
	want := map[key][2]string{}
	for _, r := range table.Rows {
		yk, _ := r["yk_tag"].(string)
		if yk == "" {
			yk = "—"
		}
		want[key{r["site_id"].(string), r["ad"].(string), yk}] = [2]string{strconv.FormatFloat(r["clicks"].(float64), 'f', 0, 64), digits(r["spend"].(string))}
	}
	shown := map[string]bool{}
	for _, row := range v.Rows {
		if len(row) != 8 {
			t.Fatalf("row %q", row)
		}
		k := key{row[0], row[1], row[2]}
		if w, ok := want[k]; !ok || w[0] != digits(row[4]) || strings.TrimLeft(w[1], "0") != strings.TrimLeft(digits(row[7]), "0") {
			t.Errorf("row %q; the report's is %q", row, w)
		}
		if row[2] == ykTag && row[0] == "demo" {
			shown[row[1]] = true
		}
	}
	for _, ad := range ads {
		if !shown[ad] {
			t.Errorf("the clicked ad %s with yk_tag %s is not in the table", ad, ykTag)
		}
	}

	// The CSV download is the report's CSV.
	downloaded := saveDownloads(t, br, 30*time.Second, true)
	br.do(t, chromedp.Click("#csv"))
	got, name := downloaded()
	csv, disposition := fetchReport(t, base, demoPartnerReport, "site_id,ad,yk_tag", "csv")
	if !bytes.Equal(got, csv) || !strings.Contains(disposition, `filename="`+name+`"`) || !strings.HasSuffix(name, ".csv") {
		t.Errorf("downloaded %q as %q; the report's CSV is %q, %s", got, name, csv, disposition)
	}

	// The token survives a reload of the tab, in sessionStorage.
	br.do(t, chromedp.Reload())
	if s := eval[string](t, br, jsCall(dashSettled)); s != "ready" {
		t.Errorf("after a reload: state %q, want ready", s)
	}

	// Signing out forgets the token and what was shown.
	if s := evalCall[string](t, br, dashPress, "signout", settled); s != "signed-out" {
		t.Errorf("signed out: state %q", s)
	}
	if v := view(); !v.SignIn || v.Dash || v.Session != nil || len(v.Rows) != 0 || v.Days != 0 {
		t.Errorf("signed out: %+v", v)
	}

	// An advertiser signs in to its own ads' report.
	br.do(t, chromedp.SendKeys("#token", demoAdvertiserReport))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "ready" && s != "empty" {
		t.Fatalf("the demo advertiser's token: state %q (%+v)", s, view())
	}
	body, _ = fetchReport(t, base, demoAdvertiserReport, "day", "json")
	var adv reportAnswer
	if err := json.Unmarshal(body, &adv); err != nil {
		t.Fatal(err)
	}
	clicked = 0
	for _, r := range adv.Rows {
		clicked += r["clicks"].(float64)
	}
	if v := view(); v.Account != "Advertiser "+adv.Account.ID || digits(v.Kpis[1]) != strconv.FormatFloat(clicked, 'f', 0, 64) {
		t.Errorf("the advertiser %s with %v clicks sees %q and %q clicks", adv.Account.ID, clicked, v.Account, v.Kpis[1])
	}

	reports := 0
	for _, u := range requests.all() {
		if strings.Contains(u, "-report") || strings.Contains(u, "not-the-token") {
			t.Errorf("a request carried the token in its URL: %s", u)
		}
		if strings.HasPrefix(u, base+"/v2/report?") {
			reports++
		}
	}
	// Two reports signing in, two on reload, one CSV; the refused token's
	// pair too.
	if reports < 5 {
		t.Errorf("the page asked /v2/report %d times: %q", reports, requests.all())
	}
	br.noPageErrors(t)
}

// noPageErrors fails the test for every error the page logged but the
// browser's own line for each request that failed or was refused, which
// the dashboard meets on purpose.
func (br *browser) noPageErrors(tb testing.TB) {
	tb.Helper()
	eval[int](tb, br, settle)
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, e := range br.errors {
		if !strings.Contains(e, "Failed to load resource") {
			tb.Errorf("console: %s", e)
		}
	}
}

// failReports fails the tab's requests to /v2/report while failing is
// set, as a dropped connection would.
func failReports(tb testing.TB, br *browser, failing *atomic.Bool) {
	tb.Helper()
	paused := chromedp.Events(br.ctx, fetch.RequestPaused)
	send(tb, br, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/v2/report?*"}}})
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if failing.Load() {
					_, err := cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonInternetDisconnected})
					return err
				}
				_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				return err
			}))
		}
	}()
}

// TestDashboardStates: a range without traffic shows the empty state; a
// report that cannot be fetched says so and keeps the reader signed in,
// and Try again then shows the report.
func TestDashboardStates(t *testing.T) {
	b := startBackend(t)
	base := b.URL
	br := newBrowser(t)
	br.onEveryPage(t, clock)
	var failing atomic.Bool
	failReports(t, br, &failing)
	settled := jsSource(dashSettled)
	view := func() dashView { return eval[dashView](t, br, jsCall(dashViewScript)) }

	br.do(t, chromedp.Navigate(base+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))
	// Two years ago, before this server's first click.
	eval[int](t, br, "window.clockShift = -2 * 366 * 24 * 3600 * 1000")
	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "empty" {
		t.Fatalf("two years ago: state %q (%+v), want empty", s, view())
	}
	if v := view(); !v.ChartEmpty || v.Days != 0 || len(v.Rows) != 0 || !v.Dash || v.Kpis[1] != "0" {
		t.Errorf("two years ago: %+v", v)
	}
	if disabled := eval[bool](t, br, `document.getElementById("csv").disabled`); !disabled {
		t.Errorf("the CSV download is offered for an empty table")
	}

	// Signed in again today, on a network that drops the report's
	// requests.
	eval[int](t, br, "window.clockShift = 0")
	if s := evalCall[string](t, br, dashPress, "signout", settled); s != "signed-out" {
		t.Fatalf("signed out: state %q", s)
	}
	failing.Store(true)
	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "offline" {
		t.Fatalf("offline: state %q, want offline", s)
	}
	if v := view(); v.NetError == "" || !v.Dash || v.SignIn || v.Session == nil {
		t.Errorf("offline: %+v", v)
	}
	failing.Store(false)
	if s := evalCall[string](t, br, dashPress, "retry", settled); s != "ready" && s != "empty" {
		t.Fatalf("back online: state %q, want the report", s)
	}
	if v := view(); v.NetError != "" || v.Days == 0 && !v.ChartEmpty {
		t.Errorf("back online: %+v", v)
	}
	br.noPageErrors(t)
}

// TestDashboardScreenshot shows the dashboard over a month of traffic,
// made day by day on a server whose clock moves through the month: the
// chart has a bar on every day. With -update-screenshot it writes the
// page as docs/dashboard.png, the README's picture.
func TestDashboardScreenshot(t *testing.T) {
	var now atomic.Int64
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -29)
	b, err := newBackend(backendOptions{now: func() time.Time { return time.Unix(0, now.Load()) }, unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	searches := []struct{ query, ykTag string }{
		{"iphone 15", "newsletter"}, {"galaxy s24", "sidebar"}, {"kopfhörer", "testbericht"}, {"handyhülle", "testbericht"},
	}
	n := 0
	for day := range 30 {
		// A week's rhythm over a month's growth.
		visits := 2 + day/8 + [7]int{0, 1, 2, 2, 1, 0, 0}[day%7]
		for i := range visits {
			now.Store(start.AddDate(0, 0, day).Add(time.Duration(6+i) * time.Hour).UnixNano())
			n++
			s := searches[(day+i)%len(searches)]
			makeTraffic(t, base, visit{query: s.query, ykTag: s.ykTag, network: "198.51." + strconv.Itoa(101+n/250) + "." + strconv.Itoa(n%250+1),
				views: 10, clicks: 1 + (day+i)%2, bot: (day+i)%5 == 4})
		}
	}

	br := newBrowser(t)
	send(t, br, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"})
	send(t, br, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1200, Height: 900, DeviceScaleFactor: 1})
	br.do(t, chromedp.Navigate(base+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))
	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	if s := evalCall[string](t, br, dashPress, "go", jsSource(dashSettled)); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	v := eval[dashView](t, br, jsCall(dashViewScript))
	if v.Days != 30 || v.ClickBars < 28 || v.BillableBars < 20 || len(v.Rows) < 4 {
		t.Errorf("a month of traffic: %d days, %d with clicks, %d with billable clicks, %d rows", v.Days, v.ClickBars, v.BillableBars, len(v.Rows))
	}
	// The picture is only taken for the README: nothing compares it.
	if *updateScreenshot {
		shot, err := chromedp.Run(br.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "dashboard.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	br.noPageErrors(t)
}

// TestDashboardNotFramed: a page of another site that frames the
// dashboard gets an error page in the frame, so it cannot dress the
// dashboard up and have a reader type a token into it; a demo page, which
// may be framed, loads in the frame beside it.
func TestDashboardNotFramed(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	site := publisher(t, map[string]string{"/frame.html": `<!doctype html><title>frame</title>
<iframe src="` + b.URL + `/dashboard" onload="window.loaded = (window.loaded || 0) + 1"></iframe>
<iframe src="` + b.URL + `/demo/" onload="window.loaded = (window.loaded || 0) + 1"></iframe>`})
	br.do(t, chromedp.Navigate(site+"/frame.html"))
	eval[bool](t, br, `new Promise((resolve) => { const both = () => window.loaded === 2 ? resolve(true) : setTimeout(both, 10); both(); })`)
	var tree *page.FrameTree
	br.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
		tree = res.FrameTree
		return err
	}))
	if len(tree.ChildFrames) != 2 {
		t.Fatalf("%d frames in the page, want 2", len(tree.ChildFrames))
	}
	if f := tree.ChildFrames[0].Frame; !strings.HasPrefix(f.URL, "chrome-error://") || f.UnreachableURL != b.URL+"/dashboard" {
		t.Errorf("the framed dashboard: %s (unreachable %q), want the browser's error page", f.URL, f.UnreachableURL)
	}
	if f := tree.ChildFrames[1].Frame; f.URL != b.URL+"/demo/" {
		t.Errorf("the framed demo page: %s", f.URL)
	}
}

//go:embed testdata/dashboard/mobile.js
var dashMobile string

// TestDashboardOnAPhone signs in on a phone's screen: the page does not
// scroll sideways, the chart's labels are text a reader can read (the
// chart is drawn 960 units wide and scaled to the screen), and the
// keyboard's focus goes to the report once shown, not back to the page's
// start, as the form it was in is gone.
func TestDashboardOnAPhone(t *testing.T) {
	b := startBackend(t)
	makeTraffic(t, b.URL, visit{query: "galaxy s24", ykTag: "phone-test", network: "198.51.100.41", views: 1, clicks: 1})
	br := newBrowser(t)
	send(t, br, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 375, Height: 800, DeviceScaleFactor: 2, Mobile: true})
	br.do(t, chromedp.Navigate(b.URL+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))
	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	br.do(t, chromedp.KeyEvent("\r"))
	if s := eval[string](t, br, jsCall(dashSettled)); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	type phone struct {
		Sideways bool
		Labels   int
		Smallest float64
		Focus    string
	}
	m := eval[phone](t, br, dashMobile)
	if m.Sideways {
		t.Error("the page scrolls sideways on a phone")
	}
	if m.Labels == 0 || m.Smallest < 9 {
		t.Errorf("%d chart labels, the smallest %.1f px high; want them 9 px or more", m.Labels, m.Smallest)
	}
	if !strings.HasSuffix(m.Focus, " in dash") {
		t.Errorf("after signing in the focus is on %q, want it in the report", m.Focus)
	}
	br.noPageErrors(t)
}

// saveDownloads has br's tab save its downloads in a directory of the
// test's, the events watched from now on, within timeout. The function it
// returns waits for the next download to complete and returns its bytes,
// and its suggested name when named (its start is watched too).
func saveDownloads(t *testing.T, br *browser, timeout time.Duration, named bool) func() ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	br.do(t, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true),
			// The tab's own browser context, not the browser's default one.
			BrowserContextID: chromedp.FromContext(br.ctx).BrowserContextID})
		return err
	}))
	ctx, cancel := context.WithTimeout(br.ctx, timeout)
	t.Cleanup(cancel)
	var begun iter.Seq2[cdpbrowser.EventDownloadWillBegin, error]
	if named {
		begun = chromedp.Events(ctx, cdpbrowser.DownloadWillBegin)
	}
	progress := chromedp.Events(ctx, cdpbrowser.DownloadProgress)
	return func() ([]byte, string) {
		t.Helper()
		var name string
		if named {
			for ev, err := range begun {
				if err != nil {
					t.Fatalf("no download began: %v", err)
				}
				name = ev.SuggestedFilename
				break
			}
		}
		var file string
		for ev, err := range progress {
			if err != nil {
				t.Fatalf("the download did not complete: %v", err)
			}
			if ev.State == cdpbrowser.DownloadProgressStateCompleted {
				file = filepath.Join(dir, ev.GUID)
				break
			}
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return got, name
	}
}
