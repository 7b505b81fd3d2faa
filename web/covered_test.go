package web

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/chromedp/chromedp"
)

// coveredPage is a publisher's page whose first paragraph, with an ad,
// lies under cover (markup laid over it, a sticky header), and whose
// second, with another ad, the reader sees: a little faint, at opacity .9,
// which IntersectionObserver v2 takes for not to be seen.
func coveredPage(cover string) string {
	return `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}</style>` + cover +
		`<article><div id="under" style="position:relative"><p>Das neue Apple iPhone 15 im Test.</p>` +
		`<div class="c" style="position:absolute;inset:-4px"></div></div>` +
		`<p id="seen" style="margin-top:60px;opacity:.9">Und das Google Pixel 8 daneben.</p>` +
		`<p style="margin-bottom:3000px">Ende.</p></article>`
}

// coveredLink is the in-text link under cover: its href and its ad.
const coveredLink = `(() => { const a = document.querySelector("#under a.adlink-intext"); return a ? a.href : ""; })()`

// seenToken is the link in view's href once its click token came.
const seenToken = `(() => { const a = document.querySelector("#seen a.adlink-intext"); return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`

// stickyHeader is a page's sticky header, the page scrolled for it to lie
// over the covered paragraph.
const stickyHeader = `<header style="position:sticky;top:0;height:120px;background:#fff;z-index:1">Kopf</header>` +
	`<script>addEventListener("DOMContentLoaded", () => scrollTo(0, document.getElementById("under").offsetTop - 40))</script>`

// shadowCover lays an opaque box in an open shadow root over the covered
// paragraph; its host paints nothing of its own and lets clicks through.
const shadowCover = `<style>#under .c{pointer-events:none}</style><script>addEventListener("DOMContentLoaded", () =>
	document.querySelector("#under .c").attachShadow({mode: "open"}).innerHTML = '<div style="position:absolute;inset:0;background:#fff"></div>')</script>`

// shadowLayer is a custom element whose open shadow root holds an opaque
// box, fixed over the top of the window (the covered paragraph), that
// lets clicks through itself: the page's style sheets do not reach into
// a shadow root. The paragraph's own box over the link is gone. Nested
// puts it in a second custom element, inside the
// first one's shadow root.
func shadowLayer(nested bool) string {
	const box = `<div style="position:fixed;left:0;top:0;right:0;height:60px;background:#fff;pointer-events:none"></div>`
	inner := `'` + box + `'`
	if nested {
		inner = `'<x-inner></x-inner>'; h.shadowRoot.firstChild.attachShadow({mode: "open"}).innerHTML = '` + box + `'`
	}
	return `<style>#under .c{display:none}</style><script>addEventListener("DOMContentLoaded", () => { const h = document.body.appendChild(document.createElement("x-consent"));
	h.attachShadow({mode: "open"}).innerHTML = ` + inner + ` })</script>`
}

// afterCover is the body's ::after, an opaque box fixed over the top of
// the window (the covered paragraph), clicks falling through it; the
// paragraph's own box over the link is gone.
const afterCover = `<style>#under .c{display:none}body::after{content:"";position:fixed;left:0;top:0;right:0;height:60px;background:#fff;pointer-events:none}</style>`

// afterInset is afterCover painted by an inset shadow alone, moved
// down by the box's height.
const afterInset = `<style>#under .c{display:none}body::after{content:"";position:fixed;left:0;top:0;right:0;height:60px;box-shadow:inset 0 60px 0 0 #fff;pointer-events:none}</style>`

// importantCover is a comment's opaque box over the ad that lets clicks
// through by a rule marked !important, more specific than one for every
// element.
const importantCover = `<style>#under .c{background:#fff;pointer-events:none!important}</style>`

// inlineCover is an opaque box fixed over the top of the window (the
// covered paragraph) that lets clicks through by its own style
// attribute, marked !important; the paragraph's own box over the link
// is gone.
const inlineCover = `<style>#under .c{display:none}</style>` +
	`<div id="lid" style="position:fixed;z-index:1;left:0;top:0;right:0;height:60px;background:#fff;pointer-events:none!important"></div>`

// hostCover is a custom element fixed over the top of the window (the
// covered paragraph), opaque, that lets clicks through by a rule of its
// shadow root for its host marked !important, which beats the
// document's rules.
const hostCover = `<style>#under .c{display:none}</style><script>addEventListener("DOMContentLoaded", () => document.body.appendChild(document.createElement("x-lid")).attachShadow({mode: "open"}).innerHTML =
	'<style>:host{position:fixed;left:0;top:0;right:0;height:60px;background:#fff;pointer-events:none!important}</style>')</script>`

// slottedCover is an opaque box fixed over the top of the window (the
// covered paragraph), slotted in a custom element whose shadow root lets
// clicks through it by a rule marked !important, which beats the
// document's rules.
const slottedCover = `<style>#under .c{display:none}</style><script>addEventListener("DOMContentLoaded", () => { const h = document.body.appendChild(document.createElement("x-lid"));
	h.innerHTML = '<div style="position:fixed;z-index:1;left:0;top:0;right:0;height:60px;background:#fff"></div>';
	h.attachShadow({mode: "open"}).innerHTML = '<style>::slotted(*){pointer-events:none!important}</style><slot></slot>' })</script>`

// TestCoveredLinkGetsNoImpression: an in-text ad the reader cannot see
// because something is painted over it reports no impression and gets no
// click token, and a reader's click that reaches it all the same (through
// a cover clicks fall through, pointer-events: none, or Enter on the
// focused link under a sticky header) does not bill. The ad beside it,
// in view (at opacity .9), gets its impression.
func TestCoveredLinkGetsNoImpression(t *testing.T) {
	b := startBackend(t)
	for _, c := range []struct {
		name, cover string
		// keyboard has the reader press Enter on the focused link, as a
		// click lands on the cover; v1 plays a browser without
		// IntersectionObserver v2 (Firefox, Safari).
		keyboard, v1 bool
		// hover has the reader's pointer rest on the cover, over the link,
		// before the click.
		hover bool
	}{
		// A comment's opaque box over the ad, which clicks go through.
		{name: "pointer-events none", cover: `<style>#under .c{background:#fff;pointer-events:none}</style>`},
		// The same, on a page whose links fade under the pointer, which
		// rests on the comment's box a while.
		{name: "pointer-events none hovered", hover: true, cover: `<style>#under .c{background:#fff;pointer-events:none}a:hover{opacity:.8}</style>`},
		// A comment's text coloured as the page, on the page's colour.
		{name: "same colour text", cover: `<style>#under .c{background:#fff;color:#fff;font-size:30px;pointer-events:none}</style>` +
			`<script>addEventListener("DOMContentLoaded", () => document.querySelector("#under .c").textContent = "Erster! ".repeat(20))</script>`},
		// Blocks of text in no colour, over the ad, their shadow in the
		// page's colour: what paints is the shadow.
		{name: "text shadow", cover: `<style>#under .c{color:transparent;text-shadow:0 0 0 #fff;font-size:60px;line-height:1;overflow:hidden;pointer-events:none}</style>` +
			`<script>addEventListener("DOMContentLoaded", () => document.querySelector("#under .c").textContent = "█".repeat(40))</script>`},
		// A box clicks fall through over the left 60% of the ad: most of it.
		{name: "most of it", cover: `<style>#under .c{pointer-events:none}</style><script>const t = setInterval(() => { const a = document.querySelector("#under a.adlink-intext"); if (!a) return; clearInterval(t);
			const r = a.getBoundingClientRect(), c = document.createElement("div");
			c.style.cssText = "position:absolute;background:#fff;pointer-events:none;left:" + (r.left - 4) + "px;top:" + (r.top - 4) + "px;width:" + (r.width * .6 + 4) + "px;height:" + (r.height + 8) + "px";
			document.body.append(c); }, 5)</script>`},
		// A custom element's box in its shadow root (a consent banner's),
		// clicks falling through: the document finds the host, which
		// itself paints nothing.
		{name: "shadow root", cover: shadowCover},
		// The page's sticky header, scrolled over the ad's paragraph.
		{name: "sticky header", keyboard: true, cover: stickyHeader},
		// Without v2, what is painted over most of the link tells: a
		// header, a box that takes the clicks.
		{name: "sticky header without v2", keyboard: true, v1: true, cover: stickyHeader},
		{name: "opaque box without v2", keyboard: true, v1: true, cover: `<style>#under .c{background:#fff}</style>`},
		// One clicks fall through is found there too, all the page's
		// elements taking the pointer while the widget looks.
		{name: "pointer-events none without v2", v1: true, cover: `<style>#under .c{background:#fff;pointer-events:none}</style>`},
		{name: "shadow root without v2", v1: true, cover: shadowCover},
		// An opaque box in a custom element's shadow root that itself
		// lets clicks through, in one shadow root or two.
		{name: "shadow root box", cover: shadowLayer(false)},
		{name: "nested shadow root box", cover: shadowLayer(true)},
		{name: "shadow root box without v2", v1: true, cover: shadowLayer(false)},
		// The link sunk under its paragraph's background, by a z-index
		// below 0: what paints over it is an ancestor's own box.
		{name: "sunk under its paragraph", keyboard: true, cover: `<style>#under .c{display:none}#under p{background:#fff}#under a.adlink-intext{position:relative;z-index:-1}</style>`},
		// What paints is an element's ::after, not an element.
		{name: "after", cover: afterCover},
		{name: "after without v2", v1: true, cover: afterCover},
		// The same ::after painted by an inset shadow moved down its whole
		// height: no spread, no border, no background.
		{name: "after inset shadow", cover: afterInset},
		{name: "after inset shadow without v2", v1: true, cover: afterInset},
		// A cover that lets clicks through by a rule marked !important,
		// by its own style attribute marked so, by its shadow root's
		// rule for its host or for what is slotted in it, or by the style
		// attribute of a box in a shadow root.
		{name: "important rule", cover: importantCover},
		{name: "important rule without v2", v1: true, cover: importantCover},
		{name: "important style attribute", cover: inlineCover},
		{name: "important style attribute without v2", v1: true, cover: inlineCover},
		{name: "important host rule", cover: hostCover},
		{name: "important host rule without v2", v1: true, cover: hostCover},
		// The property's name in the style attribute spelt with an
		// escape.
		{name: "important escaped style attribute", cover: strings.Replace(inlineCover, "pointer-events", `pointer\-events`, 1)},
		{name: "important slotted rule", cover: slottedCover},
		{name: "important slotted rule without v2", v1: true, cover: slottedCover},
		{name: "important style attribute in shadow root", cover: strings.Replace(shadowLayer(false), "pointer-events:none", "pointer-events:none!important", 1)},
		{name: "important style attribute in shadow root without v2", v1: true, cover: strings.Replace(shadowLayer(false), "pointer-events:none", "pointer-events:none!important", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := newBrowser(t)
			if c.v1 {
				br.onEveryPage(t, `delete IntersectionObserverEntry.prototype.isVisible`)
			}
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, coveredPage(c.cover))})
			rd := asReader(t, br, b, site)
			start := time.Now()
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 2 {
				t.Fatalf("%+v, want the two ads matched in the page", r)
			}
			href := eval[string](t, br, coveredLink)
			if href == "" {
				t.Fatal("no in-text link under the cover")
			}
			ad := query(t, href).Get("adId")
			if pollHref(t, br, seenToken) == "" {
				t.Fatal("the ad in view never got its click token")
			}
			time.Sleep(config.Default().ClickMinDelay) // a token would bill by now
			if got := eval[string](t, br, coveredLink); strings.Contains(got, "&ct=") {
				t.Errorf("the covered link got a click token: %s", got)
			}
			eval[bool](t, br, `(() => { const a = document.querySelector("#under a.adlink-intext"); a.removeAttribute("target"); a.focus({preventScroll: true}); return true; })()`)
			if c.keyboard {
				br.do(t, chromedp.KeyEvent("\r"))
			} else {
				xy := eval[[2]float64](t, br, `(() => { const r = document.querySelector("#under a.adlink-intext").getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
				if c.hover {
					br.do(t, chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]), chromedp.Sleep(1500*time.Millisecond))
				}
				br.do(t, chromedp.MouseClickXY(xy[0], xy[1]))
			}
			rd.landed(t)
			if logged := rd.clicksOn(b, ad, start); len(logged) != 1 || logged[0].Billable {
				t.Errorf("clicks on the covered ad: %+v, want one, not billable", logged)
			}
			if imps := rd.impressionsOf(b, "", start); slices.Contains(imps, ad) || len(imps) == 0 {
				t.Errorf("impressions %q: want the ad in view's and not the covered %s", imps, ad)
			}
		})
	}
}

// TestCoveredServerLinkDoesNotBill: an ad link of a server answer, signed,
// that a cover clicks fall through (pointer-events: none) lies over goes
// without its signature while covered, so the reader's click through the
// cover bills nothing; uncovered, the same link's click bills, also on a
// page whose links fade a little under the mouse (which v2 takes for not
// to be seen).
func TestCoveredServerLinkDoesNotBill(t *testing.T) {
	br, b, href, u := serverLinkInChrome(t)
	ip := "2001:db8:" + strconv.FormatInt(readers.Add(1), 16) + "::1"
	left := make(chan string, 4)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, `<p>Hallo.</p>`)})
	intercept(t, br, interception{local: []string{b.URL + "/", site + "/"}, left: left, header: [2]string{"X-Forwarded-For", ip}})
	start := time.Now().Add(-time.Minute)
	const cover = `(() => { const r = document.getElementById("server-ad").getBoundingClientRect(), c = document.createElement("div");
	c.style.cssText = "position:absolute;background:#fff;pointer-events:none;left:" + r.left + "px;top:" + r.top + "px;width:" + r.width + "px;height:" + r.height + "px";
	document.body.append(c); return true; })()`
	for i, covered := range []bool{true, false} {
		br.view(t, site+"/page.html?covered="+strconv.Itoa(i))
		evalCall[bool](t, br, placeLink, href)
		if covered {
			eval[bool](t, br, cover)
		}
		if n := eval[int](t, br, `adlink.watch(document.getElementById("server-ad"))`); n != 1 {
			t.Fatalf("adlink.watch took %d links, want the one", n)
		}
		if covered && pollHref(t, br, `(() => { const h = document.getElementById("server-ad").href; return /[?&]sig=/.test(h) ? false : h; })()`) == "" {
			t.Fatal("the covered link kept its signature")
		}
		if !covered {
			// The page's links fade a little under the mouse.
			eval[bool](t, br, `document.head.append(Object.assign(document.createElement("style"), {textContent: "a:hover{opacity:.8}"})), true`)
			xy := eval[[2]float64](t, br, `(() => { const r = document.getElementById("server-ad").getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
			br.do(t, chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]))
			time.Sleep(1500 * time.Millisecond) // as long as a reader takes
			if got := eval[string](t, br, `document.getElementById("server-ad").href`); got != href {
				t.Fatalf("the link in view is %s, want the answer's %s", got, href)
			}
		}
		br.do(t, chromedp.Click("#server-ad"))
		select {
		case <-left:
		case <-time.After(20 * time.Second):
			t.Fatalf("click %d never left for the landing page", i)
		}
	}
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start, time.Now().Add(time.Minute), func(c clicks.Click) error {
		if c.AdID == u.Query().Get("adId") && c.IP == ip {
			logged = append(logged, c)
		}
		return nil
	})
	if len(logged) != 2 || logged[0].Billable || logged[0].Reason != clicks.ReasonUnsigned || !logged[1].Billable {
		t.Errorf("clicks recorded: %+v; want the covered one unsigned, then the one in view billable", logged)
	}
}

// TestPinnedPointerEventsGivenBack: a page's empty layer over the whole
// window (its toasts'), which lets clicks through by its own style
// attribute marked !important, covers no link: the ad under it gets its
// click token, and the reader's click through the layer bills. The
// checks set that value to auto while they look and give it back as it
// was, marked important, each time; an element whose style attribute
// names pointer-events without marking it so keeps its attribute as it
// was written.
func TestPinnedPointerEventsGivenBack(t *testing.T) {
	b := startBackend(t)
	for _, v1 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v2", true: "without v2"}[v1], func(t *testing.T) {
			br := newBrowser(t)
			if v1 {
				br.onEveryPage(t, `delete IntersectionObserverEntry.prototype.isVisible`)
			}
			// Counts the values of pointer-events the layer's style is set to.
			br.onEveryPage(t, `(() => { const s = CSSStyleDeclaration.prototype.setProperty; window.pinned = [];
				CSSStyleDeclaration.prototype.setProperty = function (p, v, i) { if (p === "pointer-events" && this === document.getElementById("toaster")?.style) pinned.push(v + " " + i); return s.apply(this, arguments); }; })()`)
			page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}</style>` +
				`<article><p id="wrap">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende <span id="soft" style="pointer-events:none">.</span></p></article>` +
				`<div id="toaster" style="position:fixed;inset:0;z-index:9999;pointer-events:none!important"></div>`
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
			rd := asReader(t, br, b, site)
			start := time.Now()
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
				t.Fatalf("%+v, want the ad matched in the page", r)
			}
			const link = `document.querySelector("#wrap a.adlink-intext")`
			href := pollHref(t, br, `(() => { const a = `+link+`; return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`)
			if href == "" {
				t.Fatalf("the link under the empty layer never got its click token: %s", eval[string](t, br, link+`.href`))
			}
			// The checks lifted the layer's own value and gave it back.
			if pollHref(t, br, `pinned.length >= 2 && "lifted"`) == "" {
				t.Fatalf("the layer's pointer-events was set to %q, want it lifted for the checks and given back", eval[[]string](t, br, `pinned`))
			}
			got := eval[[]string](t, br, `pinned`)
			for i, v := range got {
				if want := [2]string{"auto important", "none important"}[i%2]; v != want {
					t.Errorf("the layer's pointer-events set to %q, want lifted and given back in turn", got)
					break
				}
			}
			if v := eval[string](t, br, `(() => { const s = document.getElementById("toaster").style; return s.getPropertyValue("pointer-events") + " " + s.getPropertyPriority("pointer-events"); })()`); v != "none important" {
				t.Errorf("the layer's own pointer-events is now %q, want none, important", v)
			}
			if v := eval[string](t, br, `document.getElementById("soft").getAttribute("style")`); v != "pointer-events:none" {
				t.Errorf("the style attribute the checks need not change is now %q", v)
			}
			ad := query(t, href).Get("adId")
			time.Sleep(config.Default().ClickMinDelay)
			eval[bool](t, br, link+`.removeAttribute("target"), true`)
			xy := eval[[2]float64](t, br, `(() => { const r = `+link+`.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
			br.do(t, chromedp.MouseClickXY(xy[0], xy[1]))
			rd.landed(t)
			if logged := rd.clicksOn(b, ad, start); len(logged) != 1 || !logged[0].Billable {
				t.Errorf("clicks on the ad: %+v, want one, billable", logged)
			}
		})
	}
}
