package web

import (
	"context"
	"encoding/json"
	"html"
	"net/url"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// TestPlantedLinkIsNotReported: a commenter's markup on the publisher's
// page (or any script of the page) may copy the widget's in-text link,
// class and data-adlink, for an ad of its choosing that the widget did
// not show. The widget reports only the links it placed itself: the
// planted one gets no impression and no click token, so a reader's click
// on it does not bill as an ad the reader was shown.
func TestPlantedLinkIsNotReported(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	// An ad the page's text does not name, its link written as the
	// widget writes one it matched: the site token in place of the
	// server's signature.
	var answer struct{ Link []struct{ Ad string } }
	q := url.Values{"q": {"samsung galaxy s24"}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"}}
	if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?"+q.Encode()), &answer); err != nil || len(answer.Link) == 0 {
		t.Fatalf("search: %v %+v", err, answer)
	}
	planted := unsigned(answer.Link[0].Ad) + "&tok=x"
	adID := query(t, planted).Get("adId")
	comment := `<div class="comments"><p>Super Angebot: <a class="adlink-intext" data-adlink="intext" id="planted" href="` +
		html.EscapeString(planted) + `">hier</a></p></div>`
	body := `<article><p>Das neue Apple iPhone 15 im Test.</p>` + comment +
		`<p style="margin-top:5000px">Und das Google Pixel 8 ganz unten.</p></article>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, body)})
	rd := asReader(t, br, b, site)
	start := time.Now()
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	// The widget's own link, in view beside the planted one, gets its
	// click token: both were seen together.
	own := pollHref(t, br, tokenHref)
	if own == "" {
		t.Fatal("the widget's own link never got its click token")
	}
	if query(t, own).Get("adId") == adID {
		t.Fatalf("the page's own ad is the planted one (%s): pick another", adID)
	}
	// The planted link's report would have gone in the same beacon, or
	// within a second of it.
	if got := pollHref(t, br, `(() => { const a = document.getElementById("planted"); return a && /[?&]ct=/.test(a.href) ? a.href : false; })()`); got != "" {
		t.Errorf("the planted link got a click token: %s", got)
	}
	var imps []clicks.Impression
	b.imps.Scan(context.Background(), start.Add(-time.Second), time.Now().Add(time.Second), func(i clicks.Impression) error {
		if i.AdID == adID && i.IP == rd.ip {
			imps = append(imps, i)
		}
		return nil
	})
	if len(imps) != 0 {
		t.Errorf("impressions of the planted ad %s: %+v, want none", adID, imps)
	}
	br.noConsoleErrors(t)
}

// TestPlantedIDKeepsTheAdsStyle: a commenter's element with the id of the
// widget's style sheet does not keep the sheet out: the in-text ads still
// look unlike the page's own links (dotted), so a reader can tell them.
func TestPlantedIDKeepsTheAdsStyle(t *testing.T) {
	br, _, r := openPage(t, `<article><p>`+handyText+`</p><div class="comments"><p id="adlink-style">Erster!</p></div></article>`)
	if r.Links == 0 {
		t.Fatalf("view: %+v, want ads", r)
	}
	got := eval[string](t, br, `getComputedStyle(document.querySelector("a.adlink-intext")).textDecorationStyle`)
	if got != "dotted" {
		t.Errorf("an in-text ad's underline is %q, want dotted", got)
	}
	br.noConsoleErrors(t)
}

// TestWatchedLinkToAnotherHostGetsNoToken: a link the page hands to
// adlink.watch that reads as one of its ads (the redirect's path, the
// tag's key and site) but goes to another host gets no click token: it
// would hand the token, and the reader's click, to that host.
func TestWatchedLinkToAnotherHostGetsNoToken(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	var answer struct{ Link []struct{ Ad string } }
	q := url.Values{"q": {"samsung galaxy s24"}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"}}
	if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?"+q.Encode()), &answer); err != nil || len(answer.Link) == 0 {
		t.Fatalf("search: %v %+v", err, answer)
	}
	u, err := url.Parse(unsigned(answer.Link[0].Ad) + "&tok=x")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "elsewhere.example"
	results := `<div id="results"><a id="elsewhere" href="` + html.EscapeString(u.String()) + `">Galaxy S24</a></div>`
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, results+readerPage)})
	asReader(t, br, b, site)
	if r := br.view(t, site+"/page.html"); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	if n := eval[int](t, br, `adlink.watch(document.getElementById("results"))`); n != 1 {
		t.Fatalf("adlink.watch took %d links, want the one", n)
	}
	if pollHref(t, br, tokenHref) == "" {
		t.Fatal("the widget's own link never got its click token")
	}
	if got := pollHref(t, br, `(() => { const a = document.getElementById("elsewhere"); return /[?&]ct=/.test(a.href) ? a.href : false; })()`); got != "" {
		t.Errorf("a link to another host got a click token: %s", got)
	}
	br.noConsoleErrors(t)
}
