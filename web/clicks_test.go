package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

var (
	//go:embed testdata/clicks/first_href.js
	firstIntextHref string
	// clickIntext clicks the first in-text link, opening it in the tab.
	//
	//go:embed testdata/clicks/click.js
	clickIntext string
	// recordTokens fetches every manifest anew and records its site token
	// in window.manifestToks.
	//
	//go:embed testdata/clicks/record_tokens.js
	recordTokens string
	// tokenSearch, called with clockShift, sets it and searches: the first
	// ad's site token and the manifests' tokens.
	//
	//go:embed testdata/clicks/token_search.js
	tokenSearch string
	// placeLink, called with an href, makes it the page's only link,
	// #server-ad.
	//
	//go:embed testdata/clicks/place_link.js
	placeLink string
)

// desktopChrome is the user agent of a desktop Chrome: headless Chromium
// names itself in its own, and a bot's click bills nothing.
const desktopChrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// TestServerLinkClickBills: a person's click on an ad URL of a server
// answer bills; the same URL clicked again lands, recorded as a repeat of
// its decision.
func TestServerLinkClickBills(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	send(t, br, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: desktopChrome})
	var answer struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(get(t, b.URL+"/v2/search/link?q=iphone+15&api_key=demo&site_id=demo"), &answer); err != nil || len(answer.Link) == 0 {
		t.Fatalf("search: %v %+v", err, answer)
	}
	href := answer.Link[0].Ad
	u, err := url.Parse(href)
	if err != nil || u.Query().Get("d") == "" || u.Query().Get("sig") == "" {
		t.Fatalf("a server link without decision or signature: %s", href)
	}
	adID := u.Query().Get("adId")

	// Requests leaving the test's server fail; each is reported, so the
	// test knows the redirect was answered (and the click logged).
	left := make(chan string, 4)
	keepLocal(t, br, b.URL, left, nil)
	start := time.Now().Add(-time.Minute)
	for i := range 2 {
		br.do(t, chromedp.Navigate(b.URL+"/demo/index.html?server-link="+strconv.Itoa(i)))
		evalCall[bool](t, br, placeLink, href)
		// A mouse click: the browser says a person navigated.
		br.do(t, chromedp.Click("#server-ad"))
		select {
		case <-left:
		case <-time.After(20 * time.Second):
			t.Fatalf("click %d never left for the landing page", i)
		}
	}
	var logged []clicks.Click
	b.clicks.Scan(context.Background(), start, time.Now().Add(time.Minute), func(c clicks.Click) error {
		if c.AdID == adID && c.Type == "search" {
			logged = append(logged, c)
		}
		return nil
	})
	if len(logged) != 2 || !logged[0].Billable || logged[1].Billable || logged[1].Reason != clicks.ReasonRepeat {
		t.Errorf("clicks recorded for the ad: %+v, want one billable, then a repeat", logged)
	}
}

// TestClickGoesThroughRedirect clicks an in-text ad: the browser asks
// /v1/redirect, which sends it to the ad's landing page from the catalog.
// The landing page is outside loopback, so its request is stopped and
// recorded instead of sent.
func TestClickGoesThroughRedirect(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.view(t, b.firstView("article.html"))
	href := eval[string](t, br, firstIntextHref)
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	var landing string
	for _, a := range b.ads {
		if a.ID == u.Query().Get("adId") {
			landing = a.Landing
		}
	}
	if landing == "" {
		t.Fatalf("%s: no such ad in the catalog", href)
	}

	left := make(chan string, 1)
	var sawRedirect bool
	keepLocal(t, br, b.URL, left, func(u string) {
		if strings.HasPrefix(u, b.URL+"/v1/redirect?") {
			sawRedirect = true
		}
	})
	// A publisher's reader clicks; the link opens in this tab for the test.
	eval[bool](t, br, clickIntext)
	select {
	case got := <-left:
		if got != landing {
			t.Errorf("the click landed on %s, want the catalog's %s", got, landing)
		}
		if !sawRedirect {
			t.Errorf("the click did not go through /v1/redirect")
		}
		if !strings.Contains(href, "&tok=") {
			t.Errorf("the page's click URL carries no site token: %s", href)
		}
		// The click is in the log, its site token verified and not billed:
		// a site token alone proves no ad was shown ("unverified", which
		// the judge finds before it reads the user agent; a forged or
		// expired token would say so instead).
		var logged []clicks.Click
		b.clicks.Scan(context.Background(), time.Now().Add(-time.Minute), time.Now().Add(time.Minute), func(c clicks.Click) error {
			if c.AdID == u.Query().Get("adId") && c.Type == "intext" {
				logged = append(logged, c)
			}
			return nil
		})
		if len(logged) != 1 || logged[0].Billable || logged[0].Reason != clicks.ReasonUnverified {
			t.Errorf("clicks recorded for the ad: %+v, want one unverified, with a verified site token", logged)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the click never left for the landing page")
	}
}

// TestClickTokenRenewed: the page's click URLs carry the site token of a
// manifest fetched again when its token nears expiry, not the first one,
// while the shard loaded stays in use. The page's clock is moved ahead.
func TestClickTokenRenewed(t *testing.T) {
	br := newBrowser(t)
	b := startBackend(t)
	br.onEveryPage(t, clock)
	br.onEveryPage(t, recordTokens)
	br.do(t, chromedp.Navigate(b.URL+"/demo/search.html"))
	type result struct {
		Tok  string
		Toks []string
	}
	first := evalCall[result](t, br, tokenSearch, 0)
	if len(first.Toks) != 1 || first.Tok == "" || first.Tok != first.Toks[0] {
		t.Fatalf("first search: click token %q, manifests' tokens %q", first.Tok, first.Toks)
	}
	// 55 minutes later the token (an hour) expires within 10 minutes. (A
	// second on, so the server's new token differs from the first.)
	time.Sleep(1100 * time.Millisecond)
	shift := (55 * time.Minute).Milliseconds()
	later := evalCall[result](t, br, tokenSearch, shift)
	if len(later.Toks) != 2 || later.Toks[1] == later.Toks[0] || later.Tok != later.Toks[1] {
		t.Errorf("55 minutes later: click token %q, manifests' tokens %q; want a second manifest's", later.Tok, later.Toks)
	}
	again := evalCall[result](t, br, tokenSearch, shift)
	if len(again.Toks) != 2 || again.Tok != again.Toks[1] {
		t.Errorf("right after: click token %q, manifests' tokens %q; want no third manifest", again.Tok, again.Toks)
	}
	br.noConsoleErrors(t)
}
