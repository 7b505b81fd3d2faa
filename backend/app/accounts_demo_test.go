package app

import (
	"net/http"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/partners"
)

// With -demo, the demo partner and the demo's advertisers are served
// beside the files' accounts, and every reload adds them again: a change
// of the files, one refused or failed, keeps them; a partner of the file
// with the demo's key stands in for the demo partner, as long as the file
// lists it.

// demoServer serves twoPartners with -demo and no advertisers file.
func demoServer(t *testing.T) *accountsServer {
	t.Helper()
	return startAccountsWith(t, twoPartners, "", nil, func(cfg *config.Config) { cfg.Demo = true })
}

// wantDemo checks that the demo partner searches and reads its report,
// the demo's advertiser reads its own, and its budget holds.
func wantDemo(t *testing.T, what string, s *accountsServer) {
	t.Helper()
	if status, links := s.search(t, "demo", "demo", "handy-bestkauf.de"); status != http.StatusOK || len(links) == 0 {
		t.Errorf("%s: the demo partner's search: %d, %d links; want 200 with ads", what, status, len(links))
	}
	for _, token := range []string{partners.DemoReportToken, accounts.Demo()[0].ReportToken} {
		if status, _ := s.get(t, "/v2/report", http.Header{"Authorization": {"Bearer " + token}}); status != http.StatusOK {
			t.Errorf("%s: the demo's report token %s: %d, want 200", what, token, status)
		}
	}
	if b, ok := s.Catalog().Accounts.Budget("handy-bestkauf.de"); !ok || b.DailyMicros != 25_000_000 || b.Currency != "EUR" {
		t.Errorf("%s: the demo advertiser's budget %+v %v, want 25.00 EUR", what, b, ok)
	}
}

// TestReloadKeepsTheDemo: with -demo, a partner added, a partners file
// refused or failed, and a partner given a report token of the demo's
// (public, so refused) all keep the demo partner and advertisers served.
func TestReloadKeepsTheDemo(t *testing.T) {
	s := demoServer(t)
	wantDemo(t, "at start-up", s)

	added := twoPartners[:len(twoPartners)-2] + `,
		{"api_key":"key-three","sites":[{"id":"site-four","domains":["four.example"]}]}]}`
	writeFile(t, s.partners, []byte(added))
	if status, r := s.reload(t); status != http.StatusOK || r.Partners != "swapped" || r.AccountsError != "" {
		t.Errorf("a partner added: %d %+v", status, r)
	}
	if status, _ := s.search(t, "key-three", "site-four", "handy-bestkauf.de"); status != http.StatusOK {
		t.Errorf("the partner added: %d, want 200", status)
	}
	wantDemo(t, "a partner added", s)

	const twice = "its report token is another account's too"
	withToken := func(token string) string {
		return `{"partners":[{"api_key":"key-two","report_token":"` + token + `","sites":[{"id":"site-two","domains":["two.example"]}]}]}`
	}
	for _, c := range []struct{ name, file, result, problem string }{
		{"bad JSON", `{"partners":[{"api_key":"key-one",`, "failed", "partners file " + s.partners + ": "},
		{"a key twice", `{"partners":[
			{"api_key":"key-one","sites":[{"id":"site-one","domains":["one.example"]}]},
			{"api_key":"key-one","sites":[{"id":"site-two","domains":["two.example"]}]}]}`,
			// Numbered as the file has them, from 0: the demo partner comes
			// after the file's.
			"refused", "partners file " + s.partners + `: partner 1: api_key "key-one" twice`},
		{"the demo key twice", `{"partners":[
			{"api_key":"demo","sites":[{"id":"own","domains":["own.example"]}]},
			{"api_key":"demo","sites":[{"id":"other","domains":["other.example"]}]}]}`,
			"refused", "partners file " + s.partners + `: partner 1: api_key "demo" twice`},
		{"the demo partner's token", withToken(partners.DemoReportToken), "refused", "partners file " + s.partners + ": "},
		// None listed: refused as without -demo, not every partner of the
		// file revoked and the demo left.
		{"no partners", `{"partners":[]}`, "refused", "partners file " + s.partners + ": no partners"},
		{"the demo advertiser's token", withToken(accounts.Demo()[0].ReportToken), "refused",
			"partners file " + s.partners + ", with the advertisers served: "},
	} {
		writeFile(t, s.partners, []byte(c.file))
		status, r := s.reload(t)
		want := map[string]int{"failed": http.StatusBadGateway, "refused": http.StatusConflict}[c.result]
		if status != want || r.Partners != c.result {
			t.Errorf("%s: %d %+v, want %d, the partners %s", c.name, status, r, want, c.result)
		}
		wantKept(t, c.name, r, "partners", s.partners, c.result, c.problem)
		if strings.Contains(c.name, "token") && !strings.Contains(r.AccountsError, twice) {
			t.Errorf("%s: %q, want %q", c.name, r.AccountsError, twice)
		}
		if status, _ := s.search(t, "key-three", "site-four", "handy-bestkauf.de"); status != http.StatusOK {
			t.Errorf("%s: key-three %d, want the partners served to stay", c.name, status)
		}
		wantDemo(t, c.name, s)
	}
}

// TestReloadFileStandsInForTheDemo: a partner of the file with the demo's
// key takes the demo partner's place on reload (its own sites, no public
// report token), a site with the demo's id under another key is that
// key's alone, and the demo partner is back once the file no longer
// lists the key.
func TestReloadFileStandsInForTheDemo(t *testing.T) {
	s := demoServer(t)
	writeFile(t, s.partners, []byte(`{"partners":[
		{"api_key":"demo","name":"our own demo","sites":[{"id":"own","domains":["own.example"]}]},
		{"api_key":"key-two","sites":[{"id":"site-two","domains":["two.example"]}]}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Partners != "swapped" || r.AccountsError != "" {
		t.Fatalf("the file's own demo partner: %d %+v", status, r)
	}
	demoReport := http.Header{"Authorization": {"Bearer " + partners.DemoReportToken}}
	for _, c := range []struct {
		what         string
		status, want int
	}{
		{"the demo site", first(s.search(t, "demo", "demo", "handy-bestkauf.de")), http.StatusForbidden},
		{"the file's demo site", first(s.search(t, "demo", "own", "handy-bestkauf.de")), http.StatusOK},
		{"the demo's public report token", first(s.get(t, "/v2/report", demoReport)), http.StatusUnauthorized},
		{"key-one, not in the file", first(s.search(t, "key-one", "site-one", "handy-bestkauf.de")), http.StatusUnauthorized},
	} {
		if c.status != c.want {
			t.Errorf("the file's demo partner served, %s: %d, want %d", c.what, c.status, c.want)
		}
	}

	writeFile(t, s.partners, []byte(`{"partners":[
		{"api_key":"key-two","sites":[{"id":"demo","domains":["two.example"]}]}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Partners != "swapped" || r.AccountsError != "" {
		t.Fatalf("the demo key gone from the file: %d %+v", status, r)
	}
	if status, _ := s.search(t, "key-two", "demo", "handy-bestkauf.de"); status != http.StatusOK {
		t.Errorf("key-two's site demo: %d, want 200", status)
	}
	if status, _ := s.search(t, "demo", "own", "handy-bestkauf.de"); status != http.StatusForbidden {
		t.Errorf("the file's demo site, gone: %d, want 403", status)
	}
	wantDemo(t, "the demo key gone from the file", s)
}

// first is the first of a status and what came with it.
func first[T any](status int, _ T) int { return status }
