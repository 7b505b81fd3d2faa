package api

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// TestBudgetHoldsItsCurrency is the mixed-currency attack: an advertiser
// whose daily budget is in EUR also has an ad in the en-GB market, whose
// bid is in GBP (the catalog's load refuses such a catalog; this server is
// given it directly, as a catalog that slipped past would be). Its GBP
// clicks must neither spend the EUR budget as if they were euros nor
// bill without a bound: they land and are over_budget, the EUR clicks
// still bill the whole budget and no more, and the advertiser's report
// keeps each currency on a row of its own.
func TestBudgetHoldsItsCurrency(t *testing.T) {
	const token = "handy-bestkauf-report-token"
	gb := match.Ad{ID: "HANDY.1.UK", Kind: match.KindProduct, Title: "Used phones bought and sold", Keywords: []string{"phone"},
		Landing: "https://handy-bestkauf.de/uk/phones", Advertiser: "handy-bestkauf.de", Markets: []match.Market{mGB},
		BidMicros: 450_000}
	env := newBudgetEnvWith(t, append(fixture(), gb), []accounts.AdvertiserAccount{
		{ID: "handy-bestkauf.de", DailyBudget: "0.90", Currency: "EUR", ReportToken: token},
	}, testClock)

	network := 0
	for i := range 5 {
		l, ok := env.search(t, "q=phone&loc=gb&lang=en&size=10")[gb.ID]
		if !ok {
			t.Fatalf("search %d: the GBP ad is not in the answer", i)
		}
		network++
		if c := env.clickTo(t, l, network, gb.Landing); c.Billable || c.Reason != clicks.ReasonOverBudget || c.Currency != "GBP" {
			t.Fatalf("GBP click %d against a EUR budget: billable %v %q in %q, want over_budget in GBP", i, c.Billable, c.Reason, c.Currency)
		}
	}
	if s := env.ledgerSpent(t); s != 0 {
		t.Errorf("after five GBP clicks the EUR budget has spent %d, want 0", s)
	}
	var billed int64
	for i := range 4 {
		l, ok := env.search(t, handyQuery)["handy-bestkauf.de"]
		if !ok {
			if i < 2 {
				t.Fatalf("the EUR ad left the answers after %d EUR clicks, within its budget", i)
			}
			break
		}
		network++
		c := env.click(t, l, network)
		if (i < 2) != c.Billable {
			t.Fatalf("EUR click %d: billable %v %q", i, c.Billable, c.Reason)
		}
		billed += c.Spend()
	}
	if billed != 900_000 {
		t.Errorf("the EUR clicks billed %d, want the whole budget, 900000", billed)
	}

	res, body := env.report(t, token, "from=2026-11-22&to=2026-11-22&group_by=ad&format=json")
	var rep struct {
		Rows []map[string]any `json:"rows"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &rep) != nil {
		t.Fatalf("report: %d %s", res.StatusCode, body)
	}
	got := map[string]string{}
	for _, r := range rep.Rows {
		got[r["ad"].(string)+" "+r["currency"].(string)] = r["spend"].(string) + " billed " + strconv.Itoa(int(r["billable_clicks"].(float64))) +
			" over " + strconv.Itoa(int(r["unbilled_over_budget"].(float64)))
	}
	want := map[string]string{"HANDY.1.UK GBP": "0.00 billed 0 over 5", "handy-bestkauf.de EUR": "0.90 billed 2 over 0"}
	if len(got) != len(want) || got["HANDY.1.UK GBP"] != want["HANDY.1.UK GBP"] || got["handy-bestkauf.de EUR"] != want["handy-bestkauf.de EUR"] {
		t.Errorf("the advertiser's report by ad: %v, want %v", got, want)
	}
}

// ledgerSpent is handy-bestkauf.de's spend of the day as the ledger keeps it.
func (env *budgetEnv) ledgerSpent(t *testing.T) int64 {
	t.Helper()
	s, err := env.rollups.Spent(t.Context(), "handy-bestkauf.de", env.clock())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// report asks the server for a report with token.
func (env *budgetEnv) report(t *testing.T, token, query string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v2/report?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	res := rec.Result()
	return res, readBody(t, res)
}
