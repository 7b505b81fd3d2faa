package web

import (
	_ "embed"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

var (
	//go:embed testdata/markets/config.js
	configMarket string
	// recordManifests records the URL of every manifest the page asks
	// for in window.manifestURLs.
	//
	//go:embed testdata/markets/record_manifests.js
	recordManifests string
	//go:embed testdata/markets/manifest_urls.js
	manifestURLs string
	// matchJSON, called with a text and options, is adlink.matchText's
	// answer, as JSON.
	//
	//go:embed testdata/markets/match_json.js
	matchJSON string
	// geoSearch searches with loc=use_geo and lang=use_locale.
	//
	//go:embed testdata/markets/geo_search.js
	geoSearch string
	// boxLabel is the ad box's label, its aria-label and its prices.
	//
	//go:embed testdata/markets/box_label.js
	boxLabel string
)

// TestPageLangMarket: the widget reads the market from <html lang>, a BCP
// 47 tag: the country is a two-letter region subtag only, so "es-419"
// (Latin America) names none and "zh-Hant-TW" names Taiwan, not "hant".
// The server accepts what the widget asks, so the page gets ads.
func TestPageLangMarket(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	cases := []struct{ tag, loc, lang string }{
		{"es-419", "", "es"},
		{"zh-Hant-TW", "tw", "zh"},
		{"sr-Latn-RS", "rs", "sr"},
		{"de-DE", "de", "de"},
		{"de", "", "de"},
		{"de-u-co-phonebk", "", "de"},
		{"und-AT", "at", ""},
		{"en-UK", "gb", "en"}, // a common slip for en-GB
	}
	pages := map[string]string{}
	for i, c := range cases {
		pages["/lang/"+strconv.Itoa(i)+".html"] = publisherPage(c.tag, b.URL, "<article><p>"+handyText+"</p></article>")
	}
	site := publisher(t, pages)
	for i, c := range cases {
		r := br.view(t, site+"/lang/"+strconv.Itoa(i)+".html")
		got := eval[struct{ Loc, Lang string }](t, br, configMarket)
		if got.Loc != c.loc || got.Lang != c.lang {
			t.Errorf("<html lang=%q>: loc %q, lang %q; want %q, %q", c.tag, got.Loc, got.Lang, c.loc, c.lang)
		}
		if r.Source != "local" {
			t.Errorf("<html lang=%q>: ads from %q, want local (the server refused the market?)", c.tag, r.Source)
		}
	}
	br.noConsoleErrors(t)
}

// TestPageMatchHasNoLang: matching a page in the page asks, as
// /v2/page/link matches, by the page's country alone: the manifest and
// match_page get no lang, also where the page's tag or the caller names one.
func TestPageMatchHasNoLang(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, recordManifests)
	if r := br.view(t, b.firstView("article.html")); r.Source != "local" || r.Links == 0 {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	const text = "Das Apple iPhone 15 und gute Kopfhörer"
	plain := evalCall[string](t, br, matchJSON, text)
	english := evalCall[string](t, br, matchJSON, text, map[string]string{"lang": "en"})
	if a, e := unsignedJSON(t, []byte(plain)), unsignedJSON(t, []byte(english)); !reflect.DeepEqual(a, e) {
		t.Errorf("adlink.matchText with lang en gives %s\nwithout %s", english, plain)
	}
	for _, u := range eval[[]string](t, br, manifestURLs) {
		q, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if q.Query().Get("loc") != "de" || q.Query().Has("lang") {
			t.Errorf("manifest asked as %s, want loc=de and no lang", q.RawQuery)
		}
	}
	br.noConsoleErrors(t)
}

// TestGeoAndLocale: loc=use_geo and lang=use_locale in the page mean what
// they mean to the server, which resolves them for the shard manifest from
// the visitor's country header and Accept-Language: adlink.search answers
// as /v2/search/link does for the country and language resolved.
func TestGeoAndLocale(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	send(t, br, network.Enable, network.EnableParams{})
	send(t, br, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
		Headers: network.Headers{"CF-IPCountry": "US", "Accept-Language": "en-GB,en;q=0.8"}})
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	local := eval[string](t, br, geoSearch)
	server := get(t, b.URL+"/v2/search/link?q=printer&api_key=demo&site_id=demo&loc=us&lang=en&ctx.dist=low&fields=price")
	anywhere := get(t, b.URL+"/v2/search/link?q=printer&api_key=demo&site_id=demo&ctx.dist=low&fields=price")
	if reflect.DeepEqual(unsignedJSON(t, server), unsignedJSON(t, anywhere)) || !strings.Contains(string(server), `"ad"`) {
		t.Fatalf("the demo's en-US answer to printer is empty or the same as everywhere's; the test compares nothing:\n%s", server)
	}
	if !reflect.DeepEqual(unsignedJSON(t, []byte(local)), unsignedJSON(t, server)) {
		t.Errorf("adlink.search with use_geo (US) and use_locale (en) gives\n%s\nthe server for loc=us&lang=en\n%s", local, server)
	}
	br.noConsoleErrors(t)
}

// TestBoxLanguage: the ad box speaks the page's language, its label and
// its prices, and data-label overrides the label. The ads are the German
// market's in each case (data-loc="de"); only the language differs.
func TestBoxLanguage(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	page := func(lang, attrs string) string {
		return strings.Replace(publisherPage(lang, b.URL, "<article><p>"+handyText+"</p></article>"),
			`data-site-id="demo"`, `data-site-id="demo" data-loc="de"`+attrs, 1)
	}
	cases := []struct{ path, lang, attrs, label, aria, price string }{
		{"/de.html", "de", "", "Anzeige", "Anzeigen", `^\d+,\d\d\x{a0}€$`},
		{"/fr.html", "fr-FR", "", "Publicité", "Publicités", `^\d+,\d\d\x{a0}€$`},
		{"/en.html", "en-GB", "", "Sponsored", "Sponsored", `^€\d+\.\d\d$`},
		{"/ja.html", "ja", "", "Sponsored", "Sponsored", `^€\d+\.\d\d$`},
		{"/own.html", "de", ` data-label="Werbung"`, "Werbung", "Werbung", `^\d+,\d\d\x{a0}€$`},
	}
	pages := map[string]string{}
	for _, c := range cases {
		pages[c.path] = page(c.lang, c.attrs)
	}
	site := publisher(t, pages)
	for _, c := range cases {
		if r := br.view(t, site+c.path); r.Links == 0 {
			t.Fatalf("%s: no ads: %+v", c.path, r)
		}
		got := eval[struct {
			Label, Aria string
			Prices      []string
		}](t, br, boxLabel)
		if got.Label != c.label || got.Aria != c.aria {
			t.Errorf("%s: label %q, aria-label %q; want %q, %q", c.path, got.Label, got.Aria, c.label, c.aria)
		}
		if len(got.Prices) == 0 {
			t.Errorf("%s: no prices in the box", c.path)
		}
		for _, p := range got.Prices {
			if !regexp.MustCompile(c.price).MatchString(p) {
				t.Errorf("%s: price %q, want %s", c.path, p, c.price)
			}
		}
	}
	br.noConsoleErrors(t)
}
