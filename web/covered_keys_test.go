package web

import (
	"regexp"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/config"
	"github.com/chromedp/chromedp"
)

// toastPage is a publisher's page whose empty toast layer has
// IntersectionObserver v2 say no link is to be seen, so the widget judges
// its links itself, again on a back-off; a button comes before the ad's
// paragraph in the tab order.
const toastPage = `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
	`<article><button id="before">Teilen</button><p id="wrap">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende.</p></article><div id="toaster"></div>`

// overLink lays an opaque box over the link of #wrap, above the toast
// layer: what v2, already saying the link is not to be seen, tells
// nothing of.
const overLink = `(() => { const r = document.querySelector("#wrap a.adlink-intext").getBoundingClientRect(), d = document.createElement("div");
	d.style.cssText = "position:fixed;z-index:10000;background:#fff;left:" + (r.left - 4) + "px;top:" + (r.top - 4) + "px;width:" + (r.width + 8) + "px;height:" + (r.height + 8) + "px";
	document.body.append(d); return true; })()`

// TestCoveredLinkByKeyboardDoesNotBill: a cover comes over a link v2
// already calls not to be seen, between two of the widget's looks (up to
// eight seconds apart), and the reader activates the link from the
// keyboard (Tab to it, Enter) before the next: the link gives up its
// click token as it gets the focus, or as the key comes when it had the
// focus before the cover, and the click bills nothing. With no cover,
// the same keys bill.
func TestCoveredLinkByKeyboardDoesNotBill(t *testing.T) {
	b := startBackend(t)
	for _, c := range []struct {
		name string
		// cover is when the cover comes: before the reader's Tab, after
		// it (the link focused), or never.
		cover string
	}{
		{name: "cover then Tab", cover: "before Tab"},
		{name: "Tab then cover", cover: "after Tab"},
		{name: "no cover"},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := newBrowser(t)
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, toastPage)})
			rd := asReader(t, br, b, site)
			start := time.Now()
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
				t.Fatalf("%+v, want the ad matched in the page", r)
			}
			const link = `document.querySelector("#wrap a.adlink-intext")`
			href := pollHref(t, br, `(() => { const a = `+link+`; return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`)
			if href == "" {
				t.Fatalf("the link in view never got its click token: %s", eval[string](t, br, link+`.href`))
			}
			ad := query(t, href).Get("adId")
			time.Sleep(config.Default().ClickMinDelay) // the token bills by now
			eval[bool](t, br, link+`.removeAttribute("target"), document.getElementById("before").focus(), true`)
			if c.cover == "before Tab" {
				eval[bool](t, br, overLink)
			}
			br.do(t, chromedp.KeyEvent("\t"))
			if !eval[bool](t, br, `document.activeElement === `+link) {
				t.Fatalf("Tab focused %s, not the link", eval[string](t, br, `document.activeElement.outerHTML`))
			}
			// The focus takes the proof of a link covered by then, before
			// any key: a reader's assistive tool may activate the link
			// without one.
			if got := eval[string](t, br, link+`.href`); c.cover == "before Tab" && regexp.MustCompile(`[?&](ct|sig)=`).MatchString(got) {
				t.Errorf("the covered link focused keeps its proof: %s", got)
			}
			if c.cover == "after Tab" {
				eval[bool](t, br, overLink)
			}
			br.do(t, chromedp.KeyEvent("\r"))
			rd.landed(t)
			if logged, want := rd.clicksOn(b, ad, start), c.cover == ""; len(logged) != 1 || logged[0].Billable != want {
				t.Errorf("clicks on the ad: %+v, want one, billable %v", logged, want)
			}
		})
	}
}

// TestFramedLinkUnderPointerTrustsTheBrowser: in a frame, a link under
// the reader's pointer keeps no proof once the parent page lays a layer
// clicks fall through over the frame, though the pointer was on it first
// (what v2 says stands in a frame: its document cannot see the parent's
// cover), and the reader's click through the layer bills nothing; with
// no layer, the pointer on the link keeps its proof and the click bills.
func TestFramedLinkUnderPointerTrustsTheBrowser(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}</style>` +
		`<article><p id="wrap">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende.</p></article>`
	site := publisher(t, map[string]string{
		"/page.html":  publisherPage("de-DE", b.URL, page),
		"/frame.html": `<!doctype html><body style="margin:0"><iframe src="/page.html" style="border:0;width:800px;height:600px"></iframe>`,
	})
	rd := asReader(t, br, b, site)
	const link = `document.querySelector("iframe").contentDocument?.querySelector("#wrap a.adlink-intext")`
	const proof = `(() => { const a = ` + link + `; return a && /[?&](ct|sig)=/.test(a.href) ? a.href : false; })()`
	proofRe := regexp.MustCompile(`[?&](ct|sig)=`)
	start := time.Now()
	// The layer first: a second billable click on the ad would be a repeat.
	for i, covered := range []bool{true, false} {
		br.do(t, chromedp.Navigate(site+"/frame.html"))
		href := pollHref(t, br, proof)
		if href == "" {
			t.Fatalf("view %d: the link in the frame never got its proof: %s", i, eval[string](t, br, `(() => { const a = `+link+`; return a ? a.href : "no link"; })()`))
		}
		time.Sleep(config.Default().ClickMinDelay) // a token bills by now
		// The click leaves the frame for the window, as a navigation of a
		// reader's: one of the frame is no navigation the server bills.
		xy := eval[[2]float64](t, br, `(() => { const a = `+link+`; a.target = "_top"; const r = a.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
		br.do(t, chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]))
		for deadline := time.Now().Add(10 * time.Second); !eval[bool](t, br, link+`.matches(":hover")`); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("view %d: the pointer is not on the link", i)
			}
		}
		if covered {
			eval[bool](t, br, `document.body.append(Object.assign(document.createElement("div"), {style: "position:fixed;left:0;top:0;width:800px;height:300px;background:#fff;pointer-events:none"})), true`)
		}
		if covered {
			// v2 tells within 100 ms of a frame drawn: a loaded machine
			// may draw it later.
			if pollHref(t, br, `(() => { const a = `+link+`; return a && !/[?&](ct|sig)=/.test(a.href) ? a.href : false; })()`) == "" {
				t.Errorf("view %d: the covered link under the pointer keeps its proof: %s", i, eval[string](t, br, link+`.href`))
			}
		} else {
			time.Sleep(time.Second) // v2 would tell within 100 ms
			if got := eval[string](t, br, link+`.href`); !proofRe.MatchString(got) {
				t.Errorf("view %d: the link under the pointer lost its proof: %s", i, got)
			}
		}
		br.do(t, chromedp.MouseClickXY(xy[0], xy[1]))
		select {
		case <-rd.left:
		case <-time.After(20 * time.Second):
			t.Fatalf("view %d: the click never left for the landing page", i)
		}
	}
	if logged := rd.clicksOn(b, "", start); len(logged) != 2 || logged[0].Billable || !logged[1].Billable {
		t.Errorf("clicks: %+v, want the one through the layer not billable, then the one without it billable", logged)
	}
}
