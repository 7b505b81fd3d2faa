package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/emulation"

	"github.com/adlink/adlink/backend/clicks"
)

// TestDashboardCTRIsOfPagesAds: the dashboard's CTR, in its figures and
// in each row of its table, is the clicks on ads in pages per impression
// of ads in pages. A search answer's three ads, beaconed once and each
// clicked, count as impressions and clicks but not in the rate; an ad in
// the page, seen from two networks and clicked once, makes it 50%, not
// the (3+1)/(3+2) = 80% of all clicks over all impressions.
func TestDashboardCTRIsOfPagesAds(t *testing.T) {
	// A server of its own: this test's traffic is all its reports have.
	b, err := newBackend(backendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	searched := makeTraffic(t, base, visit{query: "iphone 15 hülle", ykTag: "ctr-test", network: "198.51.100.80", views: 1, clicks: 3})
	if len(searched) != 3 || slices.Contains(searched, "handy-bestkauf.de") {
		t.Fatalf("the search's clicked ads %q, want three, not the page's ad", searched)
	}

	// The page's in-text ad, linked with the site token as widget.js
	// links it: seen from two networks, clicked from one with the click
	// token its impression gave.
	var manifest struct{ Tok string }
	if err := json.Unmarshal(get(t, base+"/v2/shards?api_key=demo&site_id=demo&loc=de"), &manifest); err != nil || manifest.Tok == "" {
		t.Fatalf("manifest: %v, tok %q", err, manifest.Tok)
	}
	ad := "type=intext&adId=handy-bestkauf.de&adType=advertiser&api_key=demo&site_id=demo&criterionId=LG+Handy&tok=" + url.QueryEscape(manifest.Tok)
	var ct string
	for _, network := range []string{"198.51.100.81", "198.51.100.82"} {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/impression?"+url.Values{"api_key": {"demo"}, "site_id": {"demo"},
			"url": {base + "/demo/search.html"}, "ad": {ad}}.Encode(), nil)
		req.Header.Set("User-Agent", desktopChrome)
		req.Header.Set("X-Forwarded-For", network)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct{ Ct []string }
		err = json.NewDecoder(res.Body).Decode(&answer)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || len(answer.Ct) != 1 || answer.Ct[0] == "" {
			t.Fatalf("impression from %s: %s %v %+v", network, res.Status, err, answer)
		}
		ct = answer.Ct[0]
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/redirect?"+ad+"&ct="+url.QueryEscape(ct), nil)
	req.Header.Set("User-Agent", desktopChrome)
	req.Header.Set("X-Forwarded-For", "198.51.100.82")
	clicks.Navigation.Header(req.Header)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("the page's click: %s", res.Status)
	}

	br := newBrowser(t)
	send(t, br, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"})
	if s := dashSignIn(t, br, base, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	v := eval[dashView](t, br, jsCall(dashViewScript))
	if want := []string{"5", "4", "50.0%"}; v.Kpis[0] != want[0] || v.Kpis[1] != want[1] || v.Kpis[3] != want[2] {
		t.Errorf("figures %q: want %s impressions, %s clicks and a CTR of %s", v.Kpis, want[0], want[1], want[2])
	}
	// The table's rows: the page's ad at 50%, each of the search's ads,
	// with an impression and a click, without a rate.
	ctr := map[string]string{}
	for _, row := range v.Rows {
		if len(row) != 8 {
			t.Fatalf("row %q", row)
		}
		ctr[row[1]] = row[6]
	}
	want := map[string]string{"handy-bestkauf.de": "50.0%"}
	for _, a := range searched {
		want[a] = "–"
	}
	if len(ctr) != len(want) {
		t.Errorf("the table's CTRs by ad %q, want %q", ctr, want)
	}
	for a, w := range want {
		if ctr[a] != w {
			t.Errorf("ad %s: CTR %q, want %q (the table's %q)", a, ctr[a], w, ctr)
		}
	}
	br.noPageErrors(t)
}
