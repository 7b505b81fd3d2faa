package web

import (
	_ "embed"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var (
	// nestedLinks counts the in-text links, those inside a link, a
	// drawing or a form field, and the links in an SVG drawing.
	//
	//go:embed testdata/intext/nested.js
	nestedLinks string
	// asShown is, once the widget has placed its ads, the text of each
	// in-text link, the links in the hidden paragraph and the keywords of
	// every ad.
	//
	//go:embed testdata/intext/as_shown.js
	asShown string
	// splitWordLinks is the text of each link in the paragraph where
	// markup splits a word.
	//
	//go:embed testdata/intext/split_word.js
	splitWordLinks string
	// listing tells the in-text links, where the ad box went, and the
	// links in the second article and outside #story.
	//
	//go:embed testdata/intext/listing.js
	listing string
	// intextWords is the text of each in-text link.
	//
	//go:embed testdata/intext/words.js
	intextWords string
)

// TestInTextNotNested: no in-text link goes inside another link, also one
// around the whole article, nor into an inline SVG drawing, where an HTML
// <a> is no link and breaks the drawing.
func TestInTextNotNested(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{
		// The keywords' first occurrences are in the drawing, before the text.
		"/svg.html": publisherPage("de-DE", b.URL, `<article><h1>Handy-Test</h1>
<svg width="600" height="60"><text x="0" y="20">Apple iPhone 15, Samsung Galaxy S24, Google Pixel 8, Kopfhörer</text></svg>
<p>`+handyText+`</p></article>`),
		"/teaser.html": publisherPage("de-DE", b.URL, `<a href="#more"><article><h1>Handy-Test</h1><p>`+handyText+`</p></article></a>`),
		// Some sites wrap the whole page in one form (ASP.NET WebForms): its
		// text still gets links, its fields none.
		"/webforms.html": publisherPage("de-DE", b.URL, `<form action="#"><article><h1>Handy-Test</h1><p>`+handyText+`</p>
<label>Kopfhörer <textarea>Apple iPhone 15</textarea></label></article></form>`),
	})
	type result struct {
		Intext, Nested int
		SVGLinks       int `json:"svgLinks"`
	}
	for _, path := range []string{"/svg.html", "/teaser.html", "/webforms.html"} {
		r := br.view(t, site+path)
		if r.Source != "local" || r.Links == 0 {
			t.Fatalf("%s: %+v, want ads matched in the page", path, r)
		}
		got := eval[result](t, br, nestedLinks)
		if got.Nested != 0 || got.SVGLinks != 0 {
			t.Errorf("%s: %d of %d in-text links inside a link or a drawing, %d links in the SVG", path, got.Nested, got.Intext, got.SVGLinks)
		}
		if path != "/teaser.html" && got.Intext == 0 {
			t.Errorf("%s: no in-text link in the paragraph", path)
		}
	}
	br.noConsoleErrors(t)
}

// TestPageTextAsShown: the widget reads and links the text the reader
// sees: a phrase written with a no-break space or across a line break is
// linked, and one in a text with an İ (whose lower case is longer); a soft
// hyphen joins a word (no "Handy" linked inside "Handy&shy;hülle"), and so
// does inline markup ("Apple<b>Galaxy</b>Google" holds no "Galaxy"); and
// neither a hidden paragraph, a script's text nor an element the page
// marked data-adlink is matched or linked.
func TestPageTextAsShown(t *testing.T) {
	br, _, r := openPage(t, `<article><h1>Neue Telefone</h1>
<p style="display:none">Samsung Galaxy S24</p>
<p>Das Apple iPhone&nbsp;15 und das Samsung Galaxy
S24 im Vergleich. Dazu eine Handy&shy;hülle.</p>
<p>In İstanbul kaufte er ein Smartphone. Ein Apple<b>Galaxy</b>Google gibt es nicht.</p>
<p>Ein Absatz <script>var tracking = "Google Pixel 8";</script>ohne Telefon.</p>
<div data-adlink="off"><p>Das Google Pixel 8 rendert das Skript der Seite.</p></div>
</article>`)
	if r.Source != "local" || r.Links == 0 {
		t.Fatalf("%+v, want ads matched in the page", r)
	}
	type result struct {
		Linked   []string
		Hidden   int
		Keywords []string
	}
	got := eval[result](t, br, asShown)
	for _, want := range []string{"iPhone\u00a015", "Galaxy\nS24", "Smartphone"} {
		if !slices.ContainsFunc(got.Linked, func(s string) bool { return strings.HasSuffix(s, want) }) {
			t.Errorf("no link on %q: links %q (keywords %q)", want, got.Linked, got.Keywords)
		}
	}
	// A word that markup splits ("Apple<b>Galaxy</b>Google") is no
	// "Apple", "Galaxy" or "Google": in that paragraph only "Smartphone"
	// has a link.
	if got := eval[[]string](t, br, splitWordLinks); !reflect.DeepEqual(got, []string{"Smartphone"}) {
		t.Errorf("links %q in the paragraph with a word that markup splits, want only \"Smartphone\"", got)
	}
	// (The page's title, "Handy-Test 2026", has a "Handy" of its own.)
	if slices.ContainsFunc(got.Linked, func(s string) bool { return strings.EqualFold(s, "Handy") }) {
		t.Errorf("a link on \"Handy\" inside \"Handy\u00adhülle\": links %q", got.Linked)
	}
	for _, kw := range append(got.Linked, got.Keywords...) {
		if strings.Contains(kw, "Pixel") {
			t.Errorf("%q, only in a script and a data-adlink element, matched or linked: links %q, keywords %q", kw, got.Linked, got.Keywords)
		}
	}
	if got.Hidden != 0 {
		t.Errorf("%d links in the hidden paragraph", got.Hidden)
	}
	br.noConsoleErrors(t)
}

// TestListingPage: a page of several articles (a front page's teasers) is
// read and linked whole, not only its first article, and the ad box goes
// after them, not into the first; a page of one article, with comments as
// articles inside it and a sidebar of teasers, is read from that article.
func TestListingPage(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{
		"/front.html": publisherPage("de-DE", b.URL, `<div class="teasers">
<article id="a1"><h2>Neu im Test</h2><p>Das Google Pixel 8 hat die klügste Software.</p></article>
<article id="a2"><h2>Vergleich</h2><p>Das Apple iPhone 15 gegen das Samsung Galaxy S24.</p></article>
</div>`),
		"/story.html": publisherPage("de-DE", b.URL, `<div>Das Samsung Galaxy S24 im Hinweis über Cookies.</div><article id="story"><h1>Handy-Test</h1><p>`+handyText+`</p>
<section><article class="comment"><p>Mein Kommentar.</p></article></section></article>
<aside><article><p>Mehr zum Apple iPhone 15.</p></article><article><p>Mehr zum Google Pixel 8.</p></article></aside>`),
	})
	type result struct {
		Linked    []string
		BoxIn     string
		InSecond  int
		OutsideOf int
	}
	if r := br.view(t, site+"/front.html"); r.Links == 0 {
		t.Fatalf("front page: %+v, want ads", r)
	}
	got := eval[result](t, br, listing)
	if got.InSecond == 0 || got.BoxIn == "a1" {
		t.Errorf("front page: %+v; want links in the second article too, and the box outside the first", got)
	}
	if r := br.view(t, site+"/story.html"); r.Links == 0 {
		t.Fatalf("story: %+v, want ads", r)
	}
	got = eval[result](t, br, listing)
	if got.BoxIn != "story" || got.OutsideOf != 0 || len(got.Linked) == 0 {
		t.Errorf("story with comments: %+v; want links and the box in the story only", got)
	}
	br.noConsoleErrors(t)
}

// TestWordEdges: a word ends at a line break or an element that is not
// inline ("Pixel 8<br>Neu" has "Pixel 8" whole), and goes on across inline
// markup in any container ("Foto<b>handy</b>" in a div holds no "handy").
func TestWordEdges(t *testing.T) {
	br, _, r := openPage(t, `<article><h1>Kameras</h1>
<p>Das Google Pixel 8<br>Neu im Test.</p>
<div>Ein Foto<b>handy</b> gibt es nicht.</div></article>`)
	if r.Links == 0 {
		t.Fatalf("%+v, want ads", r)
	}
	linked := eval[[]string](t, br, intextWords)
	if !slices.ContainsFunc(linked, func(s string) bool { return strings.HasSuffix(s, "Pixel 8") }) {
		t.Errorf("links %q; want one on \"Pixel 8\" before the <br>", linked)
	}
	if slices.ContainsFunc(linked, func(s string) bool { return strings.EqualFold(s, "handy") }) {
		t.Errorf("links %q; none may be on \"handy\" inside \"Foto<b>handy</b>\"", linked)
	}
	br.noConsoleErrors(t)
}

// TestKeywordSpelling: a keyword is linked where the page writes it, and
// the link covers just the keyword: one with an İ, whose lower case is
// longer; one the matcher gives without the soft hyphens the page writes
// in it ("Handyhülle" for "Handy&shy;hül&shy;le").
func TestKeywordSpelling(t *testing.T) {
	for _, c := range []struct{ name, lang, keyword, text, want string }{
		{"dotted capital I", "tr-TR", "İSTANBUL Reisen", "Unsere İSTANBUL Reisen ab 199 Euro.", "İSTANBUL Reisen"},
		{"soft hyphens", "de-DE", "Handyhülle", "Eine Handy&shy;hül&shy;le für das Telefon.", "Handy\u00adhül\u00adle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := newBrowser(t)
			b := startBackend(t)
			answerPageWith(t, br, `{"link": [{"title": "Ad", "keywords": [`+jsonString(c.keyword)+`], "ad": "http://ads.example/a", "display_type": ["link"]}]}`)
			site := publisher(t, map[string]string{"/page.html": publisherPage(c.lang, b.URL, "<article><p>"+c.text+"</p></article>")})
			br.view(t, site+"/page.html")
			if got := eval[[]string](t, br, intextWords); !reflect.DeepEqual(got, []string{c.want}) {
				t.Errorf("links %q, want one on %q", got, c.want)
			}
			br.noConsoleErrors(t)
		})
	}
}

// countBoxes counts the widget's questions about the box and visibility
// of the element with id "long" (window.adlinkAsked).
//
//go:embed testdata/intext/count_boxes.js
var countBoxes string

// TestLongTextOneElement: a page whose text is one paragraph's thousands of
// lines between <br>s gets its links, and the widget asks where that
// element is a few times, not once for each line: the box of an element
// of thousands of lines takes as long to work out each time, and a page
// of that kind held the page's thread for seconds.
func TestLongTextOneElement(t *testing.T) {
	br := newBrowser(t)
	br.onEveryPage(t, countBoxes)
	b := startBackend(t)
	lines := slices.Repeat([]string{strings.ReplaceAll(handyText, "\n", " ")}, 2000)
	site := publisher(t, map[string]string{
		"/long.html": sparsePage("de-DE", b.URL, `<article><h1>Handy-Test</h1><p id="long">`+strings.Join(lines, "<br>\n")+`</p></article>`),
	})
	if r := br.view(t, site+"/long.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("%+v, want ads matched in the page", r)
	}
	if n := eval[int](t, br, "window.adlinkAsked"); n > 20 {
		t.Errorf("the widget asked for the long element's box or visibility %d times", n)
	}
	if n := eval[int](t, br, `document.querySelectorAll("#long a.adlink-intext").length`); n == 0 {
		t.Errorf("no in-text link in the long element")
	}
	br.noConsoleErrors(t)
}
