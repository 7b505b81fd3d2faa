package web

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/chromedp/chromedp"
)

// outerCovers paint white over the whole window from outside an
// element's box, where no point finds the element: clicks fall through
// onto the links under it.
var outerCovers = []struct{ name, cover string }{
	// A 1 pixel box whose shadow spreads 9999 pixels.
	{"box-shadow", `<div style="position:fixed;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 9999px #fff"></div>`},
	// Its outline, 9999 pixels wide.
	{"outline", `<div style="position:fixed;left:0;top:0;width:1px;height:1px;outline:9999px solid #fff"></div>`},
	// Blocks of text left of the window, their shadow moved onto it.
	{"text-shadow", `<div style="position:fixed;left:-3000px;top:0;width:3000px;font-size:600px;line-height:1;color:transparent;text-shadow:3000px 0 0 #fff;overflow-wrap:anywhere">` +
		strings.Repeat("█", 6) + `</div>`},
	// A white box left of the window, its drop-shadow moved onto it.
	// The body's outline, 3000 pixels wide and as far within its box:
	// an outline is painted over the element's content. (Alone, it leaves
	// IntersectionObserver v2 saying the link is visible; the page's empty
	// toast layer has v2 doubt it.)
	{"body outline", `<style>body{outline:3000px solid #fff;outline-offset:-3000px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style><div id="toaster"></div>`},
	{"drop-shadow", `<div style="position:fixed;left:-3000px;top:0;width:3000px;height:100vh;background:#fff;filter:drop-shadow(3000px 0 0 #fff)"></div>`},
	// A box 1 pixel wide left of the window whose child, a white box,
	// overflows it: its drop-shadow is the child's shadow too.
	// A 1 pixel box's border image, its outset 3000 pixels.
	{"border-image outset", `<div style="position:fixed;left:0;top:0;width:1px;height:1px;border:1px solid transparent;border-image:linear-gradient(#fff,#fff) 1 fill / 1px / 3000px"></div>`},
	// A white box left of the window, reflected onto it.
	{"box-reflect", `<div style="position:fixed;left:-3000px;top:0;width:3000px;height:100vh;background:#fff;-webkit-box-reflect:right"></div>`},
	{"drop-shadow of the overflow", `<div style="position:fixed;left:-3000px;top:0;width:1px;height:1px;filter:drop-shadow(3000px 0 0 #fff)"><div style="width:3000px;height:100vh;background:#fff"></div></div>`},
	// The shadow, and an opacity of the body's that would explain v2's
	// doubt by itself.
	{"box-shadow, faint body", `<style>body{opacity:.999}</style><div style="position:fixed;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 9999px #fff"></div>`},
	// The shadow in a box 1 pixel wide whose overflow is hidden, which
	// clips no box laid out outside it: a fixed one, an absolute one with
	// no positioned box around it.
	{"box-shadow, fixed out of a clip", `<div style="overflow:hidden;width:1px;height:1px"><div style="position:fixed;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 9999px #fff"></div></div>`},
	// The shadow of a box with a z-index below 0, under its own layer's
	// flow but in a layer over the page.
	{"box-shadow, z-index below 0 in a layer", `<div style="position:fixed;left:0;top:0;z-index:999;width:1px;height:1px"><div style="position:absolute;z-index:-1;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 9999px #fff"></div></div>`},
	// A z-index on a static box that is no flex or grid item does not
	// apply: its opacity paints it over the flow.
	{"box-shadow, faint static box with a z-index below 0", `<div style="opacity:.99;z-index:-1;width:1px;height:1px;box-shadow:0 0 0 9999px #fff"></div>`},
	// The body's ::after, fixed, 1 pixel wide, its shadow 9999 pixels.
	{"body::after box-shadow", `<style>body::after{content:"";position:fixed;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 9999px #fff}</style>`},
	// The ::before of a positioned box below the article, laid out from
	// it onto the link, its outline 3000 pixels wide.
	{"::before outline", `<div id="pin" style="position:relative;height:10px"></div><style>#pin::before{content:"";position:absolute;left:0;top:-3000px;width:1px;height:1px;outline:3000px solid #fff}</style>`},
	{"box-shadow, absolute out of a clip", `<div style="overflow:hidden;width:1px;height:1px"><div style="position:absolute;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 9999px #fff"></div></div>`},
}

// TestOuterPaintCoversLink: a page that paints over its ad from outside
// an element's box (a shadow, an outline), which no point finds and
// clicks fall through, gets no impression for it and no click token,
// and the reader's click through the paint does not bill.
func TestOuterPaintCoversLink(t *testing.T) {
	b := startBackend(t)
	for _, c := range outerCovers {
		t.Run(c.name, func(t *testing.T) {
			br := newBrowser(t)
			page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}</style>` +
				`<article><p id="wrap">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende.</p></article>` + c.cover
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
			rd := asReader(t, br, b, site)
			start := time.Now()
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
				t.Fatalf("%+v, want the ad matched in the page", r)
			}
			const link = `document.querySelector("#wrap a.adlink-intext")`
			// Judged: it got its click token, or the widget looked for
			// paint outside elements' boxes.
			if pollHref(t, br, `(() => { const a = `+link+`; return a && (/[?&]ct=/.test(a.href) || "outerPaint" in adlink.timing) ? a.href : false; })()`) == "" {
				t.Fatal("the link was never judged")
			}
			time.Sleep(2 * time.Second) // a token would have come by now
			href := eval[string](t, br, link+`.href`)
			if strings.Contains(href, "&ct=") {
				t.Errorf("the link under the paint got a click token: %s", href)
			}
			ad := query(t, href).Get("adId")
			logged := rd.clickMiddle(t, br, b, link, ad, start)
			if len(logged) != 1 || logged[0].Billable {
				t.Errorf("clicks on the ad under the paint: %+v, want one, not billable", logged)
			}
			imps := rd.impressionsOf(b, "", start)
			if len(imps) != 0 {
				t.Errorf("impressions %q, want none", imps)
			}
		})
	}
}

// TestOuterPaintCoversServerLink: a server answer's signed link under a
// 1 pixel box's shadow 9999 pixels wide goes without its signature, and
// the reader's click through the shadow bills nothing.
func TestOuterPaintCoversServerLink(t *testing.T) {
	br, b, href, u := serverLinkInChrome(t)
	ip := "2001:db8:" + strconv.FormatInt(readers.Add(1), 16) + "::1"
	left := make(chan string, 4)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, `<p>Hallo.</p>`)})
	intercept(t, br, interception{local: []string{b.URL + "/", site + "/"}, left: left, header: [2]string{"X-Forwarded-For", ip}})
	start := time.Now().Add(-time.Minute)
	br.view(t, site+"/page.html")
	evalCall[bool](t, br, placeLink, href)
	eval[bool](t, br, `document.body.insertAdjacentHTML("beforeend", `+jsonString(outerCovers[0].cover)+`), true`)
	if n := eval[int](t, br, `adlink.watch(document.getElementById("server-ad"))`); n != 1 {
		t.Fatalf("adlink.watch took %d links, want the one", n)
	}
	if pollHref(t, br, `(() => { const h = document.getElementById("server-ad").href; return /[?&]sig=/.test(h) ? false : h; })()`) == "" {
		t.Fatal("the link under the shadow kept its signature")
	}
	br.do(t, chromedp.Click("#server-ad"))
	select {
	case <-left:
	case <-time.After(20 * time.Second):
		t.Fatal("the click never left for the landing page")
	}
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start, time.Now().Add(time.Minute), func(c clicks.Click) error {
		if c.AdID == u.Query().Get("adId") && c.IP == ip {
			logged = append(logged, c)
		}
		return nil
	})
	if len(logged) != 1 || logged[0].Billable || logged[0].Reason != clicks.ReasonUnsigned {
		t.Errorf("clicks recorded: %+v; want one, unsigned", logged)
	}
}

// TestOuterPaintHonestLinkBills: on a page whose empty toast layer has
// IntersectionObserver v2 say no link is to be seen, paint outside
// elements' boxes a reader sees the link through or around leaves it
// billing: a neighbour card's shadow over the link's upper edge, the
// link's own focus ring and shadow, the shadow of a card the link
// overflows, a full-bleed band (a shadow 100vmax wide, clipped to its
// rows) above it, a hero's dimming shadow its overflow crops. A reader's
// click on it bills.
func TestOuterPaintHonestLinkBills(t *testing.T) {
	b := startBackend(t)
	for _, c := range []struct{ name, style, before, after string }{
		// The neighbour's shadow reaches 8 pixels into the link: its
		// upper quarter points, two of five.
		{name: "neighbour shadow", before: `<div style="position:relative;z-index:1;height:30px;background:#fafafa;box-shadow:0 0 0 18px #ddd"></div>`},
		{name: "own focus ring", style: `a.adlink-intext{outline:3px solid #06c;outline-offset:-3px;box-shadow:0 0 0 4px #fc0}`},
		{name: "card shadow", before: `<div style="height:4px;box-shadow:0 30px 0 30px #eee">`, after: `</div>`},
		{name: "full-bleed band", before: `<div style="height:20px;background:#eee;box-shadow:0 0 0 100vmax #eee;clip-path:inset(0 -100vmax)"></div>`},
		// A hero image dimmed around a round window by its shadow 100vmax
		// wide, which the hero's overflow crops.
		{name: "cropped hero shadow", before: `<div style="position:relative;overflow:hidden;height:60px;background:#888"><div style="position:absolute;left:40px;top:10px;width:40px;height:40px;border-radius:50%;box-shadow:0 0 0 100vmax rgba(0,0,0,.6)"></div></div>`},
		// A soft card 16 pixels above the link, in an article scaled a
		// little: a static block's shadow is painted under the text of
		// the normal flow.
		{name: "neumorphism card", style: `article{scale:.99}`, before: `<div style="height:80px;margin:0 40px 16px;border-radius:20px;background:#e0e0e0;box-shadow:20px 20px 60px #bebebe,-20px -20px 60px #fff"></div>`},
		// A dark sticky header whose soft shadow falls on the link 2
		// pixels below it: only the shadow's opaque core counts, here
		// none outside the header.
		// A section's hard shadow behind its text, with a z-index below 0
		// in a box that makes no stacking context: under the page's flow.
		// The same, the shadow a ::before's.
		{name: "cropped hero ::before shadow", before: `<style>#hero::before{content:"";position:absolute;left:40px;top:10px;width:40px;height:40px;border-radius:50%;box-shadow:0 0 0 100vmax rgba(0,0,0,.6)}</style><div id="hero" style="position:relative;overflow:hidden;height:60px;background:#888"></div>`},
		{name: "shadow below the flow", before: `<div style="position:relative"><div style="position:absolute;z-index:-1;left:0;top:0;width:1px;height:1px;box-shadow:0 0 0 200px #eee"></div></div>`},
		{name: "dark sticky header", before: `<div style="position:sticky;top:0;height:48px;background:#0d1117;box-shadow:0 8px 24px #010409"></div>`, style: `#wrap{padding-top:2px}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := newBrowser(t)
			page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}` +
				`#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}` + c.style + `</style>` +
				`<article>` + c.before + `<p id="wrap">Das neue Apple iPhone 15 im Test.</p>` + c.after +
				`<p style="margin-bottom:3000px">Ende.</p></article><div id="toaster"></div>`
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
			rd := asReader(t, br, b, site)
			start := time.Now()
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
				t.Fatalf("%+v, want the ad matched in the page", r)
			}
			const link = `document.querySelector("#wrap a.adlink-intext")`
			href := pollHref(t, br, `(() => { const a = `+link+`; return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`)
			if href == "" {
				t.Fatalf("the link never got its click token: %s", eval[string](t, br, link+`.href`))
			}
			if !eval[bool](t, br, `"outerPaint" in adlink.timing`) {
				t.Fatal("the widget never looked for paint outside elements' boxes")
			}
			ad := query(t, href).Get("adId")
			logged := rd.clickMiddle(t, br, b, link, ad, start)
			if len(logged) != 1 || !logged[0].Billable {
				t.Errorf("clicks on the ad: %+v, want one, billable", logged)
			}
		})
	}
}

// TestOuterPaintLookOncePerRound: on a page of 10,000 elements whose
// empty toast layer has IntersectionObserver v2 say no link is to be
// seen, the links judged together share one look for paint outside
// elements' boxes: no task looks twice. The look is made again once the
// last is 2 seconds old. Its time is logged.
func TestOuterPaintLookOncePerRound(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	// Counts the looks (the document's every element queried) and those
	// in a task that already looked.
	br.onEveryPage(t, `(() => { const q = Document.prototype.querySelectorAll; window.looks = 0; window.twice = 0; let inTask = false;
		Document.prototype.querySelectorAll = function (s) { if (s === "*") { looks++; if (inTask) twice++; inTask = true; queueMicrotask(() => inTask = false); } return q.apply(this, arguments); }; })()`)
	var many strings.Builder
	for i := 0; i < 2000; i++ {
		shadow := ""
		if i%10 == 0 {
			shadow = ` style="box-shadow:0 2px 6px #999;outline:1px solid #ccc"`
		}
		many.WriteString(`<div` + shadow + `><span>a</span><b>b</b><i>c</i><em>d</em></div>`)
	}
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
		`<article><p>` + handyText + `</p><p style="margin-bottom:3000px">Ende.</p></article>` + many.String() + `<div id="toaster"></div>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 3 {
		t.Fatalf("%+v, want three ads or more matched in the page", r)
	}
	if n := eval[int](t, br, `document.getElementsByTagName("*").length`); n < 10000 {
		t.Fatalf("%d elements in the page, want 10,000 or more", n)
	}
	// The rounds at once, after a second (the look kept) and after two
	// more (a new look).
	if pollHref(t, br, `looks >= 2 && "again"`) == "" {
		t.Fatalf("%d looks for paint outside elements' boxes, want a new one after 2 seconds", eval[int](t, br, `looks`))
	}
	looks, twice := eval[int](t, br, `looks`), eval[int](t, br, `twice`)
	if twice != 0 {
		t.Errorf("%d of %d looks came in a task that had looked already, want one per round", twice, looks)
	}
	t.Logf("a look for paint outside elements' boxes on a page of 10,000 elements: %.1f ms", eval[float64](t, br, `adlink.timing.outerPaint`))
}

// TestOuterPaintLooksRarely: on a page of 10,000 elements whose main
// text is scaled a little, IntersectionObserver v2 doubts its links for
// good; the links' checks, their rounds and their impressions' timers
// share one look for paint outside elements' boxes while the page stays
// as it is, so in 10 seconds only a few looks run.
func TestOuterPaintLooksRarely(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	// Counts the looks: the document's every element queried.
	br.onEveryPage(t, `(() => { const q = Document.prototype.querySelectorAll; window.looks = 0;
		Document.prototype.querySelectorAll = function (s) { if (s === "*") looks++; return q.apply(this, arguments); }; })()`)
	var many strings.Builder
	for i := 0; i < 2000; i++ {
		shadow := ""
		if i%10 == 0 {
			shadow = ` style="box-shadow:0 2px 6px #999;outline:1px solid #ccc"`
		}
		many.WriteString(`<div` + shadow + `><span>a</span><b>b</b><i>c</i><em>d</em></div>`)
	}
	page := `<style>body{background:#fff;color:#111;margin:0}main{scale:.99}p{font-size:20px;margin:0;padding:10px}</style>` +
		`<main><article><p>` + handyText + `</p><p>Ende.</p></article>` + many.String() + `</main>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 3 {
		t.Fatalf("%+v, want three ads or more matched in the page", r)
	}
	if n := eval[int](t, br, `document.getElementsByTagName("*").length`); n < 10000 {
		t.Fatalf("%d elements in the page, want 10,000 or more", n)
	}
	if pollHref(t, br, `window.looks > 0 ? "looked" : false`) == "" {
		t.Fatal("the widget never looked for paint outside elements' boxes")
	}
	time.Sleep(10 * time.Second)
	looks := eval[int](t, br, `looks`)
	if looks > 6 {
		t.Errorf("%d looks for paint outside elements' boxes in 10 seconds, want 6 or fewer", looks)
	}
	if n := eval[int](t, br, `adlink.timing.outerScans`); n != looks {
		t.Errorf("adlink.timing.outerScans is %d, want the %d looks", n, looks)
	}
	t.Logf("%d looks in 10 seconds, the last %.1f ms", looks, eval[float64](t, br, `adlink.timing.outerPaint`))
}
