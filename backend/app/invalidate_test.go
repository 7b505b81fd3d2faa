package app

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/metrics"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/internal/testpg"
)

// invalidateAdvertisers are listingAdvertisers with shop-b.example on a
// daily budget of one of its clicks.
const invalidateAdvertisers = `{"advertisers":[
	{"id":"shop-a.example","report_token":"shop-a-report-token-0123"},
	{"id":"shop-b.example","report_token":"shop-b-report-token-0123","daily_budget":"0.30","currency":"EUR"}]}`

// invalidate posts form to the admin listener's /admin/invalidate with
// the headers h and returns the status and body.
func (s *accountsServer) invalidate(t *testing.T, form url.Values, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.admin.URL+"/admin/invalidate", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header[k] = v
	}
	if host := h.Get("Host"); host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// partnerReport is the partner's report of the days around today, one
// row, as a map of its columns.
func (s *accountsServer) partnerReport(t *testing.T, token string) map[string]any {
	t.Helper()
	status, body := s.get(t, "/v2/report?group_by=&from="+time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly),
		http.Header{"Authorization": {"Bearer " + token}})
	var rep struct{ Rows []map[string]any }
	if err := json.Unmarshal([]byte(body), &rep); status != http.StatusOK || err != nil || len(rep.Rows) != 1 {
		t.Fatalf("report: %d %v %.300s", status, err, body)
	}
	return rep.Rows[0]
}

// TestInvalidate: POST /admin/invalidate credits exactly one site's
// billed clicks: its partner's report loses their bids and billable
// count, the other partner's is as it was, /v2/clicks lists them
// invalidated; a dry run changes nothing, a second run credits nothing,
// a request without a selector, a cross-origin one and one by a
// non-loopback name are refused; and a credit today lets the advertiser
// whose budget was spent bill again; on the bbolt file and on Postgres.
func TestInvalidate(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testInvalidate(t, nil) })
	t.Run("postgres", func(t *testing.T) { testInvalidate(t, testpg.Start(t)) })
}

func testInvalidate(t *testing.T, pg *testpg.Server) {
	set := func(*config.Config) {}
	if pg != nil {
		set = func(cfg *config.Config) { cfg.PostgresURL = pg.URL() }
	}
	s := startAccountsWith(t, listingPartners, invalidateAdvertisers, listingAds(), set)
	a1 := s.tagged(t, "key-one", "site-one", "t", "SHOP.1.A1", 2)
	a2 := s.tagged(t, "key-two", "site-two", "t", "SHOP.1.A2", 2)
	b1 := s.tagged(t, "key-one", "site-one", "t", "SHOP.2.B1", 3)
	one := []landed{s.follow(t, http.MethodGet, a1[0], 1), s.follow(t, http.MethodGet, a1[1], 2), s.follow(t, http.MethodGet, b1[0], 5)}
	s.follow(t, http.MethodGet, a2[0], 3)
	s.follow(t, http.MethodGet, a2[1], 4)
	over := s.follow(t, http.MethodGet, b1[1], 6) // shop-b.example spent its budget

	const tokenOne, tokenTwo = "key-one-report-token-0123", "key-two-report-token-0123"
	before1, before2 := s.partnerReport(t, tokenOne), s.partnerReport(t, tokenTwo)
	if before1["billable_clicks"] != 3.0 || before1["spend"] != "0.54" || before2["billable_clicks"] != 2.0 || before2["spend"] != "0.10" {
		t.Fatalf("reports before: %v, %v", before1, before2)
	}
	if l := s.list(t, "shop-b-report-token-0123", ""); len(l.Clicks) != 2 || !l.Clicks[0].Billable && !l.Clicks[1].Billable {
		t.Fatalf("shop-b.example's clicks before: %+v", l.Clicks)
	}
	for _, c := range s.list(t, "shop-b-report-token-0123", "").Clicks {
		if c.ID == over.id && c.Reason != clicks.ReasonOverBudget {
			t.Fatalf("the click past shop-b.example's budget: %q, want over_budget", c.Reason)
		}
	}

	day := time.Now().UTC().Format(time.DateOnly)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	site := url.Values{"api_key": {"key-one"}, "site_id": {"site-one"}, "from": {yesterday}, "to": {day}, "reason": {"its script navigates Safari readers to ad URLs"}}

	// Refused: no selector, cross-origin, a name a page may rebind.
	status, body := s.invalidate(t, url.Values{"from": {yesterday}, "to": {day}, "reason": {"all"}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(body, `"param":"site_id"`) {
		t.Errorf("no selector: %d %s, want 400 naming site_id", status, body)
	}
	status, body = s.invalidate(t, site, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}})
	if status != http.StatusForbidden {
		t.Errorf("cross-origin: %d %s, want 403", status, body)
	}
	status, body = s.invalidate(t, site, http.Header{"Host": {"admin.evil.example"}})
	if status != http.StatusForbidden {
		t.Errorf("Host admin.evil.example: %d %s, want 403", status, body)
	}

	// A dry run says what a run credits, and changes nothing.
	dry := url.Values{"dry_run": {"true"}}
	for k, v := range site {
		dry[k] = v
	}
	var got api.Invalidated
	status, body = s.invalidate(t, dry, nil)
	if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil || !got.DryRun || got.Clicks != 3 || got.Micros["EUR"] != 540_000 {
		t.Fatalf("dry run: %d %s, want 3 clicks, 540000 EUR micros", status, body)
	}
	if r := s.partnerReport(t, tokenOne); r["billable_clicks"] != 3.0 || r["spend"] != "0.54" {
		t.Fatalf("report after the dry run: %v", r)
	}

	for i, want := range []int64{3, 0} { // credited once
		status, body = s.invalidate(t, site, nil)
		got = api.Invalidated{}
		if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil || got.DryRun || got.Clicks != want ||
			got.Micros["EUR"] != 540_000*want/3 {
			t.Fatalf("run %d: %d %s, want %d clicks", i+1, status, body, want)
		}
	}
	after1, after2 := s.partnerReport(t, tokenOne), s.partnerReport(t, tokenTwo)
	if after1["billable_clicks"] != 0.0 || after1["spend"] != "0.00" || after1["clicks"] != before1["clicks"] ||
		after1["unbilled_invalidated"] != 3.0 {
		t.Errorf("key-one's report after: %v, before %v", after1, before1)
	}
	for k, v := range before2 {
		if after2[k] != v {
			t.Errorf("key-two's report %s: %v, was %v", k, after2[k], v)
		}
	}
	invalidated := map[string]bool{}
	for _, token := range []string{"shop-a-report-token-0123", "shop-b-report-token-0123"} {
		for _, c := range s.list(t, token, "").Clicks {
			if c.Reason == clicks.ReasonInvalidated {
				invalidated[c.ID] = true
				if c.Billable || c.Bid != nil || c.SiteID != "site-one" {
					t.Errorf("invalidated click %+v", c)
				}
			}
		}
	}
	if len(invalidated) != 3 || !invalidated[one[0].id] || !invalidated[one[1].id] || !invalidated[one[2].id] {
		t.Errorf("clicks listed invalidated: %v, want site-one's %v", invalidated, one)
	}

	// shop-b.example's spend of today is credited: a link issued before
	// bills again.
	again := s.follow(t, http.MethodGet, b1[2], 7)
	billed := false
	for _, c := range s.list(t, "shop-b-report-token-0123", "").Clicks {
		if c.ID == again.id {
			billed = c.Billable
		}
	}
	if !billed {
		t.Errorf("shop-b.example's click after the credit is not billed: the ledger still reads its budget spent")
	}
}

// TestInvalidateLogsARunThatFailedMidway: a run whose second batch fails
// keeps the first batch's credit, and says so: the one line logged names
// the selector, the reason, the clicks credited and the error, and the
// metric counts them.
func TestInvalidateLogsARunThatFailedMidway(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ledger, err := clicks.NewLedger(db)
	if err != nil {
		t.Fatal(err)
	}
	day0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := range 600 {
		c := clicks.Click{Time: day0.Add(time.Duration(i) * time.Minute), AdID: "ad", AdType: "advertiser", Type: "search",
			APIKey: "k", SiteID: "s", IP: fmt.Sprintf("2001:db8:0:%x::1", i), UserAgent: "Mozilla/5.0",
			Advertiser: "eu.example", BidMicros: 1000, Currency: "EUR"}
		if err := ledger.Record(t.Context(), &c, clicks.Use{}); err != nil || !c.Billable {
			t.Fatalf("click %d: %v, billable %v %q", i, err, c.Billable, c.Reason)
		}
	}
	// A record the log cannot read, among the clicks after the first
	// batch of 500.
	if err := db.Update(func(tx *bolt.Tx) error {
		k := binary.BigEndian.AppendUint64(nil, uint64(day0.Add(550*time.Minute+time.Second).UnixNano()))
		return tx.Bucket([]byte("clicks")).Put(binary.BigEndian.AppendUint64(k, 1<<62), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	v, err := clicks.NewInvalidator(db)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	m := metrics.New()
	inv := clicks.Invalidation{APIKey: "k", From: day0, To: day0.AddDate(0, 0, 1), Note: "click farm"}
	credit, err := Invalidate(v, func() *accounts.Book { return nil }, m, slog.New(slog.NewJSONHandler(&logged, nil)))(t.Context(), inv)
	if err == nil || credit.Clicks != 500 {
		t.Fatalf("Invalidate: %+v, %v; want the first batch's 500 clicks and an error", credit, err)
	}
	var line struct {
		Msg, Level, Reason, Err string
		APIKey                  string `json:"api_key"`
		Clicks                  int64
		MicrosEUR               int64 `json:"micros_EUR"`
	}
	if err := json.Unmarshal(logged.Bytes(), &line); err != nil || line.Msg != "invalidate" || line.APIKey != "k" ||
		line.Reason != "click farm" || line.Clicks != 500 || line.MicrosEUR != 500*1000 || line.Err == "" || line.Level != "ERROR" {
		t.Errorf("logged %s (%v), want one error line of the 500 clicks credited", logged.Bytes(), err)
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "adlink_clicks_invalidated_total" {
			counted = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if counted != 500 {
		t.Errorf("adlink_clicks_invalidated_total %v, want 500", counted)
	}
}
