package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// TestReportShowsWhatReadersDid plays readers of a publisher's page in
// Chromium and reads the partner's report: reader A on the page's first
// view (ads matched in the page) clicks the first ad once its impression
// gave it a click token; once the server has analysed the page, reader B
// clicks the same ad from the server's answer, and A, back on the page,
// clicks it again. The report has, for the ad, the page-made link's row
// under the criterion its impression recorded and the signed link's under
// its own: A's impression once for both views (one network, one window),
// B's once, two billable clicks each at the ad's bid, and A's second
// click as a repeat, not billed.
func TestReportShowsWhatReadersDid(t *testing.T) {
	b, err := newBackend(backendOptions{impressionWindow: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	site := publisher(t, map[string]string{"/page.html": publisherPage("de-DE", b.URL, readerPage)})
	page := site + "/page.html"

	brA := newBrowser(t)
	a := asReader(t, brA, b, site)
	if r := brA.view(t, page); r.Source != "local" {
		t.Fatalf("first view: %+v, want ads matched in the page", r)
	}
	first := clickLikeAReader(t, brA, b, a, true)
	b.waitAnalysed(t, page)

	brB := newBrowser(t)
	rb := asReader(t, brB, b, site)
	// A reader reads a moment: the ad is seen (its beacon answered)
	// before the click.
	beacons := b.requestCounts()["/v1/impression"]
	if r := brB.view(t, page); r.Source != "server" {
		t.Fatalf("B's view: %+v, want the server's answer", r)
	}
	waitBeacon(t, b, beacons)
	second := clickLikeAReader(t, brB, b, rb, false)
	beacons = b.requestCounts()["/v1/impression"]
	if r := brA.view(t, page); r.Source != "server" {
		t.Fatalf("A's second view: %+v, want the server's answer", r)
	}
	waitBeacon(t, b, beacons)
	again := clickLikeAReader(t, brA, b, a, false)

	ad := first.Click.AdID
	if second.Click.AdID != ad || again.Click.AdID != ad {
		t.Fatalf("the first ad differs between views: %s, %s, %s", ad, second.Click.AdID, again.Click.AdID)
	}
	if !first.Click.Billable || !second.Click.Billable || again.Click.Billable || again.Click.Reason != clicks.ReasonRepeat {
		t.Fatalf("clicks %+v, %+v, %+v; want billable, billable, repeat", first.Click, second.Click, again.Click)
	}
	var bid int64
	for _, x := range b.ads {
		if x.ID == ad {
			bid = x.BidMicros
		}
	}

	req, err := http.NewRequest(http.MethodGet, b.URL+"/v2/report?group_by=ad,criterion,context", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+demoPartnerReport)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var rep struct {
		Rows []struct {
			Ad, Criterion, Context string
			Impressions, Clicks    int
			BillableClicks         int `json:"billable_clicks"`
			UnbilledRepeat         int `json:"unbilled_repeat"`
			CTR                    *float64
			Spend                  string
		}
	}
	if err := json.Unmarshal(body, &rep); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("report: %d %s %v", res.StatusCode, body, err)
	}
	signed := second.Click.Criterion
	if first.Click.Criterion == signed {
		t.Fatalf("the page-made link's criterion %q is the signed one's: the test tells them apart by it", signed)
	}
	type want struct {
		imps, clicks, billable, repeat int
		ctr                            float64
		spend                          int64
	}
	wants := map[string]want{
		first.Click.Criterion: {1, 1, 1, 0, 1, bid},
		signed:                {1, 2, 1, 1, 2, bid},
	}
	seen := 0
	for _, r := range rep.Rows {
		if r.Ad != ad {
			continue
		}
		w, ok := wants[r.Criterion]
		if !ok || r.Context != "intext" {
			t.Errorf("a row of the ad under %q (%s), want only %q and %q", r.Criterion, r.Context, first.Click.Criterion, signed)
			continue
		}
		seen++
		if r.Impressions != w.imps || r.Clicks != w.clicks || r.BillableClicks != w.billable || r.UnbilledRepeat != w.repeat ||
			r.CTR == nil || *r.CTR != w.ctr || r.Spend != decimal(w.spend) {
			t.Errorf("row %q: %+v, want %+v (spend %s)", r.Criterion, r, w, decimal(w.spend))
		}
	}
	if seen != 2 {
		t.Errorf("%d rows of the ad in %s", seen, body)
	}
}

// decimal writes micros as the report writes spend: two decimals at
// least, more where the micros need them.
func decimal(micros int64) string {
	s := strconv.FormatInt(micros/1e6, 10) + "." + strconv.FormatInt(1e6+micros%1e6, 10)[1:]
	for len(s) > len(strconv.FormatInt(micros/1e6, 10))+3 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return s
}

// waitBeacon waits until b has answered more impression beacons than
// before.
func waitBeacon(t *testing.T, b *backend, before int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); b.requestCounts()["/v1/impression"] <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page sent no impression beacon")
		}
	}
}
