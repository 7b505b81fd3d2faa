package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
)

// budgetAnswer is GET /v2/budget's JSON.
type budgetAnswer struct {
	Account struct {
		Kind, ID string
	}
	Day         string
	Timezone    string
	Currency    *string
	DailyBudget *string `json:"daily_budget"`
	Spent       string
	Pacing      *string
	Status      string
	ResetsAt    string `json:"resets_at"`
}

// TestBudgetOfToday: an advertiser reads its daily budget of today in its
// time zone, one whose date is not UTC's: after a billed click it spent
// one bid and its ads run; after the second its budget is spent, as
// /v2/report's spend of the local day says, and its ads are out until
// its local midnight, when a new day begins with nothing spent and the
// day before stays readable. Another advertiser's token reads only its
// own, a partner's is refused, a token in the URL is none, and a bad day
// is named. So with the bbolt file and with Postgres, which answers 503
// once it is down.
func TestBudgetOfToday(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testBudgetOfToday(t, nil) })
	t.Run("postgres", func(t *testing.T) { testBudgetOfToday(t, testpg.Start(t)) })
}

func testBudgetOfToday(t *testing.T, pg *testpg.Server) {
	const (
		bid         = 100_000
		shopToken   = "shop-report-token-0123"
		otherToken  = "other-report-token-0123"
		zoneName    = "America/Los_Angeles"
		partnerRead = "key-two-report-token-0123"
	)
	loc, err := time.LoadLocation(zoneName)
	if err != nil {
		t.Fatal(err)
	}
	// 02:00 UTC is the evening before in Los Angeles: the budget's day is
	// not UTC's.
	now := time.Now().UTC()
	start := time.Date(now.Year(), now.Month(), now.Day(), 2, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&start)
	set := func(*config.Config) {}
	if pg != nil {
		set = func(c *config.Config) { c.PostgresURL = pg.URL() }
	}
	other := handies(1, "p", bid)[0]
	other.ID, other.Advertiser, other.Landing = "OTHER.1.O0", "other.example", "https://other.example/p"
	s := startAccountsAt(t, twoPartners, `{"advertisers":[
		{"id":"shop.example","report_token":"`+shopToken+`","daily_budget":"0.20","currency":"EUR","timezone":"`+zoneName+`"},
		{"id":"other.example","report_token":"`+otherToken+`","daily_budget":"1.00","currency":"EUR","pacing":"even"}]}`,
		append(handies(1, "p", bid), other), set, func() time.Time { return *clock.Load() })

	read := func(token, query string) (int, budgetAnswer, string) {
		t.Helper()
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		status, body := s.get(t, "/v2/budget?"+query, h)
		var a budgetAnswer
		if status == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &a); err != nil {
				t.Fatalf("/v2/budget: %v %.300s", err, body)
			}
		}
		return status, a, body
	}
	today := start.In(loc).Format(time.DateOnly)
	midnight := clicks.BudgetDayIn(start, loc).Start(loc).AddDate(0, 0, 1)
	check := func(what, token, query string, want budgetAnswer) {
		t.Helper()
		status, got, body := read(token, query)
		if status != http.StatusOK || got.Day != want.Day || got.Timezone != want.Timezone || got.Spent != want.Spent ||
			got.Status != want.Status || got.ResetsAt != want.ResetsAt || got.Account.ID != want.Account.ID ||
			got.Currency == nil || *got.Currency != "EUR" || got.DailyBudget == nil || *got.DailyBudget != *want.DailyBudget ||
			got.Pacing == nil || *got.Pacing != *want.Pacing {
			t.Errorf("%s: %d %s, want %+v", what, status, body, want)
		}
	}
	str := func(s string) *string { return &s }
	shop := func(day, spent, status string, resets time.Time) budgetAnswer {
		a := budgetAnswer{Day: day, Timezone: zoneName, Spent: spent, Status: status, ResetsAt: resets.Format(time.RFC3339),
			DailyBudget: str("0.20"), Pacing: str("asap")}
		a.Account.ID = "shop.example"
		return a
	}

	check("before any click", shopToken, "", shop(today, "0.00", "active", midnight))
	links := s.links(t, "key-two", "site-two", "SHOP.1.H0", 3)
	if c := s.click(t, links[0], 1); !c.Billable {
		t.Fatalf("the first click: %q, want billed", c.Reason)
	}
	check("after one click", shopToken, "", shop(today, "0.10", "active", midnight))
	otherLink := s.links(t, "key-two", "site-two", "OTHER.1.O0", 1)[0]
	if c := s.click(t, otherLink, 2); !c.Billable {
		t.Fatalf("other.example's click: %q, want billed", c.Reason)
	}
	if c := s.click(t, links[1], 3); !c.Billable {
		t.Fatalf("the second click: %q, want billed", c.Reason)
	}
	if c := s.click(t, links[2], 4); c.Billable || c.Reason != clicks.ReasonOverBudget {
		t.Fatalf("the third click: billable %v %q, want over_budget", c.Billable, c.Reason)
	}
	spentDay := shop(today, "0.20", "spent", midnight)
	check("the budget spent", shopToken, "", spentDay)
	if _, l := s.search(t, "key-two", "site-two", "SHOP.1.H0"); len(l) != 0 {
		t.Errorf("the budget spent: %d ads of shop.example, want none", len(l))
	}
	status, body := s.get(t, "/v2/report?tz="+zoneName+"&from="+today+"&to="+today, http.Header{"Authorization": {"Bearer " + shopToken}})
	var rep struct{ Rows []struct{ Spend string } }
	if err := json.Unmarshal([]byte(body), &rep); status != http.StatusOK || err != nil || len(rep.Rows) != 1 || rep.Rows[0].Spend != "0.20" {
		t.Errorf("the report of the local day: %d %.300s, want the budget's spend, 0.20", status, body)
	}

	// The other advertiser sees its own budget and spend, in UTC.
	utcToday := start.Format(time.DateOnly)
	o := budgetAnswer{Day: utcToday, Timezone: "UTC", Spent: "0.10", Status: "active",
		ResetsAt:    time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339),
		DailyBudget: str("1.00"), Pacing: str("even")}
	o.Account.ID = "other.example"
	check("the other advertiser", otherToken, "", o)
	for _, q := range []string{"advertiser=shop.example", "id=shop.example", "account=shop.example"} {
		check("the other advertiser asking for shop.example", otherToken, q, o)
	}

	// Refused: a partner's token, none, one in the URL, a wrong one.
	status, body = s.get(t, "/v2/budget", http.Header{"Authorization": {"Bearer " + partnerRead}})
	if status != http.StatusForbidden || !strings.Contains(body, `"not_an_advertiser"`) || strings.Contains(body, "0.20") {
		t.Errorf("a partner's token: %d %.300s, want 403 not_an_advertiser", status, body)
	}
	for _, q := range []string{"token=" + shopToken, "access_token=" + shopToken, "authorization=Bearer+" + shopToken, ""} {
		if status, _, body := read("", q); status != http.StatusUnauthorized || strings.Contains(body, "0.20") {
			t.Errorf("no token, query %q: %d %.300s, want 401", q, status, body)
		}
	}
	if status, _, body := read("not-a-report-token-at-all", ""); status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d %.300s, want 401", status, body)
	}
	req, err := http.NewRequest(http.MethodGet, s.pub.URL+"/v2/budget", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+shopToken)
	req.Header.Set("Origin", "https://evil.example")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("Vary") != "Authorization" {
		t.Errorf("/v2/budget headers %v, want no-store, Vary: Authorization and no CORS", r.Header)
	}

	// Local midnight: a new day, nothing spent, the ads back; the day
	// before stays readable by its date.
	next := midnight.Add(time.Minute)
	clock.Store(&next)
	tomorrow := next.In(loc).Format(time.DateOnly)
	check("after local midnight", shopToken, "", shop(tomorrow, "0.00", "active", midnight.AddDate(0, 0, 1)))
	check("the day before", shopToken, "day="+today, spentDay)
	if _, l := s.search(t, "key-two", "site-two", "SHOP.1.H0"); len(l) == 0 {
		t.Errorf("after local midnight: no ad of shop.example, want its ads back")
	}

	// Bad days are named.
	for _, q := range []string{"day=" + next.In(loc).AddDate(0, 0, 1).Format(time.DateOnly),
		"day=" + next.In(loc).AddDate(0, 0, -32).Format(time.DateOnly), "day=2026-13-01", "day=yesterday",
		"day=" + today + "&day=" + today} {
		status, body := s.get(t, "/v2/budget?"+q, http.Header{"Authorization": {"Bearer " + shopToken}})
		var e struct{ Error struct{ Param string } }
		if err := json.Unmarshal([]byte(body), &e); status != http.StatusBadRequest || err != nil || e.Error.Param != "day" {
			t.Errorf("%s: %d %.300s, want 400 naming day", q, status, body)
		}
	}
	check("31 days back", shopToken, "day="+next.In(loc).AddDate(0, 0, -31).Format(time.DateOnly),
		shop(next.In(loc).AddDate(0, 0, -31).Format(time.DateOnly), "0.00", "active",
			clicks.BudgetDayIn(next, loc).Start(loc).AddDate(0, 0, -30)))

	if pg != nil {
		if err := pg.Stop(); err != nil {
			t.Fatal(err)
		}
		status, body := s.get(t, "/v2/budget", http.Header{"Authorization": {"Bearer " + shopToken}})
		if status != http.StatusServiceUnavailable || !strings.Contains(body, `"reports_unavailable"`) {
			t.Errorf("with Postgres down: %d %.300s, want 503 reports_unavailable", status, body)
		}
	}
}

// TestBudgetOfAnAdvertiserWithoutOne: an advertiser with no daily budget
// reads its spend of the UTC day, and no budget.
func TestBudgetOfAnAdvertiserWithoutOne(t *testing.T) {
	s := startAccountsAt(t, twoPartners, `{"advertisers":[{"id":"shop.example","report_token":"shop-report-token-0123"}]}`,
		handies(1, "p", 100_000), nil, nil)
	link := s.links(t, "key-two", "site-two", "SHOP.1.H0", 1)[0]
	if c := s.click(t, link, 1); !c.Billable {
		t.Fatalf("the click: %q, want billed", c.Reason)
	}
	status, body := s.get(t, "/v2/budget", http.Header{"Authorization": {"Bearer shop-report-token-0123"}})
	var a budgetAnswer
	if err := json.Unmarshal([]byte(body), &a); status != http.StatusOK || err != nil || a.Status != "no_budget" ||
		a.Spent != "0.10" || a.DailyBudget != nil || a.Timezone != "UTC" || a.Account.ID != "shop.example" {
		t.Errorf("%d %.300s, want no_budget and 0.10 spent", status, body)
	}
}
