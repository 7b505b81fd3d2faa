package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// clickRow is a click as /v2/clicks gives it in JSON.
type clickRow struct {
	ID, Time, Ad, Criterion, Reason, Currency string
	SiteID                                    string `json:"site_id"`
	Billable                                  bool
	Bid                                       *string
}

// dashRange is the dashboard's range: the last 30 UTC days, today's
// included.
func dashRange() (string, string) {
	to := time.Now().UTC()
	return to.AddDate(0, 0, -29).Format(time.DateOnly), to.Format(time.DateOnly)
}

// listClicks asks base's /v2/clicks for the dashboard's range in order
// ("" is the default, oldest first), page by page of limit clicks, and
// returns the JSON pages' clicks, or the CSV pages' bodies one after the
// other with the header row of the first only.
func listClicks(tb testing.TB, base, token, format, billable, order string, limit int) ([]clickRow, []byte) {
	tb.Helper()
	from, to := dashRange()
	var all []clickRow
	var csv []byte
	after := ""
	for pages := 0; ; pages++ {
		q := url.Values{"from": {from}, "to": {to}, "format": {format}, "limit": {strconv.Itoa(limit)}}
		if billable != "" {
			q.Set("billable", billable)
		}
		if order != "" {
			q.Set("order", order)
		}
		if after != "" {
			q.Set("after", after)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/v2/clicks?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			tb.Fatalf("clicks %s: %d %s %v", q.Encode(), res.StatusCode, body, err)
		}
		if format == "csv" {
			if pages > 0 {
				body = body[bytes.IndexByte(body, '\n')+1:]
			}
			csv = append(csv, body...)
			after = res.Header.Get("X-Adlink-Next")
		} else {
			var page struct {
				Clicks []clickRow
				Next   *string
			}
			if err := json.Unmarshal(body, &page); err != nil {
				tb.Fatal(err)
			}
			all = append(all, page.Clicks...)
			after = ""
			if page.Next != nil {
				after = *page.Next
			}
		}
		if after == "" {
			return all, csv
		}
	}
}

// shownClick is a row of the dashboard's clicks table.
type shownClick struct {
	ID    string
	Cells []string
}

// clicksView is what the clicks section shows.
type clicksView struct {
	Rows            []shownClick
	More            bool
	Caption, Status string
}

const dashClicksView = `(() => {
  const $ = (id) => document.getElementById(id);
  return {
    Rows: [...document.querySelectorAll('#click-rows tr')].map((tr) => ({ ID: tr.dataset.id, Cells: [...tr.cells].map((c) => c.textContent) })),
    More: $('clicks-more').offsetParent !== null,
    Caption: $('clicks-caption').textContent,
    Status: $('clicks-status').textContent,
  };
})()`

// dashClicksDo runs a script that changes the clicks table and resolves
// once its status no longer says it is loading.
const dashClicksDo = `(act) => new Promise((resolve) => {
  const status = document.getElementById('clicks-status');
  const done = () => !status.textContent.startsWith('Loading') && (resolve(true), true);
  new MutationObserver((_, o) => done() && o.disconnect()).observe(status, { childList: true, characterData: true, subtree: true });
  new Function(act)();
})`

// TestDashboardClicks: after more clicks than a page of the table, billed
// and not, the dashboard lists the latest of them, newest first, with the
// verdicts /v2/clicks gives; More adds the next older page without a
// click twice; the filter lists the unbilled ones only; the CSV download,
// asked for page by page, is /v2/clicks' CSV of the range, oldest first;
// no URL the tab asks for has the token; the page logs no error, a CSP
// violation among them.
func TestDashboardClicks(t *testing.T) {
	b, err := newBackend(backendOptions{unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	queries := []string{"iphone 15 hülle", "galaxy s24", "kopfhörer"}
	for i := range 24 {
		// A /24 of its own each: no cap of one network or prefix bills
		// less than the visit's clicks.
		makeTraffic(t, base, visit{query: queries[i%len(queries)], ykTag: "clicks-test", network: "198.51." + strconv.Itoa(100+i) + ".7",
			views: 1, clicks: 3, bot: i%4 == 3})
	}
	listed, _ := listClicks(t, base, demoPartnerReport, "json", "", "desc", 10000)
	billed := 0
	for _, c := range listed {
		if c.Billable {
			billed++
		}
	}
	if len(listed) <= 50 || billed == 0 || billed == len(listed) {
		t.Fatalf("/v2/clicks lists %d clicks, %d billed; the test needs more than a page of 50, billed and not", len(listed), billed)
	}

	br := newBrowser(t)
	var requests requestLog
	// Each request is logged; the CSV download's pages are asked for 20
	// clicks at a time, so that it follows the cursor from page to page.
	paused := chromedp.Events(br.ctx, fetch.RequestPaused)
	send(t, br, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			requests.add(ev.Request.URL)
			p := fetch.ContinueRequestParams{RequestID: ev.RequestID}
			if u, err := url.Parse(ev.Request.URL); err == nil && u.Path == "/v2/clicks" && u.Query().Get("format") == "csv" {
				q := u.Query()
				q.Set("limit", "20")
				u.RawQuery = q.Encode()
				p.URL = u.String()
			}
			chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, p)
				return err
			}))
		}
	}()

	if s := dashSignIn(t, br, base, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	verdict := func(c clickRow) string {
		if c.Billable {
			return "Billed"
		}
		return "Not billed: " + c.Reason
	}
	// check tells whether the table shows want, in order, each with its
	// ad, site, criterion, verdict and bid.
	check := func(what string, rows []shownClick, want []clickRow) {
		t.Helper()
		ids := func(rows []shownClick) []string {
			var s []string
			for _, r := range rows {
				s = append(s, r.ID)
			}
			return s
		}
		var wantIDs []string
		for _, c := range want {
			wantIDs = append(wantIDs, c.ID)
		}
		if got := ids(rows); !slices.Equal(got, wantIDs) {
			t.Fatalf("%s: the table lists %d clicks %q; want %d, %q", what, len(got), got, len(wantIDs), wantIDs)
		}
		for i, r := range rows {
			c := want[i]
			bid := "–"
			if c.Bid != nil {
				bid = strings.TrimLeft(digits(*c.Bid), "0")
			}
			if len(r.Cells) != 6 || r.Cells[0] == "" || r.Cells[1] != c.Ad || r.Cells[2] != c.SiteID || r.Cells[3] != c.Criterion ||
				r.Cells[4] != verdict(c) || (c.Bid == nil) != (r.Cells[5] == "–") || c.Bid != nil && strings.TrimLeft(digits(r.Cells[5]), "0") != bid {
				t.Errorf("%s: row %q; /v2/clicks has %+v", what, r.Cells, c)
			}
		}
	}

	// The table starts at the newest click and shows a page of 50.
	v := eval[clicksView](t, br, dashClicksView)
	check("signed in", v.Rows, listed[:50])
	if !v.More || !strings.Contains(v.Caption, "newest first") || !strings.Contains(v.Status, "50") {
		t.Errorf("signed in: More shown %v, caption %q, status %q", v.More, v.Caption, v.Status)
	}

	// More: the rest, once each, and no More after the last.
	evalCall[bool](t, br, dashClicksDo, `document.getElementById('clicks-more').click()`)
	v = eval[clicksView](t, br, dashClicksView)
	check("after More", v.Rows, listed)
	if v.More {
		t.Errorf("after the last page: More still shown (%q)", v.Status)
	}

	// Not billed only.
	unbilled, _ := listClicks(t, base, demoPartnerReport, "json", "false", "desc", 10000)
	evalCall[bool](t, br, dashClicksDo, `const f = document.getElementById('clicks-filter'); f.value = 'false'; f.dispatchEvent(new Event('change'))`)
	v = eval[clicksView](t, br, dashClicksView)
	check("not billed", v.Rows, unbilled)
	if !strings.Contains(v.Caption, "Not billed") {
		t.Errorf("not billed: caption %q", v.Caption)
	}

	// The CSV download: all the range's clicks, in one file.
	downloaded := saveDownloads(t, br, 30*time.Second, true)
	br.do(t, chromedp.Click("#clicks-csv"))
	got, name := downloaded()
	_, csv := listClicks(t, base, demoPartnerReport, "csv", "", "", 7)
	from, to := dashRange()
	if !bytes.Equal(got, csv) || name != "adlink-clicks-"+from+"-"+to+".csv" {
		t.Errorf("downloaded %q as %q; /v2/clicks' CSV is %q", got, name, csv)
	}
	if lines := bytes.Count(got, []byte("\n")); lines != len(listed)+1 {
		t.Errorf("the CSV has %d lines for %d clicks and a header", lines, len(listed))
	}

	csvPages := 0
	for _, u := range requests.all() {
		if strings.Contains(u, demoPartnerReport) || strings.Contains(u, "Bearer") {
			t.Errorf("a request carried the token in its URL: %s", u)
		}
		if strings.HasPrefix(u, base+"/v2/clicks?") && strings.Contains(u, "format=csv") {
			if strings.Contains(u, "after=") {
				csvPages++
			}
		} else if strings.HasPrefix(u, base+"/v2/clicks?") {
			if q, _ := url.ParseQuery(u[len(base+"/v2/clicks?"):]); q.Get("order") != "desc" || q.Get("from") != from || q.Get("to") != to {
				t.Errorf("the table asked for %s, want the range's clicks newest first", u)
			}
		}
	}
	// 20 clicks a page: the pages after the first follow the cursor.
	if want := (len(listed) - 1) / 20; csvPages != want {
		t.Errorf("the download asked for %d pages after the first, want %d: %q", csvPages, want, requests.all())
	}
	br.noPageErrors(t)
}
