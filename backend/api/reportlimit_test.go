package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/report"
)

// One report token cannot run reports without end by asking from many
// client networks: a holder of an IPv6 /48 has 65,536 of them, each with
// the network's report limit. The token's account has a limit of its
// own, which reports, listings and budgets share, and another account's
// reports go on.
func TestReportLimitedPerAccountAcrossNetworks(t *testing.T) {
	env := newReportEnv(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	ask := func(token, path, ip string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", ip)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res, readBody(t, res)
	}
	const networks = 4 * 50
	paths := []string{"/v2/report?group_by=hour,site_id,ad,country&from=2026-01-01&to=2026-11-22&tz=Europe/Berlin",
		"/v2/clicks?order=desc&limit=1000"}
	start := time.Now()
	served := 0
	for i := range networks {
		path := paths[i%len(paths)]
		res, body := ask(partners.DemoReportToken, path, fmt.Sprintf("2001:db8:48:%x::1", i))
		switch res.StatusCode {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if e.Error.Limit != "report_account" || res.Header.Get("Retry-After") == "" {
				t.Fatalf("a 429 of %s: %s, want limit report_account and Retry-After", path, body)
			}
		default:
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
	}
	refilled := int(time.Since(start).Seconds()*reportAccountLimit.Rate) + 1
	if bound := reportAccountLimit.Burst + refilled; served > bound {
		t.Errorf("one token from %d networks of one /48: %d reports and listings served, want at most %d", networks, served, bound)
	}
	if served < reportAccountLimit.Burst {
		t.Errorf("one token from %d networks: %d served, want at least the account's burst, %d", networks, served, reportAccountLimit.Burst)
	}
	// Other accounts' limits are their own.
	for _, token := range []string{"the k2 partner's token", advertiserToken} {
		if res, body := ask(token, paths[0], "2001:db8:48:ffff::1"); res.StatusCode != http.StatusOK {
			t.Errorf("another account's report after the flood: %d %s", res.StatusCode, body)
		}
	}
}

// A report is kept whole in memory: one of more than report.MaxRows rows
// (a year by the hour and every dimension) is refused, naming group_by,
// and one within it is answered.
func TestReportOfTooManyRowsRefused(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	old := report.MaxRows
	t.Cleanup(func() { report.MaxRows = old })
	q := "from=2025-11-23&to=2026-11-22&tz=Europe/Berlin&group_by="
	_, body := env.report(t, partners.DemoReportToken, q+"hour,site_id,ad,criterion,yk_tag,country")
	var all struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &all); err != nil || len(all.Rows) < 4 {
		t.Fatalf("%v: %s, want rows", err, body)
	}
	report.MaxRows = len(all.Rows) - 1
	res, body := env.report(t, partners.DemoReportToken, q+"hour,site_id,ad,criterion,yk_tag,country")
	var e errorResponse
	if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != http.StatusBadRequest ||
		e.Error.Code != CodeInvalidParameter || e.Error.Param != "group_by" || !strings.Contains(e.Error.Message, "fewer groups") {
		t.Errorf("a report of %d rows over a bound of %d: %d %s, want 400 naming group_by", len(all.Rows), report.MaxRows, res.StatusCode, body)
	}
	if res, body := env.report(t, partners.DemoReportToken, q+"day"); res.StatusCode != http.StatusOK {
		t.Errorf("a report of fewer rows: %d %s", res.StatusCode, body)
	}
}
