package web

import (
	_ "embed"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var (
	// retryAfter logs, for each beacon, whether the Retry-After of the
	// refused one before it had passed.
	//
	//go:embed testdata/renew/retry_after.js
	retryAfter string
	// awayOnRefusal scrolls the page's links out of view as the first
	// refused beacon's answer comes.
	//
	//go:embed testdata/renew/away_on_refusal.js
	awayOnRefusal string
	// hiddenOnRefusal hides the tab as the first refused beacon's answer
	// comes; showTab() shows it again.
	//
	//go:embed testdata/renew/hidden_on_refusal.js
	hiddenOnRefusal string
)

// beaconView is a reader of its own, in a browser running scripts on
// every page, viewing page (readerPage when "") of a publisher on a
// backend of its own, whose requests in(b) answers, holds or loses; the
// view must match ads in the page.
func beaconView(t *testing.T, page string, in func(b *backend) interception, scripts ...string) (*browser, *backend, reader, readyResult) {
	t.Helper()
	br := newBrowser(t)
	b := startBackend(t)
	for _, js := range scripts {
		br.onEveryPage(t, js)
	}
	if page == "" {
		page = readerPage
	}
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	rd := asReaderWith(t, br, b, site, in(b))
	r := br.view(t, site+"/page.html")
	if r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	return br, b, rd, r
}

// beaconAnswer answers the impression beacons to b with status and body
// while refuse, asked once a beacon, says so.
func beaconAnswer(b *backend, status int64, body string, refuse func() bool) func(string) (int64, []byte, bool) {
	return func(u string) (int64, []byte, bool) {
		return status, []byte(body), strings.HasPrefix(u, b.URL+"/v1/impression?") && refuse()
	}
}

// TestRefusedBeaconTriesAgainInView: a beacon answered 503 (a server
// restarting) is sent again while its link stays in view, after a
// while, and again once more refused: the reader, who does not scroll
// nor leave the tab, gets the link's click token, and the click bills.
func TestRefusedBeaconTriesAgainInView(t *testing.T) {
	var refused atomic.Int64
	start := time.Now()
	br, b, rd, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answer: beaconAnswer(b, http.StatusServiceUnavailable, `{"error":"unavailable"}`, func() bool { return refused.Add(1) <= 2 })}
	}, countBeacons)
	rc := clickLikeAReader(t, br, b, rd, true)
	if !rc.Click.Billable {
		t.Errorf("a click on the ad after two refused beacons: %+v, want billable", rc.Click)
	}
	if n := len(rd.impressionsOf(b, rc.Click.AdID, start)); n != 1 {
		t.Errorf("%d impressions of the clicked ad, want 1", n)
	}
}

// TestLostBeaconAnswerCountsOnce: a beacon the server recorded whose
// answer was lost on the way (a mobile network dropping) is sent again;
// the link gets its token from the second, and the ad counts once.
func TestLostBeaconAnswerCountsOnce(t *testing.T) {
	var lost atomic.Int64
	start := time.Now()
	br, b, rd, _ := beaconView(t, "", func(b *backend) interception {
		return interception{lose: func(u string) bool {
			return strings.HasPrefix(u, b.URL+"/v1/impression?") && lost.Add(1) == 1
		}}
	})
	rc := clickLikeAReader(t, br, b, rd, true)
	if !rc.Click.Billable {
		t.Errorf("a click on the ad after a beacon's lost answer: %+v, want billable", rc.Click)
	}
	if lost.Load() < 2 {
		t.Errorf("%d impression beacons, want the lost one and another", lost.Load())
	}
	if n := len(rd.impressionsOf(b, rc.Click.AdID, start)); n != 1 {
		t.Errorf("%d impressions of the clicked ad, beacon sent twice; want 1", n)
	}
}

// TestRetryAfterIsWaited: a beacon answered 503 with a Retry-After is
// sent again no sooner than that, though the widget's own first wait is
// shorter. (A 429's own first wait is longer: see
// TestRateLimitHoldsThePagesBeacons.)
func TestRetryAfterIsWaited(t *testing.T) {
	var refused atomic.Int64
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answerHeader: [2]string{"Retry-After", "4"},
			answer: beaconAnswer(b, http.StatusServiceUnavailable, `{"error":"unavailable"}`, func() bool { return refused.Add(1) == 1 })}
	}, retryAfter)
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("after a beacon refused with a 503 the in-text ad never got its click token")
	}
	if log := eval[[]string](t, br, `window.beaconLog`); len(log) < 2 || log[1] != "waited" {
		t.Errorf("beacons %q: want the second once the 503's Retry-After had passed", log)
	}
}

// TestRateLimitHoldsThePagesBeacons: after a beacon answered 429, the
// beacon of another link seen meanwhile (a result the page rendered) is
// held too, not sent at once to a server over its limit: it goes once the
// 429's wait (its Retry-After, longer than the widget's own) has passed,
// in one request with the refused link's.
func TestRateLimitHoldsThePagesBeacons(t *testing.T) {
	t.Parallel() // waits out the widget's back-off, which takes no CPU
	var refused atomic.Int64
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answerHeader: [2]string{"Retry-After", "20"},
			answer: beaconAnswer(b, http.StatusTooManyRequests, `{"error":{"code":"rate_limited","message":"too many requests","param":"api_key","limit":"api_key_network","retry_after":20}}`,
				func() bool { return refused.Add(1) == 1 })}
	}, countBeacons, retryAfter)
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	evalCall[string](t, br, renderResult, "pixel 8")
	if pollWithin(t, br, `[document.getElementById('result'), document.querySelector('a.adlink-intext')].every(a => a && /[?&]ct=/.test(a.href)) && "both"`, 40*time.Second) == "" {
		t.Fatal("the in-text ad and the result rendered after the 429 never both got their click tokens")
	}
	log, ads := eval[[]string](t, br, `window.beaconLog`), eval[[]int](t, br, `window.beaconAds`)
	if len(log) != 2 || log[1] != "waited" || ads[1] != 2 {
		t.Errorf("beacons %q carrying %v ads: want a second, once the 429's Retry-After had passed, with both links", log, ads)
	}
}

// TestKeyBudgetRefusalIsTriedOnce: a beacon refused with a 429 for the
// key's whole budget (limit api_key), which the retries of every reader
// of the key would only keep spent, is sent again once, not more.
func TestKeyBudgetRefusalIsTriedOnce(t *testing.T) {
	t.Parallel() // waits out the widget's back-off, which takes no CPU
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answerHeader: [2]string{"Retry-After", "1"},
			answer: beaconAnswer(b, http.StatusTooManyRequests, `{"error":{"code":"rate_limited","message":"too many requests for this api_key","param":"api_key","limit":"api_key","retry_after":1}}`,
				func() bool { return true })}
	}, countBeacons)
	if pollWithin(t, br, `window.beaconsDone > 1 && "done"`, 30*time.Second) == "" {
		t.Fatalf("%d impression beacons answered; want the refused one and its retry", eval[int](t, br, `window.beaconsDone`))
	}
	// Longer than the widget's next wait after a second 429, were it to
	// try again.
	time.Sleep(33 * time.Second)
	if n := eval[int](t, br, `window.beacons`); n != 2 {
		t.Errorf("%d beacons refused for the key's whole budget; want 2, the first and one retry", n)
	}
}

// TestTimedOutBeaconIsTriedTwice: a beacon that gets no answer within
// the widget's 10 s (a server too loaded to answer) is sent again twice,
// not more: each try would add to that load for ten seconds.
func TestTimedOutBeaconIsTriedTwice(t *testing.T) {
	t.Parallel() // waits out the widget's back-off, which takes no CPU
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{hold: func(u string) <-chan struct{} {
			if strings.HasPrefix(u, b.URL+"/v1/impression?") {
				return never
			}
			return nil
		}}
	}, countBeacons)
	if pollWithin(t, br, `window.beaconsDone > 2 && "done"`, 50*time.Second) == "" {
		t.Fatalf("%d impression beacons timed out; want the first and two more", eval[int](t, br, `window.beaconsDone`))
	}
	// Longer than the widget's next wait, were it to try again.
	time.Sleep(9 * time.Second)
	if n := eval[int](t, br, `window.beacons`); n != 3 {
		t.Errorf("%d beacons sent of one that timed out; want 3, the first and two more", n)
	}
}

// TestBadBeaconIsNotTriedAgain: a beacon answered 400 is not sent again
// while its link stays in view: another would be refused alike.
func TestBadBeaconIsNotTriedAgain(t *testing.T) {
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answer: beaconAnswer(b, http.StatusBadRequest, `{"error":{"code":"invalid_parameter","message":"bad"}}`, func() bool { return true })}
	}, countBeacons)
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	sent := eval[int](t, br, `window.beacons`)
	// Twice as long as the widget's first wait after a refusal it tries again.
	eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 4000))`)
	if n := eval[int](t, br, `window.beacons`) - sent; n != 0 {
		t.Errorf("%d beacons refused with a 400 sent again; want none", n)
	}
}

// TestRefusedBeaconWaitsForItsLinkInView: a link whose beacon was refused
// and that left view at once is not reported again while out of view,
// however long (it gets no click token, though the server answers
// again); once back in view it is, and gets its token.
func TestRefusedBeaconWaitsForItsLinkInView(t *testing.T) {
	var refused atomic.Int64
	br, _, _, r := beaconView(t, "", func(b *backend) interception {
		return interception{answer: beaconAnswer(b, http.StatusServiceUnavailable, `{"error":"unavailable"}`, func() bool { return refused.Add(1) == 1 })}
	}, countBeacons, awayOnRefusal)
	if r.Links < 2 {
		t.Fatalf("first view: %+v, want ads matched in the page, one far below", r)
	}
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	// Twice as long as the widget's first wait after a refusal it tries again.
	eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 4000))`)
	if href := eval[string](t, br, firstIntextHref); strings.Contains(href, "ct=") {
		t.Errorf("the in-text ad scrolled out of view after its refusal got a click token %s: reported out of view", href)
	}
	eval[bool](t, br, `(scrollTo(0, 0), true)`)
	if pollHref(t, br, tokenHref) == "" {
		t.Error("the ad refused, out of view and back in it, never got its click token")
	}
}

// TestRefusedBeaconWaitsForItsTabShown: a link whose beacon was refused
// as its tab was hidden is not reported again while the tab stays
// hidden, however long; once the tab shows it is, and gets its token.
func TestRefusedBeaconWaitsForItsTabShown(t *testing.T) {
	var refused atomic.Int64
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answer: beaconAnswer(b, http.StatusServiceUnavailable, `{"error":"unavailable"}`, func() bool { return refused.Add(1) == 1 })}
	}, countBeacons, hiddenOnRefusal)
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	sent := eval[int](t, br, `window.beacons`)
	// Twice as long as the widget's first wait after a refusal it tries again.
	eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 4000))`)
	if n := eval[int](t, br, `window.beacons`) - sent; n != 0 {
		t.Errorf("%d beacons sent again while the tab was hidden; want none", n)
	}
	eval[bool](t, br, `window.showTab()`)
	if pollHref(t, br, tokenHref) == "" {
		t.Error("the ad refused while its tab was hidden never got its click token once the tab showed")
	}
}

// TestRetryAfterIsWaitedUnderALayer: on a page whose empty toast layer
// has IntersectionObserver v2 say no link is to be seen, so that the
// widget judges its links in view again every few seconds, and sooner
// once the reader scrolls, a beacon answered 503 with a Retry-After is
// sent again no sooner than that: those checks do not send it again.
func TestRetryAfterIsWaitedUnderALayer(t *testing.T) {
	page := `<style>#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` + readerPage + `<div id="toaster"></div>`
	var refused atomic.Int64
	br, _, _, _ := beaconView(t, page, func(b *backend) interception {
		return interception{answerHeader: [2]string{"Retry-After", "8"},
			answer: beaconAnswer(b, http.StatusServiceUnavailable, `{"error":"unavailable"}`, func() bool { return refused.Add(1) == 1 })}
	}, countBeacons, retryAfter)
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	// The reader scrolls a little: the links in view are judged again
	// within a second.
	eval[bool](t, br, `(scrollBy(0, 1), true)`)
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("after a beacon refused with a 503 the in-text ad never got its click token")
	}
	if log := eval[[]string](t, br, `window.beaconLog`); len(log) < 2 || log[1] != "waited" {
		t.Errorf("beacons %q: want the second once the 503's Retry-After had passed", log)
	}
}

// renderResult, called with a query, renders the first ad of the page's
// search for it into the link #result at the top of the page, made the
// first time, has the widget watch it and returns the ad's id: a
// single-page app showing a search's results.
const renderResult = `(q) => adlink.search(q).then(body => {
	let a = document.getElementById('result');
	if (!a) {
		a = document.createElement('a');
		a.id = 'result';
		a.textContent = 'the first result';
		document.body.prepend(a);
	}
	a.href = body.link[0].ad;
	adlink.watch(document.body);
	return new URL(a.href).searchParams.get('adId');
})`

// TestReusedLinkGoesBeforeItsRetry: a single-page app that renders the
// next search's result into the link whose beacon the server refused
// (a 502 asking for a minute, from a proxy whose server restarts) has the
// widget report it for the ad it now goes to at once, not after the
// refused beacon's wait: that wait is its ad's. (A 429 or 503 holds every
// beacon of the page: see TestRateLimitHoldsThePagesBeacons.)
func TestReusedLinkGoesBeforeItsRetry(t *testing.T) {
	var refuse atomic.Bool
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answerHeader: [2]string{"Retry-After", "60"},
			answer: beaconAnswer(b, http.StatusBadGateway, `{"error":"bad gateway"}`, func() bool { return refuse.CompareAndSwap(true, false) })}
	}, countBeacons)
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("the in-text ad never got its click token")
	}
	sent := eval[int](t, br, `window.beacons`)
	refuse.Store(true)
	first := evalCall[string](t, br, renderResult, "iphone 15")
	if pollHref(t, br, `window.beaconsDone > `+strconv.Itoa(sent)+` && "done"`) == "" {
		t.Fatalf("the result for %s was never reported", first)
	}
	if refuse.Load() {
		t.Fatal("the result's beacon was not the one refused")
	}
	second := evalCall[string](t, br, renderResult, "pixel 8")
	if second == first || second == "" {
		t.Fatalf("the second search's first result is %q, the first's %q: the test needs two ads", second, first)
	}
	if pollHref(t, br, `(() => {
  const a = document.getElementById('result');
  return a && /[?&]ct=/.test(a.href) && new URL(a.href).searchParams.get('adId') === `+strconv.Quote(second)+` ? a.href : false;
})()`) == "" {
		t.Errorf("the link rendered anew for %s never got its click token before the refused beacon's wait ended: %s", second, eval[string](t, br, `document.getElementById('result').href`))
	}
}
