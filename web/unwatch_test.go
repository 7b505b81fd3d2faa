package web

import (
	_ "embed"
	"strconv"
	"testing"
)

var (
	// observingScript keeps window.observing, what the page's
	// IntersectionObservers observe.
	//
	//go:embed testdata/watch/observing.js
	observingScript string
	// goneObserved is how many elements out of the page are observed still.
	//
	//go:embed testdata/watch/gone.js
	goneObserved string
	// allTokens tells whether every in-text link has its click token.
	//
	//go:embed testdata/watch/all_tokens.js
	allTokens string
	// showResults shows a search's results out of view and watches them.
	//
	//go:embed testdata/watch/results.js
	showResults string
)

// TestGoneLinksAreNotWatched: a single-page app stays open for hours,
// through many views (adlink.refresh) and many searches whose results it
// has the widget watch (adlink.watch). A link the page no longer holds is
// watched no more, whether it was seen and left the view before it went,
// or was never seen at all: an IntersectionObserver holds each element it
// observes, and every link gone and still watched, with its text, its box
// and its logo, would stay in memory until the tab closes.
func TestGoneLinksAreNotWatched(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, observingScript)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links < 2 {
		t.Fatalf("first view: %+v, want the links at the top and far below", r)
	}
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("the link in view never got its click token")
	}
	// The reader reads down to the last link and back up: both seen, the
	// last out of view again.
	eval[bool](t, br, `(scrollTo(0, document.body.scrollHeight), true)`)
	if pollHref(t, br, `(`+allTokens+`) && "yes"`) == "" {
		t.Fatal("the link far below never got its click token once in view")
	}
	eval[bool](t, br, `(scrollTo(0, 0), true)`)
	for i := range 3 {
		eval[int](t, br, `adlink.refresh().then(r => r.links.length)`)
		if n := eval[int](t, br, goneObserved); n != 0 {
			t.Errorf("after refresh %d: %d links out of the page still watched, want 0", i+1, n)
		}
	}
	// A search page shows results below the fold and replaces them with
	// the next search's.
	for i, q := range []string{"iphone 15", "pixel 8", "iphone 15"} {
		if n := evalCall[int](t, br, showResults, q); n == 0 {
			t.Fatalf("search %q: no results watched", q)
		}
		if n := eval[int](t, br, goneObserved); n != 0 {
			t.Errorf("after search %d: %d results out of the page still watched, want 0", i+1, n)
		}
	}
	br.noConsoleErrors(t)
}

// TestReusedLinkIsReportedAgain: a single-page app that renders the next
// search's results into the links it rendered the last one's in (a
// framework reuses the elements of a list) has the widget watch them
// again: each link is reported for the ad it now goes to, and gets that
// ad's click token, without which a click on it does not bill.
func TestReusedLinkIsReportedAgain(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v", r)
	}
	const render = `(q) => adlink.search(q).then(body => {
	let a = document.getElementById('result');
	if (!a) {
		a = document.createElement('a');
		a.id = 'result';
		a.textContent = 'the first result';
		document.body.prepend(a);
	}
	a.href = body.link[0].ad;
	adlink.watch(document.body);
	return new URL(a.href).searchParams.get('adId');
})`
	tokenOf := func(ad string) string {
		return pollHref(t, br, `(() => {
  const a = document.getElementById('result');
  return a && /[?&]ct=/.test(a.href) && new URL(a.href).searchParams.get('adId') === `+strconv.Quote(ad)+` ? a.href : false;
})()`)
	}
	first := evalCall[string](t, br, render, "iphone 15")
	if tokenOf(first) == "" {
		t.Fatalf("the result for %s never got its click token", first)
	}
	second := evalCall[string](t, br, render, "pixel 8")
	if second == first || second == "" {
		t.Fatalf("the second search's first result is %q, the first's %q: the test needs two ads", second, first)
	}
	if tokenOf(second) == "" {
		t.Errorf("the link rendered anew for %s never got its click token: %s", second, eval[string](t, br, `document.getElementById('result').href`))
	}
	br.noConsoleErrors(t)
}
