package app

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/match"
)

const (
	listingPartners = `{"partners":[
		{"api_key":"key-one","report_token":"key-one-report-token-0123","sites":[{"id":"site-one","domains":["one.example"]}]},
		{"api_key":"key-two","report_token":"key-two-report-token-0123","sites":[{"id":"site-two","domains":["two.example"]}]}]}`
	// shop-a.example asks for the click's id in its landing URLs,
	// shop-b.example does not.
	listingAdvertisers = `{"advertisers":[
		{"id":"shop-a.example","report_token":"shop-a-report-token-0123","click_id_param":"adlink_click"},
		{"id":"shop-b.example","report_token":"shop-b-report-token-0123"}]}`
	landingA = "https://shop-a.example/p?ref=feed&adlink_click=stale#top"
	landingB = "https://shop-b.example/p?x=1"
)

// listingAds are shop-a.example's two ads and shop-b.example's one, all
// bidding on "lg handy".
func listingAds() []match.Ad {
	ad := func(id, advertiser, landing string, bid int64) match.Ad {
		return match.Ad{ID: id, Kind: match.KindProduct, Title: "LG Handy " + id, Keywords: []string{"lg handy"},
			Landing: landing, Advertiser: advertiser, Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: bid}
	}
	return []match.Ad{ad("SHOP.1.A1", "shop-a.example", landingA, 120_000), ad("SHOP.1.A2", "shop-a.example", "https://shop-a.example/q", 50_000),
		ad("SHOP.2.B1", "shop-b.example", landingB, 300_000)}
}

// listedClick is a click as GET /v2/clicks gives it.
type listedClick struct {
	ID        string
	Time      string
	Ad        string
	AdType    string `json:"ad_type"`
	Type      string
	SiteID    string `json:"site_id"`
	Criterion string
	YkTag     string `json:"yk_tag"`
	Country   string
	Billable  bool
	Reason    string
	Bid       *string
	Currency  string
}

// listing is the JSON answer of GET /v2/clicks.
type listing struct {
	Columns []string
	Clicks  []listedClick
	Next    *string
}

// landed is one click on a link: the id it was recorded under and the
// Location it was sent to.
type landed struct{ id, location string }

// follow asks for the click URL u with method as a browser on network n
// and returns its X-Adlink-Click and Location.
func (s *accountsServer) follow(t *testing.T, method, u string, n int) landed {
	t.Helper()
	req, err := http.NewRequest(method, s.pub.URL+u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", n))
	clicks.Navigation.Header(req.Header)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("%s %s: %d, want 302", method, u, res.StatusCode)
	}
	return landed{res.Header.Get("X-Adlink-Click"), res.Header.Get("Location")}
}

// tagged are n click URLs of the ad adID for key's site, from searches
// with the yk_tag tag.
func (s *accountsServer) tagged(t *testing.T, key, site, tag, adID string, n int) []string {
	t.Helper()
	var links []string
	for range n {
		status, body := s.get(t, "/v2/search/link?q=lg+handy&loc=de&api_key="+key+"&site_id="+site+"&yk_tag="+tag, nil)
		var resp struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
			t.Fatalf("search: %d %v %.200s", status, err, body)
		}
		for _, l := range resp.Link {
			if strings.Contains(l.Ad, "adId="+adID+"&") {
				links = append(links, l.Ad[strings.Index(l.Ad, "/v1/redirect?"):])
				break
			}
		}
	}
	if len(links) != n {
		t.Fatalf("%d links of %s, want %d", len(links), adID, n)
	}
	return links
}

// clicksOf asks GET /v2/clicks?query with the report token (none when "")
// and returns the answer.
func (s *accountsServer) clicksOf(t *testing.T, token, query string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.pub.URL+"/v2/clicks?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// list is the listing of query for the token, which must answer 200.
func (s *accountsServer) list(t *testing.T, token, query string) listing {
	t.Helper()
	res, b := s.clicksOf(t, token, query)
	var l listing
	if err := json.Unmarshal(b, &l); res.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("/v2/clicks?%s: %d %v %.300s", query, res.StatusCode, err, b)
	}
	return l
}

// ids are the ids of listed clicks, in their order.
func ids(cs []listedClick) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

// sorted is ids sorted.
func sorted(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

// TestClickListing: each account lists exactly its own clicks, with their
// verdicts, and the bids of its billed clicks add up to its report's
// spend; a token in the URL, none, or another's reads nothing of it;
// pages of clicks of one nanosecond give every click once; the CSV keeps
// formulas inert; and the landing URL carries the click's id for the
// advertiser that asked, as the bbolt file and Postgres keep the clicks.
func TestClickListing(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testClickListing(t, nil) })
	t.Run("postgres", func(t *testing.T) { testClickListing(t, testpg.Start(t)) })
}

func testClickListing(t *testing.T, pg *testpg.Server) {
	set := func(*config.Config) {}
	if pg != nil {
		set = func(cfg *config.Config) { cfg.PostgresURL = pg.URL() }
	}
	// Every click in one nanosecond: the pages must still give each once.
	at := time.Now().UTC()
	s := startAccountsAt(t, listingPartners, listingAdvertisers, listingAds(), set, func() time.Time { return at })
	a1 := s.tagged(t, "key-one", "site-one", "-1:cmd", "SHOP.1.A1", 3)
	a2 := s.tagged(t, "key-two", "site-two", "t2", "SHOP.1.A2", 1)
	b1 := s.tagged(t, "key-one", "site-one", "t1", "SHOP.2.B1", 2)

	billedA := s.follow(t, http.MethodGet, a1[0], 1)
	repeatA := s.follow(t, http.MethodGet, a1[0], 2) // the link's decision is spent
	billedA2 := s.follow(t, http.MethodGet, a1[1], 3)
	otherSite := s.follow(t, http.MethodGet, a2[0], 4)
	billedB := s.follow(t, http.MethodGet, b1[0], 5)
	repeatB := s.follow(t, http.MethodGet, b1[1], 5) // the network's window
	head := s.follow(t, http.MethodHead, a1[2], 6)

	// The landing URLs.
	for _, c := range []landed{billedA, repeatA, billedA2} {
		u, err := url.Parse(c.location)
		if err != nil || c.id == "" || u.Host != "shop-a.example" || u.Query()["adlink_click"][0] != c.id ||
			len(u.Query()["adlink_click"]) != 1 || u.Query().Get("ref") != "feed" || u.Fragment != "top" {
			t.Errorf("shop-a.example's landing %q for the click %q, want its id once in adlink_click, ref and #top kept", c.location, c.id)
		}
	}
	if otherSite.location != "https://shop-a.example/q?adlink_click="+otherSite.id {
		t.Errorf("shop-a.example's other landing %q, want the id %q added", otherSite.location, otherSite.id)
	}
	for _, c := range []landed{billedB, repeatB} {
		if c.location != landingB || c.id == "" {
			t.Errorf("shop-b.example's landing %q (click %q), want %q as it is", c.location, c.id, landingB)
		}
	}
	if head.id != "" || head.location != landingA {
		t.Errorf("a HEAD: click %q, landing %q; want no click and %q as it is", head.id, head.location, landingA)
	}

	const tokenA, tokenB = "shop-a-report-token-0123", "shop-b-report-token-0123"
	all := s.list(t, tokenA, "")
	wantA := sorted(billedA.id, repeatA.id, billedA2.id, otherSite.id)
	if got := ids(all.Clicks); !slices.Equal(got, wantA) || all.Next != nil {
		t.Fatalf("shop-a.example's clicks %v (next %v), want %v", got, all.Next, wantA)
	}
	if !slices.Equal(all.Columns, report.ClickColumns) {
		t.Errorf("columns %v", all.Columns)
	}
	var billed int64
	for _, c := range all.Clicks {
		want := map[string]string{billedA.id: "", repeatA.id: clicks.ReasonRepeat, billedA2.id: "", otherSite.id: ""}[c.ID]
		if c.Billable != (want == "") || c.Reason != want || (c.Bid != nil) != c.Billable || c.Currency != "EUR" {
			t.Errorf("click %s: billable %v, reason %q, bid %v, currency %q; want reason %q, a bid only when billed",
				c.ID, c.Billable, c.Reason, c.Bid, c.Currency, want)
		}
		if c.Time != at.Format(time.RFC3339Nano) || c.AdType != "product" || c.Type != "search" || c.Criterion != "lg handy" {
			t.Errorf("click %s: %+v", c.ID, c)
		}
		if site := map[bool]string{true: "site-two", false: "site-one"}[c.ID == otherSite.id]; c.SiteID != site {
			t.Errorf("click %s on %q, want %q", c.ID, c.SiteID, site)
		}
		if tag := map[bool]string{true: "t2", false: "-1:cmd"}[c.ID == otherSite.id]; c.YkTag != tag || c.Ad != map[bool]string{true: "SHOP.1.A2", false: "SHOP.1.A1"}[c.ID == otherSite.id] {
			t.Errorf("click %s: ad %q, yk_tag %q", c.ID, c.Ad, c.YkTag)
		}
		if c.Bid != nil {
			m, err := accounts.ParseMicros(*c.Bid)
			if err != nil {
				t.Fatal(err)
			}
			billed += m
		}
	}
	if billed != 120_000+120_000+50_000 {
		t.Errorf("shop-a.example's bids add up to %d micros, want 290000", billed)
	}
	status, body := s.get(t, "/v2/report", http.Header{"Authorization": {"Bearer " + tokenA}})
	var rep struct {
		Rows []struct{ Currency, Spend string }
	}
	if err := json.Unmarshal([]byte(body), &rep); status != http.StatusOK || err != nil || len(rep.Rows) != 1 ||
		rep.Rows[0].Spend != report.Spend(billed) || rep.Rows[0].Currency != "EUR" {
		t.Errorf("shop-a.example's report %d %.300s, want the spend %s the listing's bids add up to", status, body, report.Spend(billed))
	}
	if got := ids(s.list(t, tokenA, "billable=false").Clicks); !slices.Equal(got, []string{repeatA.id}) {
		t.Errorf("shop-a.example's unbilled clicks %v, want %v", got, []string{repeatA.id})
	}
	if got := ids(s.list(t, tokenA, "billable=true").Clicks); !slices.Equal(got, sorted(billedA.id, billedA2.id, otherSite.id)) {
		t.Errorf("shop-a.example's billed clicks %v", got)
	}
	if got := ids(s.list(t, tokenB, "").Clicks); !slices.Equal(got, sorted(billedB.id, repeatB.id)) {
		t.Errorf("shop-b.example's clicks %v, want %v", got, sorted(billedB.id, repeatB.id))
	}
	if got := ids(s.list(t, "key-one-report-token-0123", "").Clicks); !slices.Equal(got, sorted(billedA.id, repeatA.id, billedA2.id, billedB.id, repeatB.id)) {
		t.Errorf("key-one's clicks %v, want those on site-one", got)
	}
	if got := ids(s.list(t, "key-two-report-token-0123", "").Clicks); !slices.Equal(got, []string{otherSite.id}) {
		t.Errorf("key-two's clicks %v, want %v", got, []string{otherSite.id})
	}

	// Attacks: shop-a.example's token reads none of shop-b.example's
	// clicks, whatever it asks; no token, another's in the URL or a wrong
	// one read nothing.
	fromB := report.Cursor(clicks.Position{Time: at, ID: ""}, false)
	for _, q := range []string{"advertiser=shop-b.example", "api_key=key-one", "after=" + fromB, "billable=true&advertiser=shop-b.example"} {
		res, b := s.clicksOf(t, tokenA, q)
		if res.StatusCode == http.StatusOK && (strings.Contains(string(b), billedB.id) || strings.Contains(string(b), repeatB.id)) {
			t.Errorf("shop-a.example's token with %s reads shop-b.example's clicks: %.300s", q, b)
		}
	}
	for _, c := range []struct{ token, query string }{
		{"", "token=" + tokenB}, {"", "access_token=" + tokenB}, {"", "authorization=Bearer+" + tokenB}, {"not-a-report-token-at-all", ""}, {"", ""},
	} {
		res, b := s.clicksOf(t, c.token, c.query)
		if res.StatusCode != http.StatusUnauthorized || strings.Contains(string(b), billedB.id) || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q, query %q: %d %.200s, want 401", c.token, c.query, res.StatusCode, b)
		}
	}
	res, _ := s.clicksOf(t, tokenA, "")
	if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("headers %v, want no-store and no CORS", res.Header)
	}

	// Pages: all clicks of one nanosecond, every one once, in order, and
	// newest first in the order's reverse; a cursor continues its own
	// order only.
	// (Two limits an order: the report requests of one address are
	// limited.)
	for _, order := range []string{"", "desc"} {
		want := wantA
		if order == "desc" {
			want = slices.Clone(wantA)
			slices.Reverse(want)
		}
		for _, limit := range []int{1, 3} {
			var paged []string
			first := fmt.Sprintf("limit=%d&order=%s", limit, order)
			q := first
			for range 10 {
				l := s.list(t, tokenA, q)
				if len(l.Clicks) > limit || len(l.Clicks) == 0 {
					t.Fatalf("limit %d: a page of %d", limit, len(l.Clicks))
				}
				paged = append(paged, ids(l.Clicks)...)
				if l.Next == nil {
					break
				}
				if limit != 1 || len(paged) > 1 {
					q = first + "&after=" + url.QueryEscape(*l.Next)
					continue
				}
				other := map[bool]string{true: "asc", false: "desc"}[order == "desc"]
				res, b := s.clicksOf(t, tokenA, fmt.Sprintf("limit=%d&order=%s&after=%s", limit, other, url.QueryEscape(*l.Next)))
				if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"param":"after"`) {
					t.Errorf("order %q's cursor given with order=%s: %d %.200s, want 400 naming after", order, other, res.StatusCode, b)
				}
				q = first + "&after=" + url.QueryEscape(*l.Next)
			}
			if !slices.Equal(paged, want) {
				t.Errorf("order %q, limit %d: pages give %v, want %v", order, limit, paged, want)
			}
		}
	}

	// CSV: the yk_tag "-1:cmd" a spreadsheet would read as a formula is
	// inert; the bids are those of the JSON.
	res, b := s.clicksOf(t, tokenA, "format=csv")
	recs, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil || res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" || len(recs) != 1+len(wantA) {
		t.Fatalf("CSV: %d %v %q", res.StatusCode, err, b)
	}
	if !slices.Equal(recs[0], report.ClickColumns) {
		t.Errorf("CSV header %v", recs[0])
	}
	for i, rec := range recs[1:] {
		c := all.Clicks[i]
		bid := ""
		if c.Bid != nil {
			bid = *c.Bid
		}
		id := c.ID // an id is base64url: it may begin with -
		if strings.HasPrefix(id, "-") {
			id = "'" + id
		}
		if rec[0] != id || rec[11] != bid || (c.ID != otherSite.id && rec[7] != "'-1:cmd") {
			t.Errorf("CSV row %v, want click %s, bid %q, yk_tag '-1:cmd", rec, id, bid)
		}
	}

	// Bad parameters are named.
	for q, param := range map[string]string{"limit=0": "limit", "limit=10001": "limit", "after=xyz": "after",
		"billable=yes": "billable", "from=2026-01-01&to=2026-02-01": "from", "format=xml": "format", "limit=1&limit=2": "limit",
		"order=newest": "order", "order=DESC": "order"} {
		res, b := s.clicksOf(t, tokenA, q)
		var e struct{ Error struct{ Param string } }
		if err := json.Unmarshal(b, &e); res.StatusCode != http.StatusBadRequest || err != nil || e.Error.Param != param {
			t.Errorf("%s: %d %.200s, want 400 naming %s", q, res.StatusCode, b, param)
		}
	}

	if pg != nil {
		if err := pg.Stop(); err != nil {
			t.Fatal(err)
		}
		res, b := s.clicksOf(t, tokenA, "")
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `"reports_unavailable"`) {
			t.Errorf("with Postgres down: %d %.200s, want 503 reports_unavailable", res.StatusCode, b)
		}
	}
}
