package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
)

// TestHeldBeaconsGoAsTheReaderLeaves: the links of a page whose beacons a
// 429 holds (the one refused and another seen meanwhile) are reported as
// the reader leaves the page before the hold ends, each counted once.
// Back on the page, which the back-forward cache kept, they have their
// click tokens from that beacon's answer, and are not reported again
// once the hold has passed.
func TestHeldBeaconsGoAsTheReaderLeaves(t *testing.T) {
	t.Parallel() // waits out the widget's hold, which takes no CPU
	var refused atomic.Int64
	var refusedAt atomic.Int64
	start := time.Now()
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, countBeacons)
	br.onEveryPage(t, `addEventListener("pageshow", e => { if (e.persisted) window.restored = true; })`)
	// A page the back-forward cache can keep: one served no-store it
	// does not.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, publisherPage("de-DE", b.URL, readerPage))
	}))
	srv.Listener.Close()
	srv.Listener = freshPort(t)
	srv.Start()
	t.Cleanup(srv.Close)
	rd := asReaderWith(t, br, b, srv.URL, interception{answerHeader: [2]string{"Retry-After", "20"},
		answer: beaconAnswer(b, http.StatusTooManyRequests, `{"error":{"code":"rate_limited","message":"too many requests","param":"api_key","limit":"api_key_network","retry_after":20}}`,
			func() bool {
				if refused.Add(1) == 1 {
					refusedAt.Store(time.Now().UnixNano())
					return true
				}
				return false
			})})
	if r := br.view(t, srv.URL+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	intext := query(t, eval[string](t, br, firstIntextHref)).Get("adId")
	result := evalCall[string](t, br, renderResult, "pixel 8")
	if result == intext {
		t.Fatalf("the result is the in-text ad %s: the test needs two ads", intext)
	}
	// Longer than a link takes to be seen: the result waits in the queue.
	eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 2500))`)
	if n := eval[int](t, br, `window.beacons`); n != 1 {
		t.Fatalf("%d beacons before the reader left, want the refused one only: the hold let one through", n)
	}
	br.do(t, chromedp.Navigate("about:blank"))
	var imps []string
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if imps = rd.impressionsOf(b, "", start); slices.Contains(imps, intext) && slices.Contains(imps, result) {
			break
		}
	}
	if !slices.Contains(imps, intext) || !slices.Contains(imps, result) {
		t.Fatalf("impressions %v once the reader left, want the held %s and %s", imps, intext, result)
	}
	// history.back: chromedp's NavigateBack waits for a load that a page
	// the cache kept does not have. Called after the evaluation answers,
	// which a navigation under way would fail.
	eval[bool](t, br, `(setTimeout(() => history.back(), 0), true)`)
	// Asked again until it answers: a page coming back from the cache
	// has no load a poll would wait for, and fails an evaluation while
	// it comes.
	back := false
	for end := time.Now().Add(20 * time.Second); !back && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(br.ctx, 5*time.Second)
		back, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`location.pathname === "/page.html" && window.beaconsDone === window.beacons`))
		cancel()
	}
	if !back || !eval[bool](t, br, `window.restored === true`) {
		t.Fatalf("back on the page: %s, want it from the back-forward cache, its beacons answered", eval[string](t, br, `JSON.stringify([location.href, window.restored, window.beacons, window.beaconsDone])`))
	}
	for _, link := range []string{`document.getElementById('result')`, `document.querySelector('a.adlink-intext')`} {
		if href := eval[string](t, br, link+`.href`); !strings.Contains(href, "ct=") {
			t.Errorf("back on the page, %s has no click token: %s", link, href)
		}
	}
	// Past the hold (the 429's Retry-After, longer than the widget's own
	// first wait), in the page's time.
	wait := time.Until(time.Unix(0, refusedAt.Load()).Add(22 * time.Second))
	eval[int](t, br, `new Promise(r => setTimeout(() => r(1), `+strconv.FormatInt(max(wait.Milliseconds(), 0), 10)+`))`)
	if n := eval[int](t, br, `window.beacons`); n != 2 {
		t.Errorf("%d beacons, want 2: the refused one and the one sent as the reader left, none once the hold passed", n)
	}
	imps = rd.impressionsOf(b, "", start)
	for _, ad := range []string{intext, result} {
		if n := strings.Count(" "+strings.Join(imps, " ")+" ", " "+ad+" "); n != 1 {
			t.Errorf("%d impressions of %s (all: %v), want 1", n, ad, imps)
		}
	}
}

// TestLinkSeenDuringAHoldHasItsOwnTries: a link seen while a 429 for the
// key's whole budget (limit api_key, tried again once) holds the page's
// beacons goes with the refused link's retry; refused again, it is tried
// once more on its own, and gets its click token: the refused link's
// tries are not its.
func TestLinkSeenDuringAHoldHasItsOwnTries(t *testing.T) {
	t.Parallel() // waits out the widget's back-off, which takes no CPU
	var refused atomic.Int64
	br, _, _, _ := beaconView(t, "", func(b *backend) interception {
		return interception{answerHeader: [2]string{"Retry-After", "1"},
			answer: beaconAnswer(b, http.StatusTooManyRequests, `{"error":{"code":"rate_limited","message":"too many requests for this api_key","param":"api_key","limit":"api_key","retry_after":1}}`,
				func() bool { return refused.Add(1) <= 2 })}
	}, countBeacons, retryAfter)
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	evalCall[string](t, br, renderResult, "pixel 8")
	if pollWithin(t, br, `(a => a && /[?&]ct=/.test(a.href) && "token")(document.getElementById('result'))`, 60*time.Second) == "" {
		t.Fatalf("the result seen during the key's 429 never got its click token; beacons carried %v ads", eval[[]int](t, br, `window.beaconAds`))
	}
	if ads := eval[[]int](t, br, `window.beaconAds`); !slices.Equal(ads, []int{1, 2, 1}) {
		t.Errorf("beacons carried %v ads, want [1 2 1]: the refused link, it with the result, the result alone", ads)
	}
}

// TestLostBeaconAnswerCountsOnceAcrossAWindow: a beacon the server
// counted less than a second before its impression window's end, whose
// answer was lost on the way, is sent again in the next window: it
// counts in the first one's (its age says how long after it came), not
// a second time.
func TestLostBeaconAnswerCountsOnceAcrossAWindow(t *testing.T) {
	// The server's clock, moved as the first beacon goes so that it
	// comes 800 ms before a window's end.
	ahead := new(atomic.Int64)
	b, err := newBackend(backendOptions{now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t)
	br.onEveryPage(t, countBeacons)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	var sent, lost atomic.Int64
	window := config.Default().ImpressionWindow
	rd := asReaderWith(t, br, b, site, interception{
		hold: func(u string) <-chan struct{} {
			if strings.HasPrefix(u, b.URL+"/v1/impression?") && sent.Add(1) == 1 {
				now := time.Now()
				end := now.Truncate(window).Add(window)
				if end.Sub(now) < time.Second {
					end = end.Add(window)
				}
				ahead.Store(int64(end.Add(-800 * time.Millisecond).Sub(now)))
			}
			return nil
		},
		lose: func(u string) bool {
			return strings.HasPrefix(u, b.URL+"/v1/impression?") && lost.Add(1) == 1
		},
	})
	start := time.Now()
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	href := pollHref(t, br, tokenHref)
	if href == "" {
		t.Fatal("the in-text ad never got its click token after its beacon's lost answer")
	}
	if n := eval[int](t, br, `window.beacons`); n < 2 {
		t.Fatalf("%d impression beacons, want the lost one and another", n)
	}
	ad := query(t, href).Get("adId")
	var imps []clicks.Impression
	b.imps.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(window+time.Minute), func(i clicks.Impression) error {
		if i.AdID == ad && i.IP == rd.ip {
			imps = append(imps, i)
		}
		return nil
	})
	if len(imps) != 1 {
		t.Errorf("%d impressions of %s, its beacon sent again across a window's end; want 1", len(imps), ad)
	}
}

// awayBeforeAnswer scrolls the page's links out of view as the first
// impression beacon goes, and has the page see each beacon's answer half
// a second late: the widget learns its links left view before it learns
// the first was refused.
const awayBeforeAnswer = `(() => {
	const f = window.fetch;
	let done = false;
	window.fetch = function (u) {
		const p = f.apply(this, arguments);
		if (!String(u).includes('/v1/impression')) return p;
		if (!done) {
			done = true;
			scrollTo(0, document.body.scrollHeight);
		}
		return p.then(r => new Promise(ok => setTimeout(() => ok(r), 500)));
	};
})()`

// TestLinkOutOfViewBeforeItsRefusalIsReportedBackInView: a link that
// left view while its beacon was on its way, which the server refused,
// is reported once it is back in view (TestRefusedBeaconWaitsForItsLinkInView
// with the refusal known only after the link left).
func TestLinkOutOfViewBeforeItsRefusalIsReportedBackInView(t *testing.T) {
	var refused atomic.Int64
	br, _, _, r := beaconView(t, "", func(b *backend) interception {
		return interception{answer: beaconAnswer(b, http.StatusServiceUnavailable, `{"error":"unavailable"}`, func() bool { return refused.Add(1) == 1 })}
	}, countBeacons, awayBeforeAnswer)
	if r.Links < 2 {
		t.Fatalf("first view: %+v, want ads matched in the page, one far below", r)
	}
	if pollHref(t, br, `window.beaconsDone > 0 && "done"`) == "" {
		t.Fatal("no impression beacon was answered")
	}
	// Twice as long as the widget's first wait after a refusal it tries again.
	eval[int](t, br, `new Promise(r => setTimeout(() => r(1), 4000))`)
	eval[bool](t, br, `(scrollTo(0, 0), true)`)
	if pollHref(t, br, tokenHref) == "" {
		t.Error("the ad refused after it left view never got its click token back in view")
	}
}
