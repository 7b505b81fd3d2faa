package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/store"
)

// clicks asks GET /v2/clicks with token (none when "") and returns the
// answer.
func (env *reportEnv) clicks(t testing.TB, token, query string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v2/clicks?"+query, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Origin", "https://elsewhere.example")
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	res := rec.Result()
	return res, readBody(t, res)
}

// TestClicksAddUpToTheReport: over two days of every kind of click, the
// listing's pages give each click of the log once, and per day its
// billed bids add up to the report's spend, its clicks to the report's
// clicks, and its unbilled reasons to the report's counts.
func TestClicksAddUpToTheReport(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	from, to := testClock.UTC().Format(time.DateOnly), testClock.UTC().Add(24*time.Hour).Format(time.DateOnly)
	var logged int
	env.log.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.APIKey == "demo" {
			logged++
		}
		return nil
	})
	type day struct {
		clicks, billable int64
		spend            int64
		unbilled         map[string]int64
	}
	got := map[string]*day{}
	seen := map[string]bool{}
	q := "from=" + from + "&to=" + to + "&limit=7"
	for pages := 0; ; pages++ {
		if pages > logged {
			t.Fatal("the pages do not end")
		}
		res, body := env.clicks(t, partners.DemoReportToken, q)
		var page struct {
			Clicks []struct {
				ID, Time, Reason string
				Billable         bool
				Bid              *string
			}
			Next *string
		}
		if err := json.Unmarshal(body, &page); res.StatusCode != http.StatusOK || err != nil || len(page.Clicks) > 7 {
			t.Fatalf("%s: %d %v %.300s", q, res.StatusCode, err, body)
		}
		for _, c := range page.Clicks {
			if seen[c.ID] {
				t.Errorf("click %s twice", c.ID)
			}
			seen[c.ID] = true
			d := got[c.Time[:10]]
			if d == nil {
				d = &day{unbilled: map[string]int64{}}
				got[c.Time[:10]] = d
			}
			d.clicks++
			if c.Billable {
				m, err := accounts.ParseMicros(*c.Bid)
				if err != nil {
					t.Fatal(err)
				}
				d.billable++
				d.spend += m
			} else {
				d.unbilled["unbilled_"+c.Reason]++
			}
		}
		if page.Next == nil {
			break
		}
		q = "from=" + from + "&to=" + to + "&limit=7&after=" + url.QueryEscape(*page.Next)
	}
	if len(seen) != logged || logged == 0 {
		t.Fatalf("the pages give %d clicks, the log holds %d", len(seen), logged)
	}
	res, body := env.report(t, partners.DemoReportToken, "from="+from+"&to="+to+"&group_by=day")
	var rep struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &rep); res.StatusCode != http.StatusOK || err != nil || len(rep.Rows) != 2 {
		t.Fatalf("report: %d %v %.300s", res.StatusCode, err, body)
	}
	for _, row := range rep.Rows {
		d := got[row["day"].(string)]
		if d == nil {
			t.Fatalf("the report's day %v has no clicks listed", row["day"])
		}
		spend, _ := accounts.ParseMicros(row["spend"].(string))
		if spend != d.spend || int64(row["clicks"].(float64)) != d.clicks || int64(row["billable_clicks"].(float64)) != d.billable {
			t.Errorf("day %v: report %v; listed %d clicks, %d billed, bids %d micros", row["day"], row, d.clicks, d.billable, d.spend)
		}
		for _, reason := range clicks.Reasons {
			if n := int64(row["unbilled_"+reason].(float64)); n != d.unbilled["unbilled_"+reason] {
				t.Errorf("day %v: %d unbilled_%s in the report, %d listed", row["day"], n, reason, d.unbilled["unbilled_"+reason])
			}
		}
	}
}

// TestOpenAPIValidatesClicks checks the listing's answers against the
// document: a page (200), a request without a token (401), one over the
// client network's report limit, which reports and listings share (429),
// and one while the click log does not answer (503).
func TestOpenAPIValidatesClicks(t *testing.T) {
	doc := loadOpenAPI(t)
	op := doc.op(t, "/v2/clicks", "get")
	env := newReportEnv(t)
	env.traffic(t)
	check := func(what string, res *http.Response, body []byte, status int) {
		t.Helper()
		if res.StatusCode != status {
			t.Fatalf("%s: %s %.300s, want %d", what, res.Status, body, status)
		}
		if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: readable by other origins", what)
		}
	}
	res, body := env.clicks(t, partners.DemoReportToken, "from="+testClock.UTC().Format(time.DateOnly)+"&limit=2")
	check("a page", res, body, http.StatusOK)
	if res.Header.Get("X-Adlink-Next") == "" {
		t.Errorf("a page of more: no X-Adlink-Next")
	}
	res, body = env.clicks(t, "", "")
	check("without a token", res, body, http.StatusUnauthorized)
	for range reportLimit.Burst {
		env.report(t, partners.DemoReportToken, "")
	}
	res, body = env.clicks(t, partners.DemoReportToken, "")
	check("past the reports' limit", res, body, http.StatusTooManyRequests)

	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	book, err := accounts.New([]partners.Partner{partners.Demo()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Accounts: book, Clicks: log, ClickLog: log})
	req := httptest.NewRequest(http.MethodGet, "/v2/clicks", nil)
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res = rec.Result()
	body = readBody(t, res)
	check("with the store closed", res, body, http.StatusServiceUnavailable)
	if res.Header.Get("Retry-After") == "" {
		t.Errorf("with the store closed: no Retry-After")
	}
}
