package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/store"
)

// TestOpenAPIValidatesReportErrors checks the report's errors against
// the document, codes included: a request without a token (401), one over
// the client network's report limit (429), and one while the store the
// reports are read from does not answer (503), here a state file closed
// under the server.
func TestOpenAPIValidatesReportErrors(t *testing.T) {
	doc := loadOpenAPI(t)
	op := doc.op(t, "/v2/report", "get")

	env := newReportEnv(t)
	res, body := env.report(t, "", "")
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %s %s", res.Status, body)
	}
	if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
		t.Errorf("without a token: %v", err)
	}
	for range reportLimit.Burst {
		env.report(t, partners.DemoReportToken, "group_by=day")
	}
	res, body = env.report(t, partners.DemoReportToken, "group_by=day")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("over the report limit: %s %s", res.Status, body)
	}
	if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
		t.Errorf("over the report limit: %v", err)
	}

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
	h := NewServer(Deps{Config: config.Default(), Indexes: ix, Partners: testPartners(t), Accounts: book, Rollups: rollups, Clicks: log})
	req := httptest.NewRequest(http.MethodGet, "/v2/report", nil)
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res = rec.Result()
	body = readBody(t, res)
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with the store closed: %s %s", res.Status, body)
	}
	if err := doc.validateResponse(t, op, res.StatusCode, res.Header.Get("Content-Type"), body); err != nil {
		t.Errorf("with the store closed: %v", err)
	}
}
