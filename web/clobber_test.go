package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestClobberedCurrentScript: markup a page lets its users write (a
// comment with an image) can name an element currentScript, and
// document.currentScript is then that element, not the running script
// (DOM clobbering: a named <img>, <form>, <embed>, <object> or <iframe>
// shadows what document has of that name). The widget reads its tag's
// data- attributes there: from such an element they would send the page's
// address to another server and place the links it answers. The widget
// reads its own tag, and asks only the server it names. Nor does an
// element named adlink, which window.adlink returns until the widget sets
// it, keep the widget from starting.
func TestClobberedCurrentScript(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var asked atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		http.NotFound(w, r)
	}))
	t.Cleanup(evil.Close)
	for _, tc := range []struct{ name, markup string }{
		{"img", `<img name="currentScript" src="` + evil.URL + `/widget.js" alt="" data-api-key="demo" data-site-id="demo" data-base="` + evil.URL + `">`},
		{"form", `<form name="currentScript" data-api-key="demo" data-site-id="demo" data-base="` + evil.URL + `"><input name="dataset"></form>`},
		{"embed", `<embed name="currentScript" src="` + evil.URL + `/widget.js" data-base="` + evil.URL + `">`},
		// window.adlink is then the form, whose config is the input: the
		// widget took it for its own, on the page twice, and placed nothing.
		{"adlink", `<form id="adlink"><input name="config"></form>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked.Store(0)
			site := publisher(t, map[string]string{
				"/page.html": publisherPage("de-DE", b.URL, "<article><p>"+handyText+"</p><p>Ein Kommentar: "+tc.markup+"</p></article>"),
			})
			r := br.view(t, site+"/page.html")
			if base := eval[string](t, br, "adlink.config.base"); base != b.URL {
				t.Errorf("the widget's base is %q, want its tag's %q", base, b.URL)
			}
			if r.Links == 0 {
				t.Errorf("%+v, want the page's ads", r)
			}
			for _, h := range eval[[]string](t, br, `Array.from(document.querySelectorAll("a[rel~=sponsored]"), a => a.href)`) {
				if !strings.HasPrefix(h, b.URL+"/v1/redirect?") {
					t.Errorf("placed link %s, want one through %s", h, b.URL)
				}
			}
			if n := asked.Load(); n > 1 { // the element's own src, if any
				t.Errorf("the other server was asked %d times", n)
			}
		})
	} // The tag twice, as a tag manager may put it: one widget still, which
	// asks for the page's ads once.
	t.Run("twice", func(t *testing.T) {
		page := publisherPage("de-DE", b.URL, "<article><p>"+handyText+"</p></article>")
		tag := page[strings.Index(page, "<script async"):]
		tag = tag[:strings.Index(tag, "</script>")+len("</script>")]
		site := publisher(t, map[string]string{"/page.html": strings.Replace(page, tag, tag+tag, 1)})
		if r := br.view(t, site+"/page.html"); r.Links == 0 {
			t.Errorf("%+v, want the page's ads", r)
		}
		if n := len(eval[[]string](t, br, settle+`.then(() => `+pageLinkRequests+`)`)); n != 1 {
			t.Errorf("%d requests for the page's ads, want 1", n)
		}
	})
}

// TestClobberedDocumentMethods: an element of the page's markup named
// after a method or property of document (a user's comment with an
// <img name="querySelector">) shadows it, and a widget calling the
// element would throw and place nothing. The widget places the page's
// ads whatever document's own names are given to.
func TestClobberedDocumentMethods(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var markup strings.Builder
	for _, name := range []string{"querySelector", "querySelectorAll", "createElement", "createTextNode", "createRange",
		"createTreeWalker", "getElementById", "addEventListener", "body", "head", "documentElement", "readyState", "title", "visibilityState"} {
		markup.WriteString(`<img name="` + name + `" alt="">`)
	}
	site := publisher(t, map[string]string{
		"/page.html": publisherPage("de-DE", b.URL, "<article><p>"+handyText+"</p><p>Ein Kommentar: "+markup.String()+"</p></article>"),
	})
	r := br.view(t, site+"/page.html")
	if clobbered := eval[bool](t, br, `document.querySelector instanceof HTMLImageElement`); !clobbered {
		t.Fatal("document.querySelector is document's own: the page does not test what it should")
	}
	if r.Links == 0 {
		t.Errorf("%+v, want the page's ads", r)
	}
}
