package web

import (
	_ "embed"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var (
	// nextPage plays a single-page app's next page: a new address and
	// article, and adlink.refresh called twice, the first superseded.
	//
	//go:embed testdata/refresh/next_page.js
	nextPage string
	// restoredText refreshes and gives the paragraph's text and nodes.
	//
	//go:embed testdata/refresh/restored.js
	restoredText string
	// heldNodes is the page's script that writes #p as four text nodes
	// and holds them in window.held, as a framework does.
	//
	//go:embed testdata/refresh/held_nodes.js
	heldNodes string
	// lookNodes is a function that gives the in-text links, the text of #p
	// and of the nodes the page holds, and whether they are still in #p.
	//
	//go:embed testdata/refresh/look.js
	lookNodes string
	// clearedNodes, called with lookNodes, refreshes twice, looks, and
	// refreshes again.
	//
	//go:embed testdata/refresh/cleared.js
	clearedNodes string
	//go:embed testdata/refresh/own.js
	ownElement string
	// pageUpdate sets the text of the page's own nodes and refreshes at a
	// new address.
	//
	//go:embed testdata/refresh/page_update.js
	pageUpdate string
	// pageChanges normalizes a paragraph that starts with a link, copies
	// another with its links into #slider, and refreshes.
	//
	//go:embed testdata/refresh/page_changes.js
	pageChanges string
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
	if r := br.view(t, site+"/app/1"); r.Links == 0 {
		t.Fatalf("first page: %+v, want ads", r)
	}
	type view struct {
		Source        string
		Intext, Boxes int
		Words         []string
		Text          string
		Asked         bool
	}
	got := eval[view](t, br, nextPage)
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
	}](t, br, restoredText)
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
`+inlineScript(heldNodes)),
		"/page.xhtml": `<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" lang="de-DE"><head><title>Handy-Test</title><link rel="icon" href="data:,"/>` + script + `</head>
<body><article><h1>Handy-Test</h1><p id="p">` + handyText + `</p></article></body></html>`,
	})
	for _, path := range []string{"/nodes.html", "/page.xhtml"} {
		if r := br.view(t, site+path); r.Source != "local" || r.Links == 0 {
			t.Fatalf("%s: %+v, want ads matched in the page", path, r)
		}
		type state struct {
			Links    int
			Text     string
			Held     []string
			Attached bool
		}
		before := evalCall[state](t, br, lookNodes)
		if before.Links == 0 {
			t.Fatalf("%s: no in-text links to take out", path)
		}
		// A refresh takes them out, and the page is as it was; two more in
		// a row find nothing to take out (their ads come later).
		after := evalCall[state](t, br, clearedNodes, jsSource(lookNodes))
		want := before.Text
		if after.Links != 0 || after.Text != want || !after.Attached {
			t.Errorf("%s: after clearing %+v; want no links, the text %q, the page's nodes in place", path, after, want)
		}
		if path == "/nodes.html" && !reflect.DeepEqual(after.Held, []string{"Wir haben das ", "Apple iPhone 15", " und das Samsung Galaxy S24 getestet.", ""}) {
			t.Errorf("the page's own nodes hold %q after clearing", after.Held)
		}
		// The page's own element with data-adlink is none of the widget's.
		if own := eval[string](t, br, ownElement); path == "/nodes.html" && own != `<p data-adlink="intext" id="own">Eigenes</p>` {
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
	if r := br.view(t, site+"/nodes.html?v=1"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("%+v, want ads matched in the page", r)
	}
	type update struct {
		Cut     int
		Cleared string
		Linked  []string
	}
	got := eval[update](t, br, pageUpdate)
	if got.Cut == 0 {
		t.Fatalf("no link was cut from the page's own nodes: %+v", got)
	}
	if want := "Wir haben das Google Pixel 8 und das Fairphone 5 getestet."; got.Cleared != want {
		t.Errorf("after the page set its text: %q, want %q", got.Cleared, want)
	}
	if !slices.ContainsFunc(got.Linked, func(s string) bool { return strings.HasSuffix(s, "Pixel 8") }) {
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
	got := eval[result](t, br, pageChanges)
	if !got.StartLinked {
		t.Fatalf("no link at the start of #n: the test checks nothing (%+v)", got)
	}
	if got.N != "Galaxy S24 heißt das Samsung-Flaggschiff." || got.CopyLinks != 0 || got.Copy != got.Orig || got.Orig != handyText {
		t.Errorf("after the page's changes and a refresh: %+v", got)
	}
	br.noConsoleErrors(t)
}
