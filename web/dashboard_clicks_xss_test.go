package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestDashboardClicksMarkup: a click's ad id and criterion come from a
// merchant's feed, which the network does not write. The dashboard shows
// markup in them as text: no element it names is made, no script of it
// runs, and the page logs no error. The page of /v2/clicks is the
// server's, with markup put in its first click's fields on its way to
// the tab.
func TestDashboardClicksMarkup(t *testing.T) {
	b, err := newBackend(backendOptions{unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	makeTraffic(t, base, visit{query: "iphone 15 hülle", ykTag: "markup-test", network: "198.51.100.7", views: 1, clicks: 1})
	if listed, _ := listClicks(t, base, demoPartnerReport, "json", "", "", 10000); len(listed) == 0 {
		t.Fatal("no click listed")
	}
	const markup = `<img id=crafted src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`

	br := newBrowser(t)
	paused := chromedp.Events(br.ctx, fetch.RequestPaused)
	send(t, br, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/v2/clicks?*"}}})
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			var cmd func(context.Context, *chromedp.Target) error
			if body, ok := markedPage(ev.Request, markup); ok {
				cmd = func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 200,
						ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}},
						Body:            body})
					return err
				}
			} else {
				cmd = func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
					return err
				}
			}
			chromedp.Do(br.ctx, chromedp.Func(cmd))
		}
	}()

	if s := dashSignIn(t, br, base, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	v := eval[clicksView](t, br, dashClicksView)
	if len(v.Rows) == 0 || len(v.Rows[0].Cells) != 6 || v.Rows[0].Cells[1] != markup || v.Rows[0].Cells[3] != markup {
		t.Errorf("the first click is not shown with its ad and criterion as text: %+v", v.Rows)
	}
	if made := eval[bool](t, br, `document.getElementById('crafted') !== null || document.querySelector('#click-rows img, #click-rows script') !== null`); made {
		t.Error("the markup made elements in the page")
	}
	if title := eval[string](t, br, `document.title`); title == "pwned" {
		t.Error("the markup's script ran")
	}
	br.noPageErrors(t)
}

// markedPage asks the server the request the tab made, with its
// Authorization header, and returns its JSON page with markup as the
// first click's ad and criterion.
func markedPage(r *network.Request, markup string) ([]byte, bool) {
	u, err := url.Parse(r.URL)
	if err != nil || u.Query().Get("format") != "json" {
		return nil, false
	}
	req, _ := http.NewRequest(http.MethodGet, r.URL, nil)
	for k, v := range r.Headers {
		if s, ok := v.(string); ok && strings.EqualFold(k, "Authorization") {
			req.Header.Set(k, s)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false
	}
	defer res.Body.Close()
	var page map[string]any
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil || res.StatusCode != http.StatusOK {
		return nil, false
	}
	list, _ := page["clicks"].([]any)
	if len(list) == 0 {
		return nil, false
	}
	first := list[0].(map[string]any)
	first["ad"], first["criterion"] = markup, markup
	body, err := json.Marshal(page)
	return body, err == nil
}
