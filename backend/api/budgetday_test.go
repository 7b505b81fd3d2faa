package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/store"
)

// TestOpenAPIValidatesBudgetAnswers checks GET /v2/budget's answers
// against the document, over loopback: an advertiser's budget, one
// without a budget, a partner's token (403), none (401), a bad day (400)
// and a store that does not answer (503), here a state file closed under
// the server.
func TestOpenAPIValidatesBudgetAnswers(t *testing.T) {
	doc := loadOpenAPI(t)
	op := doc.op(t, "/v2/budget", "get")
	const noBudget = "no-budget-report-token-0123"
	book, err := accounts.New([]partners.Partner{partners.Demo()},
		append(accounts.Demo(), accounts.AdvertiserAccount{ID: "nobudget.example", ReportToken: noBudget}))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := market.Build(fixture())
	if err != nil {
		t.Fatal(err)
	}
	serve := func(closed bool) *httptest.Server {
		db, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		rollups, err := clicks.NewRollups(db)
		if err != nil {
			t.Fatal(err)
		}
		log, err := clicks.New(db)
		if err != nil {
			t.Fatal(err)
		}
		if closed {
			db.Close()
		} else {
			t.Cleanup(func() { db.Close() })
		}
		srv := httptest.NewServer(NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Accounts: book,
			Rollups: rollups, Clicks: log, Spend: rollups}))
		t.Cleanup(srv.Close)
		return srv
	}
	srv := serve(false)
	ask := func(srv *httptest.Server, token, query string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/budget?"+query, nil)
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
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}
	for _, c := range []struct {
		name, token, query string
		status             int
		has                string
	}{
		{"the demo advertiser", "demo-advertiser-report", "", http.StatusOK, `"status":"active"`},
		{"an advertiser without a budget", noBudget, "format=json", http.StatusOK, `"status":"no_budget"`},
		{"a partner", partners.DemoReportToken, "", http.StatusForbidden, `"code":"not_an_advertiser"`},
		{"no token", "", "", http.StatusUnauthorized, `"code":"unauthorized"`},
		{"a bad day", "demo-advertiser-report", "day=2026-02-30", http.StatusBadRequest, `"param":"day"`},
		{"a format other than json", "demo-advertiser-report", "format=csv", http.StatusBadRequest, `"param":"format"`},
	} {
		res, body := ask(srv, c.token, c.query)
		if res.StatusCode != c.status || !strings.Contains(string(body), c.has) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, res.StatusCode, body, c.status, c.has)
		}
		if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	res, body := ask(serve(true), "demo-advertiser-report", "")
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"reports_unavailable"`) || res.Header.Get("Retry-After") == "" {
		t.Errorf("with the store closed: %d %s", res.StatusCode, body)
	}
	if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
		t.Errorf("with the store closed: %v", err)
	}
}
