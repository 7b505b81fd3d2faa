package web

import (
	"context"
	_ "embed"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
)

// TestInPageClickBillsAnHourLater: a reader who clicks an ad the page
// matched more than an hour after it was seen, when the click token of
// its link and the link's site token have both expired (a long read, a
// tab come back to), still bills: the link is reported again once it
// shows again, with the site token of a manifest fetched anew, and gets a
// fresh click token. The server's clock and the page's move ahead
// together.
func TestInPageClickBillsAnHourLater(t *testing.T) {
	b, br, ahead, site, rd := readerAhead(t)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	first := pollHref(t, br, tokenHref)
	if first == "" {
		t.Fatal("the first in-text ad never got its click token")
	}
	// An hour and a minute later on both clocks, the reader's tab shows
	// again, the ad in view.
	shift := time.Hour + time.Minute
	ahead.Store(int64(shift))
	// The browser's HTTP cache keeps the manifest (max-age) by the real
	// clock, which the test does not move: an hour later it is stale.
	send(t, br, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
	eval[bool](t, br, `(() => { window.clockShift = `+strconv.FormatInt(shift.Milliseconds(), 10)+
		`; document.dispatchEvent(new Event("visibilitychange")); return true; })()`)
	renewed := pollHref(t, br, `(() => {
  const a = document.querySelector('a.adlink-intext');
  return a && /[?&]ct=/.test(a.href) && a.href !== `+strconv.Quote(first)+` ? a.href : false;
})()`)
	href := renewed
	if renewed == "" {
		t.Error("the link seen an hour before got no fresh click token when its tab showed again")
		href = eval[string](t, br, firstIntextHref)
	} else {
		was, now := query(t, first), query(t, renewed)
		if now.Get("tok") == was.Get("tok") || now.Get("ct") == was.Get("ct") || len(now["ct"]) != 1 {
			t.Errorf("renewed link %s, after %s: want a new site token and one new click token", renewed, first)
		}
	}
	time.Sleep(config.Default().ClickMinDelay) // a reader is no faster
	start := time.Now().Add(shift)
	br.do(t, chromedp.Click(eval[string](t, br, clickFirst)))
	select {
	case <-rd.left:
	case <-time.After(20 * time.Second):
		t.Fatal("the click never left for the landing page")
	}
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(shift+time.Second), func(c clicks.Click) error {
		if c.AdID == query(t, href).Get("adId") && c.IP == rd.ip {
			logged = append(logged, c)
		}
		return nil
	})
	if len(logged) != 1 || !logged[0].Billable {
		t.Errorf("a reader's click an hour after the ad was seen: %+v, want one billable", logged)
	}
}

// pollHref is what script, a chromedp.Poll predicate, returns within 15
// seconds, or "".
func pollHref(t *testing.T, br *browser, script string) string {
	t.Helper()
	return pollWithin(t, br, script, 15*time.Second)
}

// pollWithin is pollHref waiting up to d.
func pollWithin(t *testing.T, br *browser, script string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, d+5*time.Second)
	defer cancel()
	href, err := chromedp.Run(ctx, chromedp.Poll[string](script, chromedp.WithPollingTimeout(d)))
	if err != nil {
		return ""
	}
	return href
}

// query is the query of the link href.
func query(t *testing.T, href string) url.Values {
	t.Helper()
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// countBeacons counts the page's impression beacons, sent and settled.
//
//go:embed testdata/renew/beacons.js
var countBeacons string

// TestRenewalKeepsTheTokenItHas: a link reported again for a fresh click
// token keeps the one it has until the new one comes. Its token bills
// for minutes yet; a click while the beacon is on its way, or after it
// failed (a train's tunnel, a blocker), still bills.
func TestRenewalKeepsTheTokenItHas(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, clock)
	br.onEveryPage(t, countBeacons)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	first := pollHref(t, br, tokenHref)
	if first == "" {
		t.Fatal("the first in-text ad never got its click token")
	}
	// 55 minutes later on the page's clock its token nears expiry, and
	// the next beacon fails.
	send(t, br, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{{URLPattern: "*://*:*/v1/impression*", Block: true}}})
	sent := eval[int](t, br, `window.beacons`)
	eval[bool](t, br, `(() => { window.clockShift = 55 * 60 * 1000; document.dispatchEvent(new Event("visibilitychange")); return true; })()`)
	if pollHref(t, br, `window.beaconsDone > `+strconv.Itoa(sent)+` && "done"`) == "" {
		t.Fatal("the link was not reported again as its token neared expiry")
	}
	if href := eval[string](t, br, firstIntextHref); href != first {
		t.Errorf("after a failed beacon the link is %s, want it as it was, %s", href, first)
	}
}

// TestRenewalTakesNoClockOnTrust: a reader's clock may be hours off.
// Whether a link's click token nears expiry is told from how long the
// token lasts, not from the reader's clock against the server's: else
// with a clock ahead each token would look spent as soon as it came, and
// every link in view would be reported again each time the tab shows.
func TestRenewalTakesNoClockOnTrust(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, clock)
	br.onEveryPage(t, countBeacons+`; window.clockShift = 2 * 3600 * 1000;`)
	br.onEveryPage(t, countBeacons)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("the first in-text ad never got its click token")
	}
	sent := eval[int](t, br, `window.beacons`)
	// The tab hides and shows again, three times, a second and more each.
	for range 3 {
		eval[bool](t, br, `(document.dispatchEvent(new Event("visibilitychange")), true)`)
		eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 1500))`)
	}
	if n := eval[int](t, br, `window.beacons`) - sent; n != 0 {
		t.Errorf("%d beacons as the tab showed again, its tokens fresh; want none", n)
	}
}

// TestInPageLinkSeenFirstAnHourLater: a link far down the page that the
// reader first scrolls to more than an hour after the page matched it,
// when the site token it was made with has expired, gets its click token
// all the same: it is reported with the site token of a manifest fetched
// anew, as a link reported again is.
func TestInPageLinkSeenFirstAnHourLater(t *testing.T) {
	_, br, ahead, site, _ := readerAhead(t)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 2 {
		t.Fatalf("first view: %+v, want ads matched in the page, one far below", r)
	}
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("the first in-text ad never got its click token")
	}
	shift := time.Hour + time.Minute
	ahead.Store(int64(shift))
	send(t, br, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
	eval[bool](t, br, `(() => { window.clockShift = `+strconv.FormatInt(shift.Milliseconds(), 10)+`; scrollTo(0, document.body.scrollHeight); return true; })()`)
	if pollHref(t, br, `(() => {
  const a = [...document.querySelectorAll('a.adlink-intext')].pop();
  return /[?&]ct=/.test(a.href) ? a.href : false;
})()`) == "" {
		t.Error("the link far below, first seen an hour after the page matched it, got no click token")
	}
}

// readerAhead starts a server of its own and a reader's browser whose
// clocks the returned duration moves ahead together (by the clock
// script), and a publisher's page of readerPage for it.
func readerAhead(t *testing.T) (*backend, *browser, *atomic.Int64, string, reader) {
	t.Helper()
	ahead := new(atomic.Int64)
	b, err := newBackend(backendOptions{now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t)
	br.onEveryPage(t, clock)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	return b, br, ahead, site, asReader(t, br, b, site)
}

// TestRefusedBeaconTriesAgain: an impression beacon the server answers
// with an error (a 503 while it restarts, a 429) gives its links no click
// token, and they are reported again once they show again, as after a
// beacon that failed on the way. Before, they waited for a token that
// never came, and the reader's click did not bill.
func TestRefusedBeaconTriesAgain(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var refuse atomic.Bool
	refuse.Store(true)
	br.onEveryPage(t, countBeacons)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	asReaderAnswered(t, br, b, site, func(u string) (int64, []byte, bool) {
		return http.StatusServiceUnavailable, []byte(`{"error":"unavailable"}`), refuse.Load() && strings.HasPrefix(u, b.URL+"/v1/impression?")
	})
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	eval[int](t, br, settle)
	if href := eval[string](t, br, firstIntextHref); strings.Contains(href, "ct=") {
		t.Fatalf("the in-text ad has a click token %s, though every beacon was refused", href)
	}
	// The server answers again; the tab hides and shows again, the ad in view.
	refuse.Store(false)
	eval[bool](t, br, `(document.dispatchEvent(new Event("visibilitychange")), true)`)
	if pollHref(t, br, tokenHref) == "" {
		t.Error("after a refused beacon the in-text ad never got its click token")
	}
}

// TestBeaconRefusedForGoodIsNotSentAgain: a beacon the server refuses for
// what it carries (a 403 for a page off the site's domains, a 400) is not
// sent again each time the tab shows: another would be refused alike.
// Only a 5xx or a 429 is tried again.
func TestBeaconRefusedForGoodIsNotSentAgain(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, countBeacons)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	asReaderAnswered(t, br, b, site, func(u string) (int64, []byte, bool) {
		return http.StatusForbidden, []byte(`{"error":{"code":"foreign_url","message":"not the site's"}}`), strings.HasPrefix(u, b.URL+"/v1/impression?")
	})
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	eval[int](t, br, settle)
	sent := eval[int](t, br, `window.beacons`)
	// The tab hides and shows again, three times, a second and more each.
	for range 3 {
		eval[bool](t, br, `(document.dispatchEvent(new Event("visibilitychange")), true)`)
		eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 1500))`)
	}
	if n := eval[int](t, br, `window.beacons`) - sent; n != 0 {
		t.Errorf("%d beacons refused with a 403 sent again as the tab showed again; want none", n)
	}
}
