package web

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/webkit"
)

// iPhoneSafari is the user agent of Safari on an iPhone; every browser on
// iOS is WebKit.
const iPhoneSafari = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"

// TestWebKitReader: in WebKit, as Safari on an iPhone, a page the server
// has not seen gets its first ads from the module (JavaScriptCore's
// WebAssembly), a reader's click on one after its impression bills, and
// so does a click on a link of the server's answer; the publisher's
// dashboard then shows both. WebKit sends no
// Sec-Fetch-User, so what bills there is Sec-Fetch-Mode and -Dest alone.
func TestWebKitReader(t *testing.T) {
	webkit.Need(t)
	// A server of its own: its clicks are the only ones from this address.
	b, err := newBackend(backendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	br := webkit.Start(t, iPhoneSafari)

	start := time.Now()
	br.Navigate(t, b.firstView("article.html"))
	var r readyResult
	br.Eval(t, widgetReady, &r)
	if r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view in WebKit: %+v, want ads the page matched", r)
	}
	// The first in-text ad gets its click token once a reader could see
	// it; a reader is no faster than the least delay after that.
	var href string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var v json.RawMessage
		br.Eval(t, tokenHref, &v)
		if json.Unmarshal(v, &href) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first in-text ad never got its click token in WebKit")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(config.Default().ClickMinDelay)
	var sel string
	br.Eval(t, clickFirst, &sel)
	br.Click(t, sel)
	c := waitClick(t, b, href, start)
	if !c.Billable || c.Type != "intext" || c.UserAgent != iPhoneSafari {
		t.Errorf("a WebKit reader's click on an in-page ad after its impression: %+v, want billable", c)
	}
	var imps []clicks.Impression
	b.imps.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(i clicks.Impression) error {
		if i.AdID == c.AdID {
			imps = append(imps, i)
		}
		return nil
	})
	if len(imps) != 1 || imps[0].UserAgent != iPhoneSafari {
		t.Errorf("impressions of the clicked ad: %+v, want 1 from WebKit", imps)
	}

	// A link of the server's answer, signed with its decision.
	var answer struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?q=iphone+15&api_key=demo&site_id=demo"), &answer); err != nil || len(answer.Link) == 0 {
		t.Fatalf("search: %v %+v", err, answer)
	}
	start = time.Now()
	br.Navigate(t, b.URL+"/demo/index.html?server-link=webkit")
	var placed bool
	br.Eval(t, jsCall(placeLink, answer.Link[0].Ad), &placed)
	br.Click(t, "#server-ad")
	if c := waitClick(t, b, answer.Link[0].Ad, start); !c.Billable || c.Type != "search" {
		t.Errorf("a WebKit reader's click on a server answer's link: %+v, want billable", c)
	}

	// The publisher reads them in the dashboard, in Safari too.
	br.Navigate(t, b.URL+"/dashboard")
	var state string
	br.Eval(t, jsCall(dashSettled), &state)
	br.Type(t, "#token", demoPartnerReport)
	br.Eval(t, jsCall(dashPress, "go", jsSource(dashSettled)), &state)
	var v dashView
	br.Eval(t, jsCall(dashViewScript), &v)
	if state != "ready" || v.Account == "" || len(v.Kpis) < 3 || v.Kpis[1] != "2" || v.Kpis[2] != "2" || v.Days == 0 {
		t.Errorf("the dashboard in WebKit: state %q, %+v, want ready with the 2 clicks, both billable", state, v)
	}
}

// waitClick waits until the server has recorded the one click on href
// made since start, and returns it.
func waitClick(tb testing.TB, b *backend, href string, start time.Time) clicks.Click {
	tb.Helper()
	return waitClicks(tb, b, href, start, 1)[0]
}

// waitClicks waits until the server has recorded n clicks on href's ad
// made since start, and returns them.
func waitClicks(tb testing.TB, b *backend, href string, start time.Time, n int) []clicks.Click {
	tb.Helper()
	u, err := url.Parse(href)
	if err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var logged []clicks.Click
		b.clicks.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(c clicks.Click) error {
			if c.AdID == u.Query().Get("adId") {
				logged = append(logged, c)
			}
			return nil
		})
		if len(logged) > n {
			tb.Fatalf("clicks recorded for %s: %+v, want %d", href, logged, n)
		}
		if len(logged) == n {
			return logged
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d clicks recorded for %s, want %d", len(logged), href, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebKitCoveredLinkDoesNotBill: WebKit has no IntersectionObserver
// v2, so the widget judges an ad link as the reader's pointer comes onto
// it. A signed link of the server's answer under an opaque box that clicks
// fall through (pointer-events: none) goes without its signature as the
// reader's click comes through the box, and bills nothing; without the
// box, the same click bills.
func TestWebKitCoveredLinkDoesNotBill(t *testing.T) {
	webkit.Need(t)
	// A server of its own: its clicks are the only ones from this address.
	b, err := newBackend(backendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	br := webkit.Start(t, iPhoneSafari)
	var answer struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?q=iphone+15&api_key=demo&site_id=demo"), &answer); err != nil || len(answer.Link) == 0 {
		t.Fatalf("search: %v %+v", err, answer)
	}
	href := answer.Link[0].Ad
	const cover = `(() => { const r = document.getElementById("server-ad").getBoundingClientRect(), c = document.createElement("div");
	c.style.cssText = "position:absolute;background:#fff;pointer-events:none;left:" + r.left + "px;top:" + r.top + "px;width:" + r.width + "px;height:" + r.height + "px";
	document.body.append(c); return true; })()`
	// The box first: a second billable click on the ad would be a repeat.
	start := time.Now()
	for i, covered := range []bool{true, false} {
		br.Navigate(t, b.firstView("article.html"))
		var r readyResult
		br.Eval(t, widgetReady, &r)
		var ok bool
		br.Eval(t, jsCall(placeLink, href), &ok)
		if covered {
			br.Eval(t, cover, &ok)
		}
		var n int
		br.Eval(t, `adlink.watch(document.getElementById("server-ad"))`, &n)
		if n != 1 {
			t.Fatalf("adlink.watch took %d links, want the one", n)
		}
		br.Click(t, "#server-ad")
		c := waitClicks(t, b, href, start, i+1)[i]
		if covered && (c.Billable || c.Reason != clicks.ReasonUnsigned) {
			t.Errorf("a WebKit reader's click through the box onto the link: %+v, want unsigned, not billable", c)
		}
		if !covered && !c.Billable {
			t.Errorf("a WebKit reader's click on the link uncovered: %+v, want billable", c)
		}
	}
}
