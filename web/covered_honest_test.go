package web

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// ripple is Material Components' ripple (mdc-ripple-surface) on the
// article: black discs over its box at opacity 0, faint on hover.
const ripple = `article{position:relative;overflow:hidden}article::before,article::after{content:"";position:absolute;top:-50%;left:-50%;width:200%;height:200%;border-radius:50%;` +
	`background-color:#000;opacity:0;pointer-events:none}article::before{z-index:1}article:hover::before{opacity:.04}`

// balloon is a CSS tooltip on the paragraph below the link's, laid out
// over the link's and hidden at opacity 0 until the pointer comes.
const balloon = `#wrap+p{position:relative}#wrap+p::after{content:"Ein Hinweis, der beim Zeigen erscheint";position:absolute;left:0;bottom:100%;width:300px;height:300px;` +
	`background:rgba(17,17,17,.9);color:#fff;opacity:0;pointer-events:none}#wrap+p:hover::after{opacity:1}`

// TestHonestLinkBills: an in-text ad a reader sees, on a page whose
// layout or style IntersectionObserver v2 would take for a cover or a
// distortion, gets its impression and click token, and a reader's click
// on it bills. Its name falls where the line breaks, with the paragraph's
// text going on after it (broken over two lines, v2 would take that text,
// within the link's bounding box, for something over it); its article is
// scaled a little (the CSS property scale, not transform); a link pressed
// shrinks a little (a:active) while the reader holds the button; an
// empty layer for the page's notices, which clicks fall through, lies over
// the whole window; a cookie banner covers the lower few pixels of it.
// Without v2 (Firefox, Safari), where the widget judges the link as the
// pointer comes onto it, the tooltip the page shows then, the press and
// the banner leave it its token too.
func TestHonestLinkBills(t *testing.T) {
	b := startBackend(t)
	// tooltip shows a link's title over its top edge as the pointer comes.
	const tooltip = `addEventListener("mouseover", e => { const a = e.target.closest("a"); if (!a || document.getElementById("tip")) return;
			const r = a.getBoundingClientRect(), d = document.createElement("div"); d.id = "tip"; d.textContent = a.title;
			d.style.cssText = "position:absolute;background:#333;color:#fff;padding:4px;left:" + (r.left + scrollX) + "px;top:" + (r.top + scrollY - 20) + "px"; document.body.append(d); })`
	// cookieBanner lays a banner at the foot of the window, over the
	// link's lower 8 pixels.
	const cookieBanner = `(() => { const r = document.querySelector("#wrap a.adlink-intext").getBoundingClientRect(), d = document.createElement("div");
			d.textContent = "Wir verwenden Cookies."; d.style.cssText = "position:fixed;left:0;right:0;height:200px;background:#333;color:#fff;z-index:10;top:" + (r.bottom - 8) + "px";
			document.body.append(d); return true; })()`
	for _, c := range []struct {
		name, style, script string
		// after runs in the page once the ads are placed.
		after   string
		wrapped bool
		// v1 plays a browser without IntersectionObserver v2.
		v1 bool
		// hover is how long the reader's pointer rests on the link before
		// the click, press how long the button is held down.
		hover, press time.Duration
	}{
		// Its paragraph's first line is indented, as in a book.
		{name: "wrapped", wrapped: true, style: `p{text-indent:2em}`},
		{name: "scaled article", style: `article{scale:.98;rotate:.2deg}`},
		{name: "pressed", style: `a:active{scale:.97}`, press: 400 * time.Millisecond},
		// The page's tooltip shows a link's title over its top edge.
		{name: "tooltip", hover: 600 * time.Millisecond, script: tooltip},
		{name: "tooltip without v2", v1: true, hover: 600 * time.Millisecond, script: tooltip},
		{name: "pressed without v2", v1: true, style: `a:active{scale:.97}`, press: 400 * time.Millisecond},
		// The empty container of a page's toasts (react-hot-toast's).
		{name: "toast layer", style: `#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}`,
			script: `document.body.append(Object.assign(document.createElement("div"), {id: "toaster"}))`},
		// The same layer in a custom element's shadow root.
		{name: "shadow toast layer", script: `document.body.append(document.createElement("x-toaster")); document.querySelector("x-toaster").attachShadow({mode: "open"}).innerHTML =
			'<div style="position:fixed;inset:16px;z-index:9999;pointer-events:none"></div>'`},
		{name: "shadow toast layer without v2", v1: true, script: `document.body.append(document.createElement("x-toaster")); document.querySelector("x-toaster").attachShadow({mode: "open"}).innerHTML =
			'<div style="position:fixed;inset:16px;z-index:9999;pointer-events:none"></div>'`},
		// The article's frame, an ::after over it that paints only its
		// border, on an article with a background.
		{name: "framed card", style: `article{position:relative;background:#fafafa}article::after{content:"";position:absolute;inset:0;border:1px solid #ddd;pointer-events:none}`},
		{name: "framed card without v2", v1: true, style: `article{position:relative;background:#fafafa}article::after{content:"";position:absolute;inset:0;border:1px solid #ddd;pointer-events:none}`},
		// A Material ripple on the article: its ::before and ::after, a
		// black disc over the whole box, are shown (faintly) only on hover
		// or focus, let clicks through and sit at opacity 0 until then.
		{name: "ripple", style: ripple},
		{name: "ripple without v2", v1: true, style: ripple},
		// A CSS tooltip (balloon.css) on the paragraph below, laid over
		// the link's and shown only on hover: at opacity 0 until then.
		{name: "tooltip at opacity 0", style: balloon},
		{name: "tooltip at opacity 0 without v2", v1: true, style: balloon},
		// A cookie banner at the foot of the window.
		{name: "cookie banner", after: cookieBanner},
		{name: "cookie banner without v2", v1: true, after: cookieBanner},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := newBrowser(t)
			if c.v1 {
				br.onEveryPage(t, `delete IntersectionObserverEntry.prototype.isVisible`)
			}
			page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px;width:170px}` + c.style + `</style>` +
				`<article><p id="wrap">Das neue Apple iPhone 15 im Test, und was es sonst noch so alles kann.</p>` +
				`<p style="margin-bottom:3000px">Ende.</p></article><script>` + c.script + `</script>`
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
			rd := asReader(t, br, b, site)
			start := time.Now()
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
				t.Fatalf("%+v, want the ad matched in the page", r)
			}
			const link = `document.querySelector("#wrap a.adlink-intext")`
			if c.after != "" {
				eval[bool](t, br, c.after)
			}
			// Laid out as the page's text is, the ad's name breaks over two lines.
			if n := eval[int](t, br, `(() => { const a = `+link+`; a.style.display = "inline"; const n = a.getClientRects().length; a.style.display = ""; return n; })()`); c.wrapped && n != 2 {
				t.Fatalf("inline, the link has %d boxes, want it broken over two lines", n)
			}
			// The link's text starts where its box does: it takes no
			// indent from its paragraph.
			if d := eval[float64](t, br, `(() => { const a = `+link+`, r = document.createRange(); r.selectNodeContents(a); return r.getClientRects()[0].left - a.getBoundingClientRect().left; })()`); d > 1 {
				t.Errorf("the link's text starts %.0fpx into its box", d)
			}
			href := pollHref(t, br, `(() => { const a = `+link+`; return /[?&]ct=/.test(a.href) ? a.href : false; })()`)
			if href == "" {
				t.Fatalf("the link in view never got its click token: %s", eval[string](t, br, link+`.href`))
			}
			ad := query(t, href).Get("adId")
			time.Sleep(config.Default().ClickMinDelay)
			eval[bool](t, br, link+`.removeAttribute("target"), true`)
			xy := eval[[2]float64](t, br, `(() => { const l = `+link+`.getClientRects(), r = l[l.length - 1]; return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
			br.do(t, chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]), chromedp.Sleep(c.hover))
			if c.press > 0 {
				br.do(t, chromedp.MouseEvent(chromedp.MousePressed, xy[0], xy[1], chromedp.ButtonLeft, chromedp.ClickCount(1)),
					chromedp.Sleep(c.press),
					chromedp.MouseEvent(chromedp.MouseReleased, xy[0], xy[1], chromedp.ButtonLeft, chromedp.ClickCount(1)))
			} else {
				br.do(t, chromedp.MouseClickXY(xy[0], xy[1]))
			}
			rd.landed(t)
			if logged := rd.clicksOn(b, ad, start); len(logged) != 1 || !logged[0].Billable {
				t.Errorf("clicks on the ad: %+v, want one, billable", logged)
			}
		})
	}
}

// TestCoveredBeforeTokenCarriesNone: a link something comes to lie over
// after it was seen, while its impression is on its way, gets its click
// token only once it shows again: the token that comes while it is
// covered waits, as one it had before the cover would.
func TestCoveredBeforeTokenCarriesNone(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}</style>` +
		`<article><p id="under">Das neue Apple iPhone 15 im Test.</p>` +
		`<p id="seen">Und das Google Pixel 8 daneben.</p><p style="margin-bottom:3000px">Ende.</p></article>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	send(t, br, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopChrome})
	intercept(t, br, interception{local: []string{b.URL + "/", site + "/"}, left: make(chan string, 4),
		header: [2]string{"X-Forwarded-For", "2001:db8:" + strconv.FormatInt(readers.Add(1), 16) + "::1"},
		hold: func(u string) <-chan struct{} {
			wait := (<-chan struct{})(nil)
			if strings.Contains(u, "/v1/impression") {
				once.Do(func() { close(held); wait = release })
			}
			return wait
		}})
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 2 {
		t.Fatalf("%+v, want the two ads matched in the page", r)
	}
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("no impression reported")
	}
	// A box the clicks fall through comes over the first ad.
	eval[bool](t, br, `(() => { const r = document.querySelector("#under a.adlink-intext").getBoundingClientRect(), c = document.createElement("div");
	c.id = "cover"; c.style.cssText = "position:absolute;background:#fff;pointer-events:none;left:" + (r.left - 4) + "px;top:" + (r.top - 4) + "px;width:" + (r.width + 8) + "px;height:" + (r.height + 8) + "px";
	document.body.append(c); return true; })()`)
	// IntersectionObserver v2 tells the widget's observer and one of the
	// test's, made as the widget's, in the same update of the page.
	eval[bool](t, br, `new IntersectionObserver(es => { if (es.some(e => e.isIntersecting && !e.isVisible)) window.toldCovered = true; },
		{threshold: [0, 0.5], trackVisibility: true, delay: 100}).observe(document.querySelector("#under a.adlink-intext")), true`)
	if pollHref(t, br, `window.toldCovered && "told"`) == "" {
		t.Fatal("IntersectionObserver v2 never told that the first ad is covered")
	}
	close(release)
	if pollHref(t, br, seenToken) == "" {
		t.Fatal("the ad in view never got its click token", eval[string](t, br, `Array.from(document.querySelectorAll("a.adlink-intext"), a => a.href).join("\n")`))
	}
	// The widget's own observer may be told up to its delay (100 ms) after
	// the test's: adopting the layered sheet of a cover check moves the
	// page's next update. A token come meanwhile is taken back as it is.
	if pollWithin(t, br, `!/[?&]ct=/.test(document.querySelector("#under a.adlink-intext").href) && "none"`, 2*time.Second) == "" {
		t.Errorf("the covered link kept its click token: %s", eval[string](t, br, coveredLink))
	}
	eval[bool](t, br, `document.getElementById("cover").remove(), true`)
	if pollHref(t, br, `(() => { const a = document.querySelector("#under a.adlink-intext"); return /[?&]ct=/.test(a.href) ? a.href : false; })()`) == "" {
		t.Errorf("the link uncovered never got its click token: %s", eval[string](t, br, coveredLink))
	}
}

// TestCoverCheckLeavesPageAlone: on a page whose empty toast layer has
// IntersectionObserver v2 say no link is to be seen, a link under a cover
// clicks fall through gets its click token only once the cover goes,
// though v2 goes on saying the same; the checks, each second, leave the
// page's adopted style sheets as they were, those of its shadow roots
// too, and change nothing a MutationObserver sees.
func TestCoverCheckLeavesPageAlone(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	// Counts the widget's changes to the adopted style sheets of the
	// document and of shadow roots.
	br.onEveryPage(t, `(() => { const d = Object.getOwnPropertyDescriptor(Document.prototype, "adoptedStyleSheets");
		window.adopted = 0; Object.defineProperty(Document.prototype, "adoptedStyleSheets", {configurable: true, get: d.get, set(v) { window.adopted++; d.set.call(this, v); }});
		const r = Object.getOwnPropertyDescriptor(ShadowRoot.prototype, "adoptedStyleSheets");
		window.rootAdopted = 0; Object.defineProperty(ShadowRoot.prototype, "adoptedStyleSheets", {configurable: true, get: r.get, set(v) { window.rootAdopted++; r.set.call(this, v); }}); })()`)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
		`<article><p id="under">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende.</p></article>` +
		`<div id="toaster"></div><script>window.pageSheet = new CSSStyleSheet(); pageSheet.replaceSync("article{color:#111}");
		document.adoptedStyleSheets = [pageSheet]; window.pageSheets = document.adoptedStyleSheets; adopted = 0;
		window.hostSheet = new CSSStyleSheet(); hostSheet.replaceSync("b{color:#111}"); window.host = document.body.appendChild(document.createElement("x-note"));
		host.attachShadow({mode: "open"}).innerHTML = "<b>Hinweis</b>"; host.shadowRoot.adoptedStyleSheets = [hostSheet]; rootAdopted = 0</script>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
		t.Fatalf("%+v, want the ad matched in the page", r)
	}
	eval[bool](t, br, `(() => { const r = document.querySelector("#under a.adlink-intext").getBoundingClientRect(), c = document.createElement("div");
	c.id = "cover"; c.style.cssText = "position:absolute;background:#fff;pointer-events:none;left:" + (r.left - 4) + "px;top:" + (r.top - 4) + "px;width:" + (r.width + 8) + "px;height:" + (r.height + 8) + "px";
	document.body.append(c); return true; })()`)
	time.Sleep(3 * time.Second) // a token would have come by now
	if got := eval[string](t, br, coveredLink); strings.Contains(got, "&ct=") {
		t.Fatalf("the covered link got its click token: %s", got)
	}
	// Nothing the page sees changes while the checks run.
	// A scroll has the checks run within a second, whatever their back-off.
	n := eval[int](t, br, `window.records = []; new MutationObserver(r => records.push(...r)).observe(document, {subtree: true, childList: true, attributes: true, characterData: true}), scrollBy(0, 1), adopted`)
	if pollHref(t, br, `adopted >= `+strconv.Itoa(n+2)+` && "ran"`) == "" {
		t.Errorf("the document's adopted style sheets were set %d times after a scroll, want the checks to run", eval[int](t, br, `adopted`)-n)
	}
	if got := eval[string](t, br, `records.map(r => r.type + " " + r.target.nodeName + " " + (r.attributeName || "")).join("; ")`); got != "" {
		t.Errorf("the checks changed the page: %s", got)
	}
	if !eval[bool](t, br, `document.adoptedStyleSheets === pageSheets && pageSheets.length === 1 && pageSheets[0] === pageSheet`) {
		t.Errorf("the page's adopted style sheets are now %d", eval[int](t, br, `document.adoptedStyleSheets.length`))
	}
	if eval[int](t, br, `rootAdopted`) < 2 {
		t.Error("the checks never gave the shadow root the pointer")
	}
	if !eval[bool](t, br, `host.shadowRoot.adoptedStyleSheets.length === 1 && host.shadowRoot.adoptedStyleSheets[0] === hostSheet`) {
		t.Errorf("the shadow root's adopted style sheets are now %d", eval[int](t, br, `host.shadowRoot.adoptedStyleSheets.length`))
	}
	eval[bool](t, br, `document.getElementById("cover").remove(), true`)
	if pollHref(t, br, `(() => { const a = document.querySelector("#under a.adlink-intext"); return /[?&]ct=/.test(a.href) ? a.href : false; })()`) == "" {
		t.Errorf("the link uncovered never got its click token: %s", eval[string](t, br, coveredLink))
	}
}

// TestFramedLinkTrustsTheBrowser: in a frame, IntersectionObserver v2
// says whether a link can be seen, as the frame's document cannot see
// what its parent paints over it. A link in a plain frame gets its click
// token; one under an opaque box of the parent's that clicks fall
// through (a page framing another to have its readers click its ads)
// keeps none (a click token, or the signature of the server's answer),
// nor does one in a frame the parent fades a little.
func TestFramedLinkTrustsTheBrowser(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}</style>` +
		`<article><p id="wrap">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende.</p></article>`
	const frame = `<iframe src="/page.html" style="border:0;width:800px;height:600px`
	site := publisher(t, map[string]string{
		"/page.html":    publisherPage("de-DE", b.URL, page),
		"/plain.html":   `<!doctype html><body style="margin:0">` + frame + `"></iframe>`,
		"/covered.html": `<!doctype html><body style="margin:0">` + frame + `"></iframe><div style="position:fixed;left:0;top:0;width:800px;height:300px;background:#fff;pointer-events:none"></div>`,
		"/faded.html":   `<!doctype html><body style="margin:0">` + frame + `;opacity:.95"></iframe>`,
	})
	asReader(t, br, b, site)
	const link = `document.querySelector("iframe").contentDocument?.querySelector("#wrap a.adlink-intext")`
	const token = `(() => { const a = ` + link + `; return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`
	br.do(t, chromedp.Navigate(site+"/plain.html"))
	if pollHref(t, br, token) == "" {
		t.Fatalf("the link in a plain frame never got its click token: %s", eval[string](t, br, `(() => { const a = `+link+`; return a ? a.href : "no link"; })()`))
	}
	for _, top := range []string{"/covered.html", "/faded.html"} {
		br.do(t, chromedp.Navigate(site+top))
		if pollHref(t, br, `(() => { const a = `+link+`; return a ? a.href : false; })()`) == "" {
			t.Fatalf("%s: no link placed in the frame", top)
		}
		time.Sleep(4 * time.Second) // its impression's second, and more
		// Matched in the page (a click token) or signed by the server's
		// answer, as the page is known by now: neither proof is kept.
		if href := eval[string](t, br, `(() => { const a = `+link+`; return a ? a.href : "no link"; })()`); regexp.MustCompile(`[?&](ct|sig)=`).MatchString(href) {
			t.Errorf("%s: the link in the frame keeps its proof: %s", top, href)
		}
	}
}

// TestCoverCheckBacksOff: while no verdict changes, the links V2 calls
// not to be seen are judged again after twice as long each time (each
// round has a page of many elements work out its style twice), and
// after a second again once the reader scrolls. The page keeps the time
// of each round; a busy machine makes a timer late, never early, so each
// gap is at least the one intended, and less than the next.
func TestCoverCheckBacksOff(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	// Records in window.looks when each task that sets the document's
	// adopted style sheets (a round of the checks) starts.
	br.onEveryPage(t, `(() => { const d = Object.getOwnPropertyDescriptor(Document.prototype, "adoptedStyleSheets");
		window.looks = []; let inTask = false;
		Object.defineProperty(Document.prototype, "adoptedStyleSheets", {configurable: true, get: d.get, set(v) {
			if (!inTask) { inTask = true; looks.push(performance.now()); queueMicrotask(() => inTask = false); } d.set.call(this, v); }}); })()`)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
		`<article><p>` + handyText + `</p><p style="margin-bottom:3000px">Ende.</p></article><div id="toaster"></div>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
		t.Fatalf("%+v, want an ad matched in the page", r)
	}
	// The rounds after 1, 3 and 7 s (the first second has each link's
	// impression checked too): the last three once 6 s have passed since
	// the first round.
	got := pollHref(t, br, `looks.length > 2 && looks.at(-1) - looks[0] >= 6000 && JSON.stringify(looks.slice(-3))`)
	if got == "" {
		t.Fatalf("the links were judged at %v ms, want rounds 6 s apart and more", eval[[]float64](t, br, `looks`))
	}
	var last [3]float64
	if err := json.Unmarshal([]byte(got), &last); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{2000, 4000} {
		// Early by a timer's rounding, at most.
		if gap := last[i+1] - last[i]; gap < want-20 || gap >= 2*want {
			t.Errorf("rounds at %.0f ms: %.0f ms apart, want %.0f ms and less than %.0f", last, gap, want, 2*want)
		}
	}
	// The next round is 8 s away: a scroll has one come after a second,
	// well before that.
	scrolled := eval[float64](t, br, `window.scrollBy(0, 1), performance.now()`)
	next := pollHref(t, br, `looks.at(-1) > `+strconv.FormatFloat(scrolled, 'f', 1, 64)+` && String(looks.at(-1))`)
	if next == "" {
		t.Fatalf("no round after the scroll at %.0f ms: %v", scrolled, eval[[]float64](t, br, `looks`))
	}
	if at, _ := strconv.ParseFloat(next, 64); at-scrolled < 1000-20 || at >= last[2]+7000 {
		t.Errorf("the round after the scroll at %.0f ms came at %.0f ms, want a second after it and before %.0f", scrolled, at, last[2]+7000)
	}
}

// TestCoverCheckLiftsOncePerRound: on a page whose empty toast layer has
// IntersectionObserver v2 say no link is to be seen, the links judged
// together (each second's, the observer's) have the widget's pointer sheet
// added to the document and taken away once, not once for each link: each
// time has a page of many elements work out its style anew.
func TestCoverCheckLiftsOncePerRound(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	// Counts the changes to the document's adopted style sheets, and the
	// tasks they come in: a task's microtasks run once it is done.
	br.onEveryPage(t, `(() => { const d = Object.getOwnPropertyDescriptor(Document.prototype, "adoptedStyleSheets");
		window.sets = 0; window.tasks = 0; let inTask = false;
		Object.defineProperty(Document.prototype, "adoptedStyleSheets", {configurable: true, get: d.get, set(v) {
			sets++; if (!inTask) { inTask = true; tasks++; queueMicrotask(() => inTask = false); } d.set.call(this, v); }}); })()`)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
		`<article><p>` + handyText + `</p><p style="margin-bottom:3000px">Ende.</p></article><div id="toaster"></div>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 3 {
		t.Fatalf("%+v, want three ads or more matched in the page", r)
	}
	time.Sleep(3500 * time.Millisecond) // the checks of three seconds: at once, after one, after two more
	if n := eval[int](t, br, `document.querySelectorAll("a.adlink-intext").length`); n < 3 {
		t.Fatalf("%d links in the page, want three or more judged together", n)
	}
	// A busy machine's timers come late.
	if pollHref(t, br, `tasks >= 3 && "judged"`) == "" {
		t.Fatalf("the adopted style sheets were set in %d tasks, want the links judged each second", eval[int](t, br, `tasks`))
	}
	sets, tasks := eval[int](t, br, `sets`), eval[int](t, br, `tasks`)
	if sets > 2*tasks {
		t.Errorf("the adopted style sheets were set %d times in %d tasks, want twice in each", sets, tasks)
	}
}

// TestCoverUnderPointerTakesProof: a box clicks fall through comes over
// a link V2 already calls not to be seen (the page's empty layer for its
// notices), which V2 tells nothing of, and the reader's pointer comes
// onto the link through it before the link is next judged (up to eight
// seconds later): the link gives up its click token as the pointer
// comes, and the pointer does not keep the verdict it had. Without V2
// (Firefox, Safari), where nothing tells of the box while the link is in
// view, the same holds, and once the box is gone the pointer coming onto
// the link again gives the token back.
func TestCoverUnderPointerTakesProof(t *testing.T) {
	b := startBackend(t)
	for _, v1 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v2", true: "without v2"}[v1], func(t *testing.T) {
			br := newBrowser(t)
			if v1 {
				br.onEveryPage(t, `delete IntersectionObserverEntry.prototype.isVisible`)
			}
			page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
				`<article><p id="wrap">Das neue Apple iPhone 15 im Test.</p><p style="margin-bottom:3000px">Ende.</p></article><div id="toaster"></div>`
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
			asReader(t, br, b, site)
			if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 1 {
				t.Fatalf("%+v, want the ad matched in the page", r)
			}
			const link = `document.querySelector("#wrap a.adlink-intext")`
			href := pollHref(t, br, `(() => { const a = `+link+`; return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`)
			if href == "" {
				t.Fatalf("the link in view never got its click token: %s", eval[string](t, br, link+`.href`))
			}
			xy := eval[[2]float64](t, br, `(() => { const r = `+link+`.getBoundingClientRect(), d = document.createElement("div");
				d.id = "cover"; d.style.cssText = "position:fixed;z-index:10000;pointer-events:none;background:#c00;left:" + (r.left - 4) + "px;top:" + (r.top - 4) + "px;width:" + (r.width + 8) + "px;height:" + (r.height + 8) + "px";
				document.body.append(d); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
			br.do(t, chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]))
			if pollHref(t, br, `(() => { const h = `+link+`.href; return /[?&](ct|sig)=/.test(h) ? false : h; })()`) == "" {
				t.Errorf("the covered link under the pointer keeps its proof: %s", eval[string](t, br, link+`.href`))
			}
			if !eval[bool](t, br, link+`.matches(":hover")`) {
				t.Errorf("the pointer is not on the link")
			}
			// Gone, the cover gives the proof back as the pointer comes
			// onto the link again, before the next look (under V2, at
			// least a second away).
			eval[bool](t, br, `document.getElementById("cover").remove(), true`)
			br.do(t, chromedp.MouseEvent(chromedp.MouseMoved, 1, 1), chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]))
			if got := eval[string](t, br, link+`.href`); got != href {
				t.Errorf("the link uncovered under the pointer is %s, want %s", got, href)
			}
		})
	}
}

// TestCoverCheckThrowSkipsNoLink: on a page whose empty toast layer has
// IntersectionObserver v2 say no link is to be seen, and whose script
// has the first ad link's getClientRects throw (a page overriding
// prototypes), the other links are judged all the same and the rounds go
// on: each link gets its click token, the one that throws too (a look
// that fails finds no cover).
func TestCoverCheckThrowSkipsNoLink(t *testing.T) {
	b := startBackend(t)
	br := newBrowser(t)
	br.onEveryPage(t, `(() => { const g = Element.prototype.getClientRects;
		Element.prototype.getClientRects = function () { if (this === document.querySelector("a.adlink-intext")) throw new Error("no rects"); return g.apply(this, arguments); }; })()`)
	page := `<style>body{background:#fff;color:#111;margin:0}p{font-size:20px;margin:0;padding:10px}#toaster{position:fixed;inset:16px;z-index:9999;pointer-events:none}</style>` +
		`<article><p>` + handyText + `</p><p style="margin-bottom:3000px">Ende.</p></article><div id="toaster"></div>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, page)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 3 {
		t.Fatalf("%+v, want three ads or more matched in the page", r)
	}
	if eval[bool](t, br, `(() => { try { document.querySelector("a.adlink-intext").getClientRects(); return true; } catch (e) { return false; } })()`) {
		t.Fatal("the first link's getClientRects does not throw")
	}
	all := `Array.from(document.querySelectorAll("a.adlink-intext"))`
	if pollHref(t, br, all+`.every(a => /[?&]ct=/.test(a.href)) && "all"`) == "" {
		t.Errorf("links without their click token: %v", eval[[]string](t, br, all+`.filter(a => !/[?&]ct=/.test(a.href)).map(a => a.href)`))
	}
}

// TestShadowRootServerLink: an ad URL of a server answer that a page
// built of custom elements places in an open shadow root, and has
// adlink.watch look at, is judged as one in the document: in view and
// under nothing, it keeps its signature, its impression counts, and the
// reader's click bills; under an opaque box of the document that lets
// clicks through, it goes without its signature, with no impression, and
// the click through the box bills nothing.
func TestShadowRootServerLink(t *testing.T) {
	for _, covered := range []bool{false, true} {
		t.Run(map[bool]string{false: "in view", true: "covered"}[covered], func(t *testing.T) {
			br, b, href, u := serverLinkInChrome(t)
			ip := "2001:db8:" + strconv.FormatInt(readers.Add(1), 16) + "::1"
			left := make(chan string, 4)
			site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, `<p>Hallo.</p>`)})
			intercept(t, br, interception{local: []string{b.URL + "/", site + "/"}, left: left, header: [2]string{"X-Forwarded-For", ip}})
			start := time.Now().Add(-time.Minute)
			br.view(t, site+"/page.html")
			// The article is a custom element; the ad's link is in its
			// shadow root, in a paragraph of the article's text.
			const place = `(href, covered) => { const h = document.body.appendChild(document.createElement("x-article")), r = h.attachShadow({mode: "open"});
				r.innerHTML = '<style>:host{display:block;background:#fff}p{font-size:20px;margin:0;padding:20px}</style><p>Zum Angebot: <a id="server-ad"></a>, heute.</p>';
				const a = r.getElementById("server-ad"); a.href = href; a.textContent = "ein Handy";
				if (covered) document.body.append(Object.assign(document.createElement("div"), {style: "position:fixed;inset:0;background:#fff;pointer-events:none"}));
				return true; }`
			evalCall[bool](t, br, place, href, covered)
			const link = `document.querySelector("x-article").shadowRoot.getElementById("server-ad")`
			if n := eval[int](t, br, `adlink.watch(document.querySelector("x-article").shadowRoot)`); n != 1 {
				t.Fatalf("adlink.watch took %d links, want the one", n)
			}
			if covered && pollHref(t, br, `(() => { const h = `+link+`.href; return /[?&]sig=/.test(h) ? false : h; })()`) == "" {
				t.Fatal("the covered link kept its signature")
			}
			time.Sleep(1500 * time.Millisecond) // the link seen, and judged again
			if got := eval[string](t, br, link+`.href`); !covered && got != href {
				t.Fatalf("the link in view is %s, want the answer's %s", got, href)
			}
			rd := reader{ip: ip}
			var imps []string
			for end := time.Now().Add(5 * time.Second); len(imps) == 0 && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				imps = rd.impressionsOf(b, u.Query().Get("adId"), start)
			}
			if len(imps) != map[bool]int{false: 1, true: 0}[covered] {
				t.Errorf("impressions of the ad: %q, want %d", imps, map[bool]int{false: 1, true: 0}[covered])
			}
			xy := eval[[2]float64](t, br, `(() => { const r = `+link+`.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
			br.do(t, chromedp.MouseClickXY(xy[0], xy[1]))
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
			if len(logged) != 1 || logged[0].Billable == covered {
				t.Errorf("clicks recorded: %+v; want one, billable: %v", logged, !covered)
			}
		})
	}
}
