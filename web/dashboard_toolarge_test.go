package web

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestDashboardTableTooLarge: a large partner's table by site, ad and
// yk_tag can pass the rows a report may hold, and adlink refuses it (400
// naming group_by). The page still shows the chart by day and the
// clicks, and says why the table is missing. Before, that one refusal
// left the whole page on an error.
func TestDashboardTableTooLarge(t *testing.T) {
	b, err := newBackend(backendOptions{unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	makeTraffic(t, b.URL, visit{query: "iphone 15 hülle", ykTag: "large", network: "198.51.100.9", views: 2, clicks: 1})

	br := newBrowser(t)
	paused := chromedp.Events(br.ctx, fetch.RequestPaused)
	send(t, br, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/v2/report?*"}}})
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			table := strings.Contains(ev.Request.URL, "group_by=site_id")
			chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if table {
					_, err := cdp.Call(ctx, tg, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 400,
						ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}},
						Body: []byte(`{"error":{"code":"invalid_parameter","param":"group_by",` +
							`"message":"the report has over 200000 rows: ask for fewer days or fewer groups"}}`)})
					return err
				}
				_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				return err
			}))
		}
	}()
	if s := dashSignIn(t, br, b.URL, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready: the chart and the clicks without the table", s)
	}
	type page struct {
		Note                    string
		NoteShown, Table, Chart bool
		ClickRows               int
	}
	v := eval[page](t, br, `({
  note: document.getElementById('table-note').textContent,
  noteShown: !document.getElementById('table-note').hidden,
  table: !document.getElementById('table').hidden,
  chart: document.querySelector('#chart svg') !== null,
  clickRows: document.querySelectorAll('#click-rows tr').length,
})`)
	if !v.NoteShown || !strings.Contains(v.Note, "too large") || !strings.Contains(v.Note, "200000 rows") {
		t.Errorf("the table's note %q (shown %v), want it to say the table is too large, and adlink's reason", v.Note, v.NoteShown)
	}
	if v.Table || !v.Chart || v.ClickRows == 0 {
		t.Errorf("table shown %v, chart %v, %d click rows: want the chart and the clicks without the table", v.Table, v.Chart, v.ClickRows)
	}
}
