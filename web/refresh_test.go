package web

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestRefresh: a single-page app changes its article and URL and calls
// adlink.refresh(): the old ads go, the text they were in is whole again,
// and the new page's ads come, asked for at the new URL. A refresh while
// the last one is on its way places one set of ads, not two.
func TestRefresh(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{
		"/app/1": publisherPage("de-DE", b.URL, `<article id="a"><h1>Handy-Test</h1><p>`+handyText+`</p></article>`),
	})
	br.do(t, chromedp.Navigate(site+"/app/1"))
	if r := eval[readyResult](t, br, widgetReady); r.Links == 0 {
		t.Fatalf("first page: %+v, want ads", r)
	}
	type view struct {
		Source        string
		Intext, Boxes int
		Words         []string
		Text          string
		Asked         bool
	}
	const next = `(async () => {
		history.pushState(null, "", "/app/2");
		const a = document.getElementById("a");
		const before = a.textContent;
		adlink.refresh(); // superseded at once
		a.innerHTML = "<h1>Kopfhörer im Test</h1><p>Gute Kopfhörer für das Samsung Galaxy S24.</p>";
		const r = await adlink.refresh();
		return {
			source: r.source,
			intext: document.querySelectorAll("a.adlink-intext").length,
			boxes: document.querySelectorAll("[data-adlink=box]").length,
			words: [...document.querySelectorAll("a.adlink-intext")].map(a => a.textContent),
			text: before,
			asked: performance.getEntriesByType("resource").some(e => e.name.includes("/v2/page/link") && e.name.includes(encodeURIComponent("/app/2"))),
		};
	})()`
	got := eval[view](t, br, next)
	if got.Boxes != 1 || got.Intext == 0 || !got.Asked {
		t.Errorf("after refresh: %+v; want one set of the new page's ads, asked for at /app/2", got)
	}
	for _, w := range got.Words {
		if !strings.Contains("Kopfhörer im Test Gute Kopfhörer für das Samsung Galaxy S24.", w) {
			t.Errorf("in-text link %q is not in the new page's text", w)
		}
	}
	// Taking the links out leaves the text as it was, in one node per block.
	restored := eval[struct {
		Text  string
		Nodes int
	}](t, br, `(() => {
		adlink.refresh();
		const p = document.querySelector("#a p");
		return {text: p.textContent, nodes: p.childNodes.length};
	})()`)
	if restored.Text != "Gute Kopfhörer für das Samsung Galaxy S24." || restored.Nodes != 1 {
		t.Errorf("after clearing: %q in %d nodes, want the paragraph's text in one", restored.Text, restored.Nodes)
	}
	if !strings.Contains(got.Text, "Samsung Galaxy S24") {
		t.Errorf("first page's text %q", got.Text)
	}
	br.noConsoleErrors(t)
}

// TestRefreshKeepsPageNodes: adlink.refresh takes the in-text links out
// without touching the page's own nodes, which a framework holds (React
// keeps one text node per expression, Vue empty ones as anchors): each
// keeps its text and its place. Also on an XHTML page, where element names
// are lower case.
func TestRefreshKeepsPageNodes(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	script := `<script async="async" src="` + b.URL + `/widget.js" data-api-key="demo" data-site-id="demo" data-base="` + b.URL + `"></script>`
	site := publisher(t, map[string]string{
		"/nodes.html": publisherPage("de-DE", b.URL, `<article><h1>Handy-Test</h1><p id="p"></p><p data-adlink="intext" id="own">Eigenes</p></article>
<script>
const p = document.getElementById("p");
window.held = ["Wir haben das ", "Apple iPhone 15", " und das Samsung Galaxy S24 getestet.", ""].map(s => p.appendChild(document.createTextNode(s)));
</script>`),
		"/page.xhtml": `<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" lang="de-DE"><head><title>Handy-Test</title><link rel="icon" href="data:,"/>` + script + `</head>
<body><article><h1>Handy-Test</h1><p id="p">` + handyText + `</p></article></body></html>`,
	})
	for _, path := range []string{"/nodes.html", "/page.xhtml"} {
		br.do(t, chromedp.Navigate(site+path))
		if r := eval[readyResult](t, br, widgetReady); r.Source != "local" || r.Links == 0 {
			t.Fatalf("%s: %+v, want ads matched in the page", path, r)
		}
		type state struct {
			Links    int
			Text     string
			Held     []string
			Attached bool
		}
		const look = `({
			links: document.querySelectorAll("a.adlink-intext").length,
			text: document.getElementById("p").textContent,
			held: window.held ? held.map(n => n.nodeValue) : [],
			attached: window.held ? held.every(n => n.parentNode === document.getElementById("p")) : true,
		})`
		before := eval[state](t, br, look)
		if before.Links == 0 {
			t.Fatalf("%s: no in-text links to take out", path)
		}
		// A refresh takes them out, and the page is as it was; two more in
		// a row find nothing to take out (their ads come later).
		after := eval[state](t, br, `(adlink.refresh(), adlink.refresh(), (() => { const s = `+look+`; adlink.refresh(); return s; })())`)
		want := before.Text
		if after.Links != 0 || after.Text != want || !after.Attached {
			t.Errorf("%s: after clearing %+v; want no links, the text %q, the page's nodes in place", path, after, want)
		}
		if path == "/nodes.html" && !reflect.DeepEqual(after.Held, []string{"Wir haben das ", "Apple iPhone 15", " und das Samsung Galaxy S24 getestet.", ""}) {
			t.Errorf("the page's own nodes hold %q after clearing", after.Held)
		}
		// The page's own element with data-adlink is none of the widget's.
		if own := eval[string](t, br, `document.getElementById("own") ? document.getElementById("own").outerHTML : "gone"`); path == "/nodes.html" && own != `<p data-adlink="intext" id="own">Eigenes</p>` {
			t.Errorf("after refresh, the page's own data-adlink element is %s", own)
		}
		if path == "/page.xhtml" && after.Text != handyText {
			t.Errorf("XHTML: paragraph %q after clearing, want %q", after.Text, handyText)
		}
	}

	// A framework sets its own node's text, the one a link was cut from,
	// and refreshes at a new address: the page's new text stands, without
	// the old link's text or the rest cut after it, and the new text gets
	// its links.
	// (A new address: the server has analysed the first, whose text it
	// read without the page's script.)
	br.do(t, chromedp.Navigate(site+"/nodes.html?v=1"))
	if r := eval[readyResult](t, br, widgetReady); r.Source != "local" || r.Links == 0 {
		t.Fatalf("%+v, want ads matched in the page", r)
	}
	type update struct {
		Cut     int
		Cleared string
		Linked  []string
	}
	got := eval[update](t, br, `(async () => {
		const linked = held.filter(n => n.nextSibling && n.nextSibling.localName === "a").length;
		held[1].nodeValue = "Google Pixel 8";
		held[2].nodeValue = " und das Fairphone 5 getestet.";
		history.pushState(null, "", "/nodes.html?v=2");
		const ready = adlink.refresh();
		const cleared = document.getElementById("p").textContent;
		await ready;
		return {cut: linked, cleared, linked: [...document.querySelectorAll("#p a")].map(a => a.textContent)};
	})()`)
	if got.Cut == 0 {
		t.Fatalf("no link was cut from the page's own nodes: %+v", got)
	}
	if want := "Wir haben das Google Pixel 8 und das Fairphone 5 getestet."; got.Cleared != want {
		t.Errorf("after the page set its text: %q, want %q", got.Cleared, want)
	}
	if !slices.Contains(got.Linked, "Pixel 8") {
		t.Errorf("links %q; want one on the page's new \"Pixel 8\"", got.Linked)
	}
	br.noConsoleErrors(t)
}

// TestRefreshAfterPageChanges: the page's own changes between views do
// not make adlink.refresh lose text or leave old links: after the page's
// normalize() dropped the empty node a link at a node's start leaves, the
// linked text stays; a copy the page made of a paragraph with links loses
// the links, not the text.
func TestRefreshAfterPageChanges(t *testing.T) {
	br, _, r := openPage(t, `<article><h1>Test</h1><p id="n">Galaxy S24 heißt das Samsung-Flaggschiff.</p>
<p id="c">`+handyText+`</p><div id="slider"></div></article>`)
	if r.Links == 0 {
		t.Fatalf("%+v, want ads", r)
	}
	type result struct {
		N, Copy, Orig string
		StartLinked   bool
		CopyLinks     int
	}
	got := eval[result](t, br, `(() => {
		const n = document.getElementById("n"), startLinked = n.querySelector("a") !== null && n.firstChild.nodeValue === "";
		n.normalize();
		document.getElementById("slider").appendChild(document.getElementById("c").cloneNode(true));
		adlink.refresh();
		const copy = document.querySelector("#slider p");
		return {startLinked, n: n.textContent, copy: copy.textContent, orig: document.getElementById("c").textContent, copyLinks: copy.querySelectorAll("a").length};
	})()`)
	if !got.StartLinked {
		t.Fatalf("no link at the start of #n: the test checks nothing (%+v)", got)
	}
	if got.N != "Galaxy S24 heißt das Samsung-Flaggschiff." || got.CopyLinks != 0 || got.Copy != got.Orig || got.Orig != handyText {
		t.Errorf("after the page's changes and a refresh: %+v", got)
	}
	br.noConsoleErrors(t)
}
