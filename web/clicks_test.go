package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

var (
	//go:embed testdata/clicks/first_href.js
	firstIntextHref string
	// clickIntext clicks the first in-text link, opening it in the tab.
	//
	//go:embed testdata/clicks/click.js
	clickIntext string
	// recordTokens fetches every manifest anew and records its site token
	// in window.manifestToks.
	//
	//go:embed testdata/clicks/record_tokens.js
	recordTokens string
	// tokenSearch, called with clockShift, sets it and searches: the first
	// ad's site token and the manifests' tokens.
	//
	//go:embed testdata/clicks/token_search.js
	tokenSearch string
	// placeLink, called with an href, makes it the page's only link,
	// #server-ad.
	//
	//go:embed testdata/clicks/place_link.js
	placeLink string
)

// desktopChrome is the user agent of a desktop Chrome: headless Chromium
// names itself in its own, and a bot's click bills nothing.
const desktopChrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// serverLinkInChrome starts a browser that names itself a desktop Chrome
// and a backend, and returns them with the first ad URL of a server
// answer, signed and with its decision, and that URL parsed.
func serverLinkInChrome(t *testing.T) (*browser, *backend, string, *url.URL) {
	t.Helper()
	br := newBrowser(t)
	b := startBackend(t)
	send(t, br, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopChrome})
	var answer struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?q=iphone+15&api_key=demo&site_id=demo"), &answer); err != nil || len(answer.Link) == 0 {
		t.Fatalf("search: %v %+v", err, answer)
	}
	href := answer.Link[0].Ad
	u, err := url.Parse(href)
	if err != nil || u.Query().Get("d") == "" || u.Query().Get("sig") == "" {
		t.Fatalf("a server link without decision or signature: %s", href)
	}
	return br, b, href, u
}

// TestServerLinkClickBills: a person's click on an ad URL of a server
// answer bills; the same URL clicked again lands, recorded as a repeat of
// its decision.
func TestServerLinkClickBills(t *testing.T) {
	br, b, href, u := serverLinkInChrome(t)
	adID := u.Query().Get("adId")

	// Requests leaving the test's server fail; each is reported, so the
	// test knows the redirect was answered (and the click logged).
	left := make(chan string, 4)
	keepLocal(t, br, b.URL, left, nil)
	start := time.Now().Add(-time.Minute)
	for i := range 2 {
		br.do(t, chromedp.Navigate(b.URL+"/demo/index.html?server-link="+strconv.Itoa(i)))
		evalCall[bool](t, br, placeLink, href)
		// A mouse click: the browser says a person navigated.
		br.do(t, chromedp.Click("#server-ad"))
		select {
		case <-left:
		case <-time.After(20 * time.Second):
			t.Fatalf("click %d never left for the landing page", i)
		}
	}
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start, time.Now().Add(time.Minute), func(c clicks.Click) error {
		if c.AdID == adID && c.Type == "search" {
			logged = append(logged, c)
		}
		return nil
	})
	if len(logged) != 2 || !logged[0].Billable || logged[1].Billable || logged[1].Reason != clicks.ReasonRepeat {
		t.Errorf("clicks recorded for the ad: %+v, want one billable, then a repeat", logged)
	}
}

// TestScriptNavigationDoesNotBill: a page's script that sends the reader's
// Chromium to an ad URL, by location.href or a synthetic click, with no
// click of the reader's, bills nothing (the browser sends no
// Sec-Fetch-User); the reader's own mouse click on the same link then
// bills, as neither spent its decision.
func TestScriptNavigationDoesNotBill(t *testing.T) {
	br, b, href, u := serverLinkInChrome(t)
	// A network of its own: the shared server's other tests click too.
	ip := "2001:db8:" + strconv.FormatInt(readers.Add(1), 16) + "::1"
	left := make(chan string, 4)
	intercept(t, br, interception{local: []string{b.URL + "/"}, left: left, header: [2]string{"X-Forwarded-For", ip}})
	start := time.Now().Add(-time.Minute)
	for i, navigate := range []func(){
		// The page's script, on its own once the evaluation returned.
		func() {
			eval[bool](t, br, `setTimeout(() => { location.href = document.getElementById("server-ad").href }, 0), true`)
		},
		func() { eval[bool](t, br, `setTimeout(() => document.getElementById("server-ad").click(), 0), true`) },
		func() { br.do(t, chromedp.Click("#server-ad")) }, // the reader's
	} {
		br.do(t, chromedp.Navigate(b.URL+"/demo/index.html?script-navigation="+strconv.Itoa(i)))
		evalCall[bool](t, br, placeLink, href)
		navigate()
		select {
		case <-left:
		case <-time.After(20 * time.Second):
			t.Fatalf("navigation %d never left for the landing page", i)
		}
	}
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start, time.Now().Add(time.Minute), func(c clicks.Click) error {
		if c.AdID == u.Query().Get("adId") && c.IP == ip {
			logged = append(logged, c)
		}
		return nil
	})
	if len(logged) != 3 || logged[0].Billable || logged[0].Reason != clicks.ReasonNotNavigation ||
		logged[1].Billable || logged[1].Reason != clicks.ReasonNotNavigation || !logged[2].Billable {
		t.Errorf("clicks recorded for the ad: %+v; want location.href and a synthetic click not_navigation, then the reader's click billable", logged)
	}
}

// TestClickGoesThroughRedirect clicks an in-text ad: the browser asks
// /v1/redirect, which sends it to the ad's landing page from the catalog.
// The landing page is outside loopback, so its request is stopped and
// recorded instead of sent.
func TestClickGoesThroughRedirect(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.view(t, b.firstView("article.html"))
	href := eval[string](t, br, firstIntextHref)
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	var landing string
	for _, a := range b.ads {
		if a.ID == u.Query().Get("adId") {
			landing = a.Landing
		}
	}
	if landing == "" {
		t.Fatalf("%s: no such ad in the catalog", href)
	}

	left := make(chan string, 1)
	var sawRedirect bool
	keepLocal(t, br, b.URL, left, func(u string) {
		if strings.HasPrefix(u, b.URL+"/v1/redirect?") {
			sawRedirect = true
		}
	})
	// A publisher's reader clicks; the link opens in this tab for the test.
	eval[bool](t, br, clickIntext)
	select {
	case got := <-left:
		if got != landing {
			t.Errorf("the click landed on %s, want the catalog's %s", got, landing)
		}
		if !sawRedirect {
			t.Errorf("the click did not go through /v1/redirect")
		}
		if !strings.Contains(href, "&tok=") {
			t.Errorf("the page's click URL carries no site token: %s", href)
		}
		// The click is in the log, its site token verified and not billed:
		// a site token alone proves no ad was shown ("unverified", which
		// the judge finds before it reads the user agent; a forged or
		// expired token would say so instead).
		var logged []clicks.Click
		b.clicks.Scan(context.Background(), time.Now().Add(-time.Minute), time.Now().Add(time.Minute), func(c clicks.Click) error {
			if c.AdID == u.Query().Get("adId") && c.Type == "intext" {
				logged = append(logged, c)
			}
			return nil
		})
		if len(logged) != 1 || logged[0].Billable || logged[0].Reason != clicks.ReasonUnverified {
			t.Errorf("clicks recorded for the ad: %+v, want one unverified, with a verified site token", logged)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the click never left for the landing page")
	}
}

// TestClickTokenRenewed: the page's click URLs carry the site token of a
// manifest fetched again when its token nears expiry, not the first one,
// while the shard loaded stays in use. The page's clock is moved ahead.
func TestClickTokenRenewed(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, clock)
	br.onEveryPage(t, recordTokens)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	type result struct {
		Tok  string
		Toks []string
	}
	first := evalCall[result](t, br, tokenSearch, 0)
	if len(first.Toks) != 1 || first.Tok == "" || first.Tok != first.Toks[0] {
		t.Fatalf("first search: click token %q, manifests' tokens %q", first.Tok, first.Toks)
	}
	// 55 minutes later the token (an hour) expires within 10 minutes. (A
	// second on, so the server's new token differs from the first.)
	time.Sleep(1100 * time.Millisecond)
	shift := (55 * time.Minute).Milliseconds()
	later := evalCall[result](t, br, tokenSearch, shift)
	if len(later.Toks) != 2 || later.Toks[1] == later.Toks[0] || later.Tok != later.Toks[1] {
		t.Errorf("55 minutes later: click token %q, manifests' tokens %q; want a second manifest's", later.Tok, later.Toks)
	}
	again := evalCall[result](t, br, tokenSearch, shift)
	if len(again.Toks) != 2 || again.Tok != again.Toks[1] {
		t.Errorf("right after: click token %q, manifests' tokens %q; want no third manifest", again.Tok, again.Toks)
	}
	br.noConsoleErrors(t)
}

var (
	//go:embed testdata/clicks/token_href.js
	tokenHref string
	//go:embed testdata/clicks/placed_links.js
	placedLinks string
	//go:embed testdata/clicks/click_first.js
	clickFirst string
)

// placedState is what placed_links.js reports.
type placedState struct {
	Links []struct {
		Href         string
		Token, Below bool
	}
	FirstAd, FirstToken float64
}

// readerClick is one reader's click on the first in-text ad of the page
// open in br: the click recorded, and how long after the first ad was
// placed its link got its click token (0 for a server answer's link,
// which needs none).
type readerClick struct {
	Click      clicks.Click
	TokenAfter time.Duration
	// Placed is the page's ads as they were before the click.
	Placed placedState
}

// readers counts the readers tests play, each from an address of its own.
var readers atomic.Int64

// asReader makes br a new reader: a desktop Chrome from an address no
// other reader of the test server b has (X-Forwarded-For, added as the
// trusted loopback proxy would), so its clicks are judged on their own.
// Requests to b and to the publisher's site go through; any other (a
// landing page) fails, its URL sent to the reader's left.
func asReader(tb testing.TB, br *browser, b *backend, site string) reader {
	tb.Helper()
	return asReaderAnswered(tb, br, b, site, nil)
}

// asReaderAnswered is asReader whose requests answer (when set) may answer
// itself instead of the server (see interception.answer).
func asReaderAnswered(tb testing.TB, br *browser, b *backend, site string, answer func(url string) (int64, []byte, bool)) reader {
	tb.Helper()
	return asReaderWith(tb, br, b, site, interception{answer: answer})
}

// asReaderWith is asReader whose requests are answered, held or lost as
// in's answer, answerHeader, hold and lose say.
func asReaderWith(tb testing.TB, br *browser, b *backend, site string, in interception) reader {
	tb.Helper()
	r := reader{left: make(chan string, 1), ip: "2001:db8:" + strconv.FormatInt(readers.Add(1), 16) + "::1"}
	send(tb, br, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopChrome})
	in.local, in.left, in.header, in.userAgent = []string{b.URL + "/", site + "/"}, r.left, [2]string{"X-Forwarded-For", r.ip}, desktopChrome
	intercept(tb, br, in)
	return r
}

// reader is a browser asReader set up: where its clicks left for, and
// the address it clicks from.
type reader struct {
	left chan string
	ip   string
}

// landed waits for the reader's click to leave for the landing page.
func (rd reader) landed(tb testing.TB) {
	tb.Helper()
	select {
	case <-rd.left:
	case <-time.After(20 * time.Second):
		tb.Fatal("the click never left for the landing page")
	}
}

// clicksOn returns the clicks b recorded from the reader's address since
// start, on ad (any ad when ""), oldest first.
func (rd reader) clicksOn(b *backend, ad string, start time.Time) []clicks.Click {
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(c clicks.Click) error {
		if (ad == "" || c.AdID == ad) && c.IP == rd.ip {
			logged = append(logged, c)
		}
		return nil
	})
	return logged
}

// clickMiddle has the reader click the middle of the link the page's
// expression link names, in its own tab, once a token of it would bill,
// waits for the landing and returns the clicks b recorded on ad since
// start.
func (rd reader) clickMiddle(tb testing.TB, br *browser, b *backend, link, ad string, start time.Time) []clicks.Click {
	tb.Helper()
	time.Sleep(config.Default().ClickMinDelay)
	eval[bool](tb, br, link+`.removeAttribute("target"), true`)
	xy := eval[[2]float64](tb, br, `(() => { const r = `+link+`.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	br.do(tb, chromedp.MouseClickXY(xy[0], xy[1]))
	rd.landed(tb)
	return rd.clicksOn(b, ad, start)
}

// impressionsOf returns the ads of the impressions b counted from the
// reader's address since start, of ad (any ad when "").
func (rd reader) impressionsOf(b *backend, ad string, start time.Time) []string {
	var ads []string
	b.imps.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(i clicks.Impression) error {
		if (ad == "" || i.AdID == ad) && i.IP == rd.ip {
			ads = append(ads, i.AdID)
		}
		return nil
	})
	return ads
}

// clickLikeAReader waits as a reader would for the first in-text ad of the
// page open in br to be billable (for an ad the page matched, until its
// impression has given it a click token, and the least delay after that),
// clicks it with the mouse and returns the click the server recorded.
func clickLikeAReader(tb testing.TB, br *browser, b *backend, rd reader, inPage bool) readerClick {
	tb.Helper()
	var rc readerClick
	href := eval[string](tb, br, firstIntextHref)
	if inPage {
		ctx, cancel := context.WithTimeout(br.ctx, 20*time.Second)
		var err error
		href, err = chromedp.Run(ctx, chromedp.Poll[string](tokenHref, chromedp.WithPollingTimeout(15*time.Second)))
		cancel()
		if err != nil {
			tb.Fatalf("the first in-text ad never got its click token: %v", err)
		}
		st := eval[placedState](tb, br, placedLinks)
		rc.TokenAfter = time.Duration((st.FirstToken - st.FirstAd) * float64(time.Millisecond))
		time.Sleep(config.Default().ClickMinDelay) // a reader is no faster
	}
	rc.Placed = eval[placedState](tb, br, placedLinks)
	u, err := url.Parse(href)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	br.do(tb, chromedp.Click(eval[string](tb, br, clickFirst)))
	rd.landed(tb)
	logged := rd.clicksOn(b, u.Query().Get("adId"), start)
	if len(logged) != 1 {
		tb.Fatalf("clicks recorded for %s: %+v, want 1", href, logged)
	}
	rc.Click = logged[0]
	return rc
}

// TestInPageClickBillsAfterItsImpression: an ad the page matched on its
// first view gets its click token once a reader could see it, and a
// reader's click on it then bills; an ad out of view gets none, and the
// impression is recorded.
func TestInPageClickBillsAfterItsImpression(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	rd := asReader(t, br, b, site)
	start := time.Now()
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	rc := clickLikeAReader(t, br, b, rd, true)
	if !rc.Click.Billable || rc.Click.Type != "intext" {
		t.Errorf("a reader's click on an in-page ad after its impression: %+v, want billable", rc.Click)
	}
	below, inView := 0, 0
	for _, l := range rc.Placed.Links {
		if u, err := url.Parse(l.Href); err == nil && !l.Below && u.Query().Get("adId") == rc.Click.AdID {
			inView++
		}
		if l.Below {
			below++
			if l.Token {
				t.Errorf("a link out of view got a click token: %s", l.Href)
			}
		}
	}
	if below == 0 {
		t.Errorf("no placed link out of view: %+v", rc.Placed.Links)
	}
	var imps []clicks.Impression
	b.imps.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(i clicks.Impression) error {
		if i.AdID == rc.Click.AdID && strings.HasPrefix(i.Page, site) {
			imps = append(imps, i)
		}
		return nil
	})
	// One, however many links of the ad were in view (a brand and a model
	// can both link it, each reported when it came into view): one page,
	// one network, one impression window.
	if inView == 0 || len(imps) != 1 || imps[0].UserAgent != desktopChrome || imps[0].IP != rc.Click.IP {
		t.Errorf("impressions of the clicked ad (%d links in view): %+v, want 1 from the reader's browser", inView, imps)
	}
}

// readerPage is a publisher's page with an ad in view and one far below.
const readerPage = `<article><p>Das neue Apple iPhone 15 im Test.</p>` +
	`<p style="margin-top:5000px">Und das Google Pixel 8 ganz unten.</p></article>`

// BenchmarkGenuineClicks plays readers in a real Chromium clicking the
// first in-text ad as a person would: on pages the server has analysed
// (its answer's signed links) and on first views (ads the page matched,
// billable once their impression gave them a click token). It reports the
// billable share of each (target 1) and how long after the first ad the
// first click token came, plus the least delay before a click bills,
// beside the floor of that wait: the second an ad must be in view and the
// same delay.
func BenchmarkGenuineClicks(b *testing.B) {
	const rounds = 4
	srv := startBackend(b)
	site := publisher(b, map[string]string{"/page.html": publisherPage("de-DE", srv.URL, readerPage)})
	b.ResetTimer()
	for range b.N {
		billed := map[bool]int{}
		var waits []float64
		for i := range 2 * rounds {
			inPage := i%2 == 0
			br := newBrowser(b)
			// A page of its own for each first view; the analysed page for
			// the server's answers.
			page := site + "/page.html?server"
			if inPage {
				page = site + "/page.html?view=" + strconv.Itoa(i)
			}
			rd := asReader(b, br, srv, site)
			if !inPage && i == 1 {
				br.view(b, page)
				srv.waitAnalysed(b, page)
			}
			r := br.view(b, page)
			if want := map[bool]string{true: "local", false: "server"}[inPage]; r.Source != want || r.Links == 0 {
				b.Fatalf("view of %s: %+v, want ads from %s", page, r, want)
			}
			rc := clickLikeAReader(b, br, srv, rd, inPage)
			if rc.Click.Billable {
				billed[inPage]++
			} else {
				b.Logf("a reader's click not billed (in page: %v): %s", inPage, rc.Click.Reason)
			}
			if inPage {
				waits = append(waits, float64((rc.TokenAfter + config.Default().ClickMinDelay).Milliseconds()))
			}
			br.close()
		}
		floor := float64((time.Second + config.Default().ClickMinDelay).Milliseconds())
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(float64(billed[false])/rounds, "server-billable-share")
		b.ReportMetric(float64(billed[true])/rounds, "inpage-billable-share")
		b.ReportMetric(median(waits), "ms-proof-wait")
		b.ReportMetric(floor, "ms-proof-floor")
		b.ReportMetric(median(waits)/floor, "ratio")
	}
}

// TestEveryReaderClickIsANavigation: the intent rule refuses a Chromium
// navigation without Sec-Fetch-User, so each way a reader follows a link
// (a left, middle, Ctrl or Shift click, Enter on the focused link) must
// bring it: Chromium's requests for each, judged by the rule with a
// desktop Chrome's user agent, are a person's navigation.
func TestEveryReaderClickIsANavigation(t *testing.T) {
	var mu sync.Mutex
	reasons := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			fmt.Fprint(w, `<!doctype html><a id="a" href="/go" style="display:block;width:300px;height:60px">an ad</a>`)
			return
		}
		if r.URL.Path == "/go" {
			mu.Lock()
			reasons[r.URL.RawQuery] = "judged: " + clicks.IntentOf(r.Header).Reason(desktopChrome)
			mu.Unlock()
		}
		fmt.Fprint(w, "landed")
	}))
	defer srv.Close()
	click := func(opts ...chromedp.MouseOption) chromedp.Action[chromedp.Void] {
		return chromedp.MouseClickXY(50, 30, opts...)
	}
	ways := []struct {
		name string
		act  chromedp.Action[chromedp.Void]
	}{
		{"left", click()},
		{"middle", click(chromedp.ButtonType(input.MouseButtonMiddle))},
		{"ctrl", click(chromedp.ButtonModifiers(chromedp.ModifierCtrl))},
		{"shift", click(chromedp.ButtonModifiers(chromedp.ModifierShift))},
		{"enter", chromedp.KeyEvent("\r")},
	}
	for _, w := range ways {
		br := newBrowser(t)
		br.do(t, chromedp.Navigate(srv.URL+"/"))
		eval[bool](t, br, `document.getElementById("a").href = "/go?`+w.name+`", document.getElementById("a").focus(), true`)
		br.do(t, w.act)
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			_, seen := reasons[w.name]
			mu.Unlock()
			if seen || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		br.close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range ways {
		if got, ok := reasons[w.name]; got != "judged: " {
			t.Errorf("a reader's %s click: seen %v, %q; want a navigation (no reason)", w.name, ok, got)
		}
	}
}
