package web

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// withBox is page with data-box="id" on the widget's tag: the id of the
// ad box's slot.
func withBox(page, id string) string {
	return strings.Replace(page, ` data-base="`, ` data-box="`+id+`" data-base="`, 1)
}

// TestCommentCannotChooseTheSlot: a reader's comment on the page may hold
// an element with data-adlink-box, the id of the slot the tag names, or
// paragraphs of its own after the article's last; none of these puts the
// ad box into the comment, where its markup could hide the box (and have
// impressions reported for ads nobody sees) or lay it over the page. Only
// the tag names the slot, and the one element with its id is the slot.
func TestCommentCannotChooseTheSlot(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	story := func(comments string) string {
		return `<main><article id="story"><h1>Handy-Test</h1><p id="last">` + handyText + `</p>
<div class="comments">` + comments + `</div></article><div id="slot"></div></main>`
	}
	// A page with neither a main part nor an article of its own.
	plain := func(comments string) string {
		return `<div id="story"><h1>Handy-Test</h1><p id="last">` + handyText + `</p></div>
<div class="comments">` + comments + `</div>`
	}
	comment := `<p>Erster! Das Samsung Galaxy S24 ist besser.</p>`
	site := publisher(t, map[string]string{
		// The page names no slot; a comment does.
		"/attribute.html": publisherPage("de-DE", b.URL, story(`<div id="c" data-adlink-box></div>`)),
		// The page marks its slot as earlier versions read it, with
		// data-adlink-box; a comment does too, and the tag names none.
		"/legacy.html": publisherPage("de-DE", b.URL, strings.Replace(story(`<div id="c" data-adlink-box></div>`), `<div id="slot">`, `<div id="slot" data-adlink-box>`, 1)),
		// The tag names the slot; a comment marks itself with data-adlink-box.
		"/named.html": withBox(publisherPage("de-DE", b.URL, story(`<div id="c" data-adlink-box></div>`)), "slot"),
		// The page names its slot; a comment, before it, has its id too.
		"/copied.html": withBox(publisherPage("de-DE", b.URL, story(`<div id="slot" data-adlink-box></div>`)), "slot"),
		// The page names no slot; a comment's paragraph is the page's last.
		"/paragraph.html": publisherPage("de-DE", b.URL, story(`<div id="c"><p>Erster! Ich habe ein Handy.</p></div>`)),
		// The page names its slot, and no comment copies it.
		"/slot.html": withBox(publisherPage("de-DE", b.URL, story(`<p>Erster!</p>`)), "slot"),
		// A comment is the page's one article, or its main part: its
		// text would be the page's, and the box would follow it.
		"/article.html": publisherPage("de-DE", b.URL, plain(`<article id="c">`+comment+`</article>`)),
		"/main.html":    publisherPage("de-DE", b.URL, plain(`<div id="c" role="main">`+comment+`</div>`)),
	})
	type result struct {
		Parent, AfterText string
		Last              bool
	}
	for path, want := range map[string]result{
		"/attribute.html": {Parent: "story", AfterText: "last"},
		"/legacy.html":    {Parent: "slot"},
		"/named.html":     {Parent: "slot"},
		"/copied.html":    {}, // no box: the page has two slots of that id
		"/paragraph.html": {Parent: "story", AfterText: "last"},
		"/slot.html":      {Parent: "slot"},
		"/article.html":   {Parent: "story", AfterText: "last"},
		"/main.html":      {Parent: "story", AfterText: "last"},
	} {
		if r := br.view(t, site+path); r.Links == 0 {
			t.Fatalf("%s: %+v, want ads", path, r)
		}
		if got := eval[result](t, br, boxPlace); got != want {
			t.Errorf("%s: box %+v, want %+v", path, got, want)
		}
		if in := eval[bool](t, br, `!!document.querySelector(".comments [data-adlink]")`); in {
			t.Errorf("%s: an ad is in a comment", path)
		}
	}
	br.noConsoleErrors(t)
}

// boxTokens counts the ad box's links and those of them with a click
// token, a moment after the in-text ad's token came: a link seen with it
// would have had its token in the same answer.
const boxTokens = `new Promise(r => setTimeout(r, 2500)).then(() => {
	const links = [...document.querySelectorAll("aside.adlink-box a.adlink-ad")];
	return [links.length, links.filter(a => /[?&]ct=/.test(a.href)).length];
})`

// TestHiddenSlotGetsNoImpressions: an ad box in a slot in view that the
// reader cannot see (transparent, hidden, faint, scaled down to a speck,
// blended into the page's white, zero-size or off the page)
// reports no impression, and its ads get no click token; once the slot
// shows, they do.
func TestHiddenSlotGetsNoImpressions(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	// The last two held before the widget judged what a reader sees: the
	// observer finds them out of view.
	hides := []string{"opacity:0", "visibility:hidden", "opacity:.2", "filter:opacity(0)", "transform:scale(.01)", "mix-blend-mode:screen", "height:0;overflow:hidden", "position:absolute;left:-9999px"}
	pages := map[string]string{}
	for i, hide := range hides {
		pages["/"+strconv.Itoa(i)+".html"] = withBox(publisherPage("de-DE", b.URL,
			`<article><h1>Handy-Test</h1><div id="slot" style="`+hide+`"></div><p>`+handyText+`</p></article>`), "slot")
	}
	site := publisher(t, pages)
	asReader(t, br, b, site) // a headless browser is a bot: its impressions get no click token
	for i, hide := range hides {
		t.Run(hide, func(t *testing.T) {
			if r := br.view(t, site+"/"+strconv.Itoa(i)+".html"); r.Source != "local" || r.Links == 0 {
				t.Fatalf("%+v, want ads matched in the page", r)
			}
			if pollHref(t, br, tokenHref) == "" {
				t.Fatal("the in-text ad, in view, never got its click token")
			}
			got := eval[[2]int](t, br, boxTokens)
			if got[0] == 0 {
				t.Fatal("no ad box")
			}
			if got[1] != 0 {
				t.Errorf("%d of the %d ads in the hidden box got a click token", got[1], got[0])
			}
			eval[string](t, br, `document.getElementById("slot").style.cssText = ""`)
			if pollHref(t, br, `(() => { const a = document.querySelector("aside.adlink-box a.adlink-ad"); return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`) == "" {
				t.Error("the box's ads, shown, never got a click token")
			}
		})
	}
	br.noConsoleErrors(t)
}

// TestPlantedTagIsNotTheWidgets: where the browser names no running script
// (the tag loaded as a module), the widget looks for its tag in the page.
// A comment's markup the page rendered may hold an inert copy of it, first
// in the page, whose data-base names another server and data-box a slot
// of its own: the widget takes neither it nor its attributes. Without the
// copy, the tag is found and the page has its ads.
func TestPlantedTagIsNotTheWidgets(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var asked atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		http.NotFound(w, r)
	}))
	t.Cleanup(evil.Close)
	// json.Marshal writes < as \u003c: the inline script holds no </script>.
	planted := `<p>Erster! <script src="` + evil.URL + `/widget.js" data-api-key="demo" data-site-id="demo" data-box="c" data-base="` + evil.URL + `"></script></p><div id="c"></div>`
	page := func(comment string) string {
		return `<!doctype html>
<html lang="de-DE">
<head><meta charset="utf-8"><title>Handy-Test 2026</title><link rel="icon" href="data:,"></head>
<body>
<article><p>` + handyText + `</p><div class="comments" id="comments"></div></article>
<script>document.getElementById("comments").innerHTML = ` + jsonString(comment) + `;</script>
<script type="module" src="` + b.URL + `/widget.js" data-api-key="demo" data-site-id="demo" data-link-density="1000" data-base="` + b.URL + `"></script>
</body>
</html>`
	}
	site := publisher(t, map[string]string{"/copy.html": page(planted), "/tag.html": page(`<p>Erster!</p>`)})
	r := br.view(t, site+"/tag.html")
	if base := eval[string](t, br, "adlink.config.base"); base != b.URL || r.Links == 0 {
		t.Fatalf("the tag alone: base %q, %+v; want %q and the page's ads", base, r, b.URL)
	}
	asked.Store(0)
	br.view(t, site+"/copy.html")
	if base := eval[string](t, br, "adlink.config.base"); base == evil.URL {
		t.Errorf("the widget's base is the comment's %q", base)
	}
	if in := eval[bool](t, br, `!!document.querySelector("#c [data-adlink=box]")`); in {
		t.Error("the ad box is in the comment's slot")
	}
	eval[int](t, br, settle)
	if n := asked.Load(); n > 0 {
		t.Errorf("the comment's server was asked %d times", n)
	}
}

// TestFaintOverlayGetsNoLink: a comment's markup may lay text over the
// whole page, almost transparent, for a reader's click anywhere to land on
// the ad linked in it: its opacity above 0, a filter's opacity(), its
// colour transparent (the page's links take the text's colour, as with
// Tailwind's "a { color: inherit }", and the text's fill is the link's), or
// its colours blended into the page's white (a blue link too).
// The widget links no text the reader cannot see well: only the visible
// mention gets its link.
func TestFaintOverlayGetsNoLink(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	faint := []string{"opacity:.05", "filter:opacity(.05)", "filter:opacity(5%)", "color:transparent", "color:rgba(0,0,0,.02)", "-webkit-text-fill-color:transparent", "mix-blend-mode:screen"}
	pages := map[string]string{}
	for i, f := range faint {
		pages["/"+strconv.Itoa(i)+".html"] = publisherPage("de-DE", b.URL, `<style>a{color:inherit}</style><article><h1>Handy-Test</h1>
<p>Das Google Pixel 8 ist gut.</p>
<div><p style="position:fixed;inset:0;margin:0;z-index:9;font-size:120px;`+f+`">Das Fairphone 5</p></div></article>`)
	}
	site := publisher(t, pages)
	answerPageWith(t, br, `{"link": [
		{"title": "Ad", "keywords": ["Pixel 8"], "ad": "http://ads.example/a", "display_type": ["link"]},
		{"title": "Ad", "keywords": ["Fairphone 5"], "ad": "http://ads.example/b", "display_type": ["link"]}]}`)
	for i, f := range faint {
		if r := br.view(t, site+"/"+strconv.Itoa(i)+".html"); r.Source != "server" {
			t.Fatalf("%s: %+v, want the server's answer", f, r)
		}
		if got := eval[[]string](t, br, `Array.from(document.querySelectorAll("a.adlink-intext"), a => a.textContent)`); !slices.Equal(got, []string{"Pixel 8"}) {
			t.Errorf("%s: links %q, want only the visible \"Pixel 8\"", f, got)
		}
	}
	br.noConsoleErrors(t)
}

// TestFadeInGetsLinks: a page that fades its article in as it loads (from
// opacity 0, for a second) has its text faint while the widget places the
// ads; its links wait for the fade-in (not for a spinner beside it, which
// runs on), and it gets them.
func TestFadeInGetsLinks(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	const fade = `<style>@keyframes fade{from{opacity:0}to{opacity:1}} @keyframes spin{to{transform:rotate(1turn);opacity:.5}}
article{animation:fade 1s} #spinner{animation:spin 1s infinite}</style>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, fade+`<div id="spinner">*</div><article><h1>Handy-Test</h1><p>`+handyText+`</p></article>`)})
	answerPageWith(t, br, `{"link": [
		{"title": "Ad", "keywords": ["Pixel 8"], "ad": "http://ads.example/a", "display_type": ["link"]},
		{"title": "Ad", "keywords": ["Galaxy S24"], "ad": "http://ads.example/b", "display_type": ["link"]}]}`)
	if r := br.view(t, site+"/page.html"); r.Source != "server" {
		t.Fatalf("%+v, want the server's answer", r)
	}
	if got := eval[[]string](t, br, `Array.from(document.querySelectorAll("a.adlink-intext"), a => a.textContent)`); !slices.Equal(got, []string{"Galaxy S24", "Pixel 8"}) {
		t.Errorf("links %q, want both ads in the article faded in", got)
	}
	br.noConsoleErrors(t)
}
