package web

import (
	_ "embed"
	"slices"
	"strings"
	"testing"
)

var (
	// hiddenLinks tells the in-text links, those in the hidden cases (in
	// a template's content or a noscript too) and the ads' keywords.
	//
	//go:embed testdata/trust/hidden.js
	hiddenLinks string
	// densityLinks tells the in-text links, the most any one ad has, how
	// many stand right beside another, and the article's words.
	//
	//go:embed testdata/trust/density.js
	densityLinks string
	// boxPlace tells where the ad box went: its parent's id (or name), the
	// id of the element before it, and whether it is the body's last child.
	//
	//go:embed testdata/trust/box.js
	boxPlace string
)

// hiddenCases is an article with one product a reader sees and a product
// in each way a page hides text or keeps it out of the article: a comment
// form, opacity:0 (on the text or around it), visibility:hidden, a
// zero-size box, a "screen reader only" one, off the page, aria-hidden,
// inert, a dialog not open, a template and noscript.
const hiddenCases = `<article><h1>Kameras</h1>
<p>Das Google Pixel 8 ist gut.</p>
<form class="h"><p class="h">Ich mag den Kindle Paperwhite.</p><textarea>Kindle</textarea></form>
<p class="h" style="opacity:0">Die AirPods Max</p>
<div style="opacity:0"><p class="h">Der Dyson V8 Absolute</p></div>
<p class="h" style="visibility:hidden">Die Canon EOS 2000D</p>
<div style="width:0;height:0;overflow:hidden"><p class="h">Die Fitbit Charge 6</p></div>
<p>Vorgelesen: <span class="h" style="position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0,0,0,0)">die Bose SoundLink Flex</span></p>
<p class="h" style="position:absolute;left:-9999px">Die GoPro HERO12 Black</p>
<p class="h" style="text-indent:-9999px;overflow:hidden">Die Garmin Forerunner 265</p>
<p class="h" aria-hidden="true">Der Brother HL-L2350DW</p>
<div inert><p class="h">Der Asus ProArt PA278CV</p></div>
<dialog><p class="h">Der Epson EcoTank ET-2850</p></dialog>
<template><p class="h">Die Fujifilm X-T5</p></template>
<noscript><p class="h">Die Amazfit GTR 4</p></noscript>
</article>`

// hiddenWords are the words of the hidden cases' products.
var hiddenWords = []string{"Kindle", "AirPods", "Dyson", "Canon", "Fitbit", "Bose", "GoPro", "Garmin", "Brother", "Asus", "Epson", "Fujifilm", "Amazfit"}

// TestNoLinksInFormsOrHiddenText: no in-text link goes into a form inside
// the article or into text the reader cannot see, whatever hides it; and
// the text of a form or a hidden block is not matched either (text hidden
// inside a paragraph, which the paragraph's text holds, is only not
// linked).
func TestNoLinksInFormsOrHiddenText(t *testing.T) {
	type result struct {
		Linked, Hidden, Keywords []string
	}
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, hiddenCases)})
	// Matched in the page.
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("%+v, want ads matched in the page", r)
	}
	got := eval[result](t, br, hiddenLinks)
	if len(got.Hidden) != 0 || !slices.ContainsFunc(got.Linked, func(s string) bool { return strings.Contains(s, "Pixel 8") }) {
		t.Errorf("links %q, %q of them hidden; want one on the visible Pixel 8 and none hidden", got.Linked, got.Hidden)
	}
	for _, kw := range got.Keywords {
		for _, w := range hiddenWords {
			if strings.Contains(kw, w) && w != "Bose" && w != "Garmin" {
				t.Errorf("keyword %q matched in hidden text or a form", kw)
			}
		}
	}
	// The server's answer names every product: only the visible one is linked.
	var ads []string
	for i, w := range append([]string{"Pixel 8"}, hiddenWords...) {
		ads = append(ads, `{"title": "Ad", "keywords": [`+jsonString(w)+`], "ad": "http://ads.example/`+string(rune('a'+i))+`", "display_type": ["link"]}`)
	}
	answerPageWith(t, br, `{"link": [`+strings.Join(ads, ",")+`]}`)
	if r := br.view(t, site+"/page.html"); r.Source != "server" {
		t.Fatalf("%+v, want the server's answer", r)
	}
	got = eval[result](t, br, hiddenLinks)
	if len(got.Hidden) != 0 || !slices.Equal(got.Linked, []string{"Pixel 8"}) {
		t.Errorf("links %q, %q of them hidden; want only the visible \"Pixel 8\"", got.Linked, got.Hidden)
	}
	br.noConsoleErrors(t)
}

// TestLinkDensity: each ad is linked once, on its longest phrase (brand and
// model together, not as two links side by side), and a page gets at most
// data-link-density links per 1,000 words (5 by default, at least one);
// "0" places none.
func TestLinkDensity(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var long strings.Builder
	for range 12 {
		long.WriteString("<p>" + handyText + "</p>\n")
	}
	site := publisher(t, map[string]string{
		"/short.html": sparsePage("de-DE", b.URL, "<article><p>"+handyText+"</p></article>"),
		"/long.html":  sparsePage("de-DE", b.URL, "<article>"+long.String()+"</article>"),
		"/none.html": strings.Replace(sparsePage("de-DE", b.URL, "<article><p>"+handyText+"</p></article>"),
			` data-base=`, ` data-link-density="0" data-base=`, 1),
		"/dense.html": publisherPage("de-DE", b.URL, "<article><p>"+handyText+"</p></article>"),
	})
	type result struct {
		Linked        []string
		PerAd, Beside int
		Words         int
	}
	for _, tc := range []struct {
		path    string
		density float64
	}{
		{"/short.html", 5}, {"/long.html", 5}, {"/none.html", 0}, {"/dense.html", 1000},
	} {
		if r := br.view(t, site+tc.path); r.Links == 0 {
			t.Fatalf("%s: %+v, want ads", tc.path, r)
		}
		got := eval[result](t, br, densityLinks)
		limit := 0
		if tc.density > 0 {
			limit = max(1, int(float64(got.Words)*tc.density/1000+0.5))
		}
		if len(got.Linked) > limit || (tc.density > 0 && len(got.Linked) == 0) {
			t.Errorf("%s: %d links %q in %d words, want 1 to %d", tc.path, len(got.Linked), got.Linked, got.Words, limit)
		}
		if got.PerAd > 1 || got.Beside > 0 {
			t.Errorf("%s: links %q: %d for one ad, %d beside another; want one an ad, none side by side", tc.path, got.Linked, got.PerAd, got.Beside)
		}
		if tc.path == "/dense.html" && !slices.Contains(got.Linked, "Apple iPhone 15") {
			t.Errorf("%s: links %q, want brand and model as one link, \"Apple iPhone 15\"", tc.path, got.Linked)
		}
	}
	br.noConsoleErrors(t)
}

// TestBoxSlot: the ad box goes into the element whose id the tag names
// (data-box); without one, after the last paragraph of the article, not
// after the comments or at the end of the body.
func TestBoxSlot(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	article := `<main><article id="story"><h1>Handy-Test</h1><p id="last">` + handyText + `</p>
<section id="comments"><article><p>Ein Kommentar.</p></article></section></article>
<div id="related"><p>Mehr Artikel</p></div></main><footer><p>Impressum</p></footer>`
	site := publisher(t, map[string]string{
		"/slot.html":    withBox(publisherPage("de-DE", b.URL, `<div id="slot"></div>`+article), "slot"),
		"/no-slot.html": publisherPage("de-DE", b.URL, article),
	})
	type result struct {
		Parent, AfterText string
		Last              bool
	}
	for path, want := range map[string]result{
		"/slot.html":    {Parent: "slot"},
		"/no-slot.html": {Parent: "story", AfterText: "last"},
	} {
		if r := br.view(t, site+path); r.Links == 0 {
			t.Fatalf("%s: %+v, want ads", path, r)
		}
		if got := eval[result](t, br, boxPlace); got != want {
			t.Errorf("%s: box %+v, want %+v", path, got, want)
		}
	}
	br.noConsoleErrors(t)
}

// TestLanguageWithoutCountry: a page whose language names no country gets
// the ads of the one market in that language, matched in the page and
// then from the server; a page in a language no market runs in gets none,
// from either.
func TestLanguageWithoutCountry(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{
		"/de.html": publisherPage("de", b.URL, "<article><p>"+handyText+"</p></article>"),
		"/cs.html": publisherPage("cs", b.URL, "<article><p>"+handyText+"</p></article>"),
	})
	for _, tc := range []struct {
		path string
		ads  bool
	}{{"/de.html", true}, {"/cs.html", false}} {
		r := br.view(t, site+tc.path)
		if r.Source != "local" || (r.Links > 0) != tc.ads {
			t.Errorf("%s, first view: %+v; want ads matched in the page: %v", tc.path, r, tc.ads)
		}
		b.waitAnalysed(t, site+tc.path)
		r = br.view(t, site+tc.path)
		if r.Source != "server" || (r.Links > 0) != tc.ads {
			t.Errorf("%s, analysed: %+v; want the server's ads: %v", tc.path, r, tc.ads)
		}
	}
	br.noConsoleErrors(t)
}
