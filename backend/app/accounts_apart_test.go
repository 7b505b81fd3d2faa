package app

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// The partners and advertisers files are judged each on its own: a bad
// one keeps its accounts served, and the other's change is served with
// them.

// budgetOf is an advertisers file giving handy-bestkauf.de a daily budget
// of daily EUR, and the report token token when not "".
func budgetOf(daily, token string) string {
	if token != "" {
		token = `,"report_token":"` + token + `"`
	}
	return `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"` + daily + `","currency":"EUR"` + token + `}]}`
}

// keyTwoOnly is twoPartners without key-one, and key-two's report token
// token.
func keyTwoOnly(token string) string {
	return `{"partners":[{"api_key":"key-two","report_token":"` + token + `","sites":[{"id":"site-two","domains":["two.example"]}]}]}`
}

// wantKept checks that a reload's answer says, naming the file, that the
// kind's file was result and its accounts served stay.
func wantKept(t *testing.T, what string, r api.Reload, kind, path, result, problem string) {
	t.Helper()
	got := map[string]string{"partners": r.Partners, "advertisers": r.Advertisers}[kind]
	if got != result || !strings.Contains(r.AccountsError, kind+" file "+path) ||
		!strings.Contains(r.AccountsError, problem) || !strings.Contains(r.AccountsError, "the "+kind+" served stay") {
		t.Errorf("%s: %+v, want the %s file %s (%q), its %s served staying", what, r, kind, result, problem, kind)
	}
}

// TestReloadRevokesPastABadAdvertisersFile: the advertisers file broken
// and a key removed from the partners file in one reload: the key is
// revoked (401, its signed clicks bill nothing), the budgets and their
// gate served stay, and the answer names the advertisers file. Reloaded
// with nothing changed, no swap is said again, the problem is.
func TestReloadRevokesPastABadAdvertisersFile(t *testing.T) {
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	links := s.links(t, "key-one", "site-one", "handy-bestkauf.de", 2)
	gate := s.Catalog().Budget

	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"handy-bestkauf.de",`))
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	status, r := s.reload(t)
	if status != http.StatusBadGateway || r.Result != "unchanged" || r.Accounts != "swapped" || r.Partners != "swapped" {
		t.Errorf("a key removed, the advertisers file broken: %d %+v, want 502 with the partners swapped", status, r)
	}
	wantKept(t, "a key removed, the advertisers file broken", r, "advertisers", s.advertisers, "failed", "advertisers file "+s.advertisers)
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	if c := s.click(t, links[0], 1); c.Billable || c.Reason != clicks.ReasonPartner {
		t.Errorf("the key removed, its signed link: billable %v, reason %q; want %q", c.Billable, c.Reason, clicks.ReasonPartner)
	}
	if status, _ := s.search(t, "key-two", "site-two", "handy-bestkauf.de"); status != http.StatusOK {
		t.Errorf("the key kept: %d, want 200", status)
	}
	if b, ok := s.Catalog().Accounts.Budget("handy-bestkauf.de"); !ok || b.DailyMicros != 100_000_000 || s.Catalog().Budget != gate {
		t.Errorf("the budget served: %+v %v, gate kept %v; want 100.00 EUR and its gate", b, ok, s.Catalog().Budget == gate)
	}
	if st := readyz(t, s.App); st.LastRefresh == nil || st.LastRefresh.Partners != "swapped" || st.LastRefresh.Advertisers != "failed" {
		t.Errorf("/readyz: %+v", st.LastRefresh)
	}
	if _, metrics := get(t, s.Admin, "/metrics"); !strings.Contains(metrics, "adlink_catalog_refresh_failing 1") {
		t.Error("/metrics: the advertisers file kept, not failing")
	}

	// Nothing changed but the file still broken: no swap, the problem.
	status, r = s.reload(t)
	if status != http.StatusBadGateway || r.Accounts != "failed" || r.Partners != "" {
		t.Errorf("again, the advertisers file still broken: %d %+v, want 502, nothing swapped", status, r)
	}
	wantKept(t, "again, the advertisers file still broken", r, "advertisers", s.advertisers, "failed", "advertisers file "+s.advertisers)
	if r := s.refresh(t); r.Accounts != "failed" || r.Partners != "" || r.Advertisers != "failed" {
		t.Errorf("the scheduled refresh, the advertisers file still broken: %+v", r)
	}

	// Both files broken: nothing swapped, both named.
	writeFile(t, s.partners, []byte(`{"partners":[{"api_key":"key-one",`))
	status, r = s.reload(t)
	if status != http.StatusBadGateway || r.Accounts != "failed" {
		t.Errorf("both files broken: %d %+v, want 502, the accounts failed", status, r)
	}
	wantKept(t, "both files broken", r, "partners", s.partners, "failed", "partners file "+s.partners)
	wantKept(t, "both files broken", r, "advertisers", s.advertisers, "failed", "advertisers file "+s.advertisers)
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("both files broken, the key removed before: %d, want 401", status)
	}

	// Fixed, the advertisers file is served.
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	writeFile(t, s.advertisers, []byte(budgetOf("50.00", "")))
	if status, r := s.reload(t); status != http.StatusOK || r.Accounts != "swapped" || r.Partners != "" || r.Advertisers != "swapped" || r.AccountsError != "" {
		t.Errorf("the advertisers file fixed: %d %+v", status, r)
	}
	if b, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de"); b.DailyMicros != 50_000_000 {
		t.Errorf("the budget after the fix: %+v, want 50.00", b)
	}
	if _, metrics := get(t, s.Admin, "/metrics"); !strings.Contains(metrics, "adlink_catalog_refresh_failing 0") {
		t.Error("/metrics: both files served, still failing")
	}
}

// TestReloadLowersABudgetPastABadPartnersFile: the partners file broken
// and a budget lowered below the day's spend in one reload: the budget
// holds at once (no ads, clicks over budget), the partners served stay.
func TestReloadLowersABudgetPastABadPartnersFile(t *testing.T) {
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	const adv = "handy-bestkauf.de"
	links := s.links(t, "key-one", "site-one", adv, 2)
	if c := s.click(t, links[0], 1); !c.Billable || c.BidMicros < 10_000 {
		t.Fatalf("the first click: billable %v (%s), bid %d; want it to spend more than 0.01", c.Billable, c.Reason, c.BidMicros)
	}

	writeFile(t, s.partners, []byte(`{"partners":[{"api_key":"key-one",`))
	writeFile(t, s.advertisers, []byte(budgetOf("0.01", "")))
	status, r := s.reload(t)
	if status != http.StatusBadGateway || r.Accounts != "swapped" || r.Advertisers != "swapped" {
		t.Errorf("a budget lowered, the partners file broken: %d %+v, want 502 with the advertisers swapped", status, r)
	}
	wantKept(t, "a budget lowered, the partners file broken", r, "partners", s.partners, "failed", "partners file "+s.partners)
	if b, _ := s.Catalog().Accounts.Budget(adv); b.DailyMicros != 10_000 {
		t.Errorf("the budget served: %+v, want 0.01", b)
	}
	if _, l := s.search(t, "key-one", "site-one", adv); len(l) != 0 {
		t.Errorf("the budget lowered below the spend: %d ads, want none", len(l))
	}
	if c := s.click(t, links[1], 2); c.Billable || c.Reason != clicks.ReasonOverBudget {
		t.Errorf("a click over the lowered budget: billable %v, reason %q", c.Billable, c.Reason)
	}
	for key, site := range map[string]string{"key-one": "site-one", "key-two": "site-two"} {
		if status, _ := s.search(t, key, site, adv); status != http.StatusOK {
			t.Errorf("%s, the partners file broken: %d, want the partners served to stay", key, status)
		}
	}

	status, r = s.reload(t)
	if status != http.StatusBadGateway || r.Accounts != "failed" || r.Advertisers != "" {
		t.Errorf("again, the partners file still broken: %d %+v, want 502, nothing swapped", status, r)
	}
	wantKept(t, "again, the partners file still broken", r, "partners", s.partners, "failed", "partners file "+s.partners)
}

// TestReloadOneTokenInBothFiles: a report token given to a partner in one
// file and to an advertiser in the other is refused together; the new
// partners are served with the advertisers served (a key removed is
// revoked), else the new advertisers with the partners served, and the
// answer says which file stays and why.
func TestReloadOneTokenInBothFiles(t *testing.T) {
	const shared = "shared-report-token-0123456"
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	bearer := http.Header{"Authorization": {"Bearer " + shared}}
	if status, _ := s.get(t, "/v2/report", bearer); status != http.StatusUnauthorized {
		t.Fatalf("the token, before: %d, want 401", status)
	}

	// Both new: the partners win, the advertisers stay.
	writeFile(t, s.partners, []byte(keyTwoOnly(shared)))
	writeFile(t, s.advertisers, []byte(budgetOf("50.00", shared)))
	const why = "its report token is another account's too"
	status, r := s.reload(t)
	if status != http.StatusConflict || r.Accounts != "swapped" || r.Partners != "swapped" {
		t.Errorf("one token in both new files: %d %+v, want 409 with the partners swapped", status, r)
	}
	wantKept(t, "one token in both new files", r, "advertisers", s.advertisers, "refused", "with the new partners file "+s.partners+": ")
	wantKept(t, "one token in both new files", r, "advertisers", s.advertisers, "refused", why)
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	if status, _ := s.get(t, "/v2/report", bearer); status != http.StatusOK {
		t.Errorf("the token, key-two's now: %d, want 200", status)
	}
	if b, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de"); b.DailyMicros != 100_000_000 {
		t.Errorf("the budget served: %+v, want 100.00", b)
	}

	// Nothing changed: no swap, the advertisers file still refused.
	status, r = s.reload(t)
	if status != http.StatusConflict || r.Accounts != "refused" || r.Partners != "" {
		t.Errorf("again: %d %+v, want 409, nothing swapped", status, r)
	}
	wantKept(t, "again", r, "advertisers", s.advertisers, "refused", "with the partners served: ")
	wantKept(t, "again", r, "advertisers", s.advertisers, "refused", why)

	// The token the advertisers' served, given to key-two too: the new
	// partners go with no advertisers, the new advertisers are served.
	const adv = "advertiser-report-token-0123"
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	writeFile(t, s.advertisers, []byte(budgetOf("50.00", adv)))
	if status, r := s.reload(t); status != http.StatusOK || r.Accounts != "swapped" || r.AccountsError != "" {
		t.Fatalf("the files agreeing: %d %+v", status, r)
	}
	writeFile(t, s.partners, []byte(twoPartners[:len(twoPartners)-2]+`,
		{"api_key":"key-three","report_token":"`+adv+`","sites":[{"id":"site-four","domains":["four.example"]}]}]}`))
	writeFile(t, s.advertisers, []byte(budgetOf("20.00", adv)))
	status, r = s.reload(t)
	if status != http.StatusConflict || r.Accounts != "swapped" || r.Advertisers != "swapped" {
		t.Errorf("the advertiser's token given to a partner too: %d %+v, want 409 with the advertisers swapped", status, r)
	}
	wantKept(t, "the advertiser's token given to a partner too", r, "partners", s.partners, "refused", "with the new advertisers file "+s.advertisers+": ")
	wantKept(t, "the advertiser's token given to a partner too", r, "partners", s.partners, "refused", why)
	if b, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de"); b.DailyMicros != 20_000_000 {
		t.Errorf("the budget served: %+v, want 20.00", b)
	}
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("key-one, in the partners file refused: %d, want 401 as served", status)
	}
}

// TestReloadRevokesPastABudgetInAnotherCurrency: a key removed and a
// budget put in a currency the catalog does not bid in, in one reload:
// the partners are served with the advertisers served, and the answer
// names the budget.
func TestReloadRevokesPastABudgetInAnotherCurrency(t *testing.T) {
	s := startAccounts(t, twoPartners, budgetOf("100.00", ""))
	gate := s.Catalog().Budget
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	writeFile(t, s.advertisers, []byte(strings.Replace(budgetOf("50.00", ""), "EUR", "USD", 1)))
	status, r := s.reload(t)
	if status != http.StatusConflict || r.Accounts != "swapped" || r.Partners != "swapped" {
		t.Errorf("a key removed, a budget in USD: %d %+v, want 409 with the partners swapped", status, r)
	}
	wantKept(t, "a key removed, a budget in USD", r, "advertisers", s.advertisers, "refused",
		fmt.Sprintf("advertisers file %s: budgets: advertiser %q has a daily budget in USD", s.advertisers, "handy-bestkauf.de"))
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	if b, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de"); b.Currency != "EUR" || s.Catalog().Budget != gate {
		t.Errorf("the budget served: %+v, gate kept %v; want the EUR one and its gate", b, s.Catalog().Budget == gate)
	}
}

// TestReloadRevokesPastAMissingAdvertisersFile: the advertisers file
// deleted, or a directory in its place, and a key removed: the key is
// revoked, the advertisers served stay; the file put back as served is
// as served again, and nothing fails.
func TestReloadRevokesPastAMissingAdvertisersFile(t *testing.T) {
	served := budgetOf("100.00", "")
	s := startAccounts(t, twoPartners, served)
	if err := os.Remove(s.advertisers); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	status, r := s.reload(t)
	if status != http.StatusBadGateway || r.Accounts != "swapped" || r.Partners != "swapped" {
		t.Errorf("a key removed, the advertisers file deleted: %d %+v, want 502 with the partners swapped", status, r)
	}
	wantKept(t, "the advertisers file deleted", r, "advertisers", s.advertisers, "failed", "no such file")
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	if b, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de"); b.DailyMicros != 100_000_000 {
		t.Errorf("the budget served: %+v, want 100.00", b)
	}

	if err := os.Mkdir(s.advertisers, 0o700); err != nil {
		t.Fatal(err)
	}
	status, r = s.reload(t)
	if status != http.StatusBadGateway || r.Accounts != "failed" || r.Partners != "" {
		t.Errorf("a directory for the advertisers file: %d %+v, want 502, nothing swapped", status, r)
	}
	wantKept(t, "a directory for the advertisers file", r, "advertisers", s.advertisers, "failed", "advertisers file "+s.advertisers)

	if err := os.Remove(s.advertisers); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.advertisers, []byte(served))
	if status, r := s.reload(t); status != http.StatusOK || r.Accounts != "" || r.Partners != "" || r.Advertisers != "" || r.AccountsError != "" {
		t.Errorf("the advertisers file back as served: %d %+v, want it as served", status, r)
	}
	if _, metrics := get(t, s.Admin, "/metrics"); !strings.Contains(metrics, "adlink_catalog_refresh_failing 0") {
		t.Error("/metrics: the advertisers file back as served, still failing")
	}
}

// TestReloadSwapsTheCatalogRevokingPastABudgetInAnotherCurrency: a new
// catalog, a key removed and a budget put in a currency the new catalog
// does not bid in, in one reload: the catalog is swapped in with the new
// partners and the advertisers served, and the answer names the budget.
func TestReloadSwapsTheCatalogRevokingPastABudgetInAnotherCurrency(t *testing.T) {
	ads := currencyAds()
	const eur = `{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"EUR"}]}`
	s := startAccountsFeed(t, twoPartners, eur, ads)
	gate, version := s.Catalog().Budget, s.Catalog().Version
	writeFile(t, s.feed, feed(t, withoutAd(ads, "SHOP.1.7")))
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	writeFile(t, s.advertisers, []byte(strings.Replace(eur, "EUR", "USD", 1)))
	status, r := s.reload(t)
	if status != http.StatusConflict || r.Result != "swapped" || r.Version == version || r.Accounts != "swapped" || r.Partners != "swapped" {
		t.Errorf("a new catalog, a key removed, a budget in USD: %d %+v, want 409, the catalog and the partners swapped", status, r)
	}
	wantKept(t, "a new catalog, a budget in USD", r, "advertisers", s.advertisers, "refused", `advertiser "shop.example" has a daily budget in USD`)
	if status, _ := s.get(t, "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=key-one&site_id=site-one", nil); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	if b, _ := s.Catalog().Accounts.Budget("shop.example"); b.Currency != "EUR" || s.Catalog().Budget != gate || s.Catalog().Version != r.Version {
		t.Errorf("the budget served: %+v, gate kept %v; want the EUR one and its gate, with the new catalog", b, s.Catalog().Budget == gate)
	}
}

// TestReloadRevokesBeforeANewCatalogsBudgets: a key removed, a report
// token the two new files share, and a catalog whose currencies only the
// new budgets fit, in one reload: the new partners go with the
// advertisers served (the key is revoked), so the catalog, which their
// budgets do not fit, is refused, rather than served with the new
// advertisers and the partners served.
func TestReloadRevokesBeforeANewCatalogsBudgets(t *testing.T) {
	ads := currencyAds()
	const shared = "shared-report-token-0123456"
	eur := `{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"EUR"}]}`
	s := startAccountsFeed(t, twoPartners, eur, ads)
	version := s.Catalog().Version
	var gbp []match.Ad
	for _, a := range ads {
		a.Markets = []match.Market{{Country: "gb", Lang: "en"}}
		gbp = append(gbp, a)
	}
	writeFile(t, s.feed, feed(t, gbp))
	writeFile(t, s.partners, []byte(keyTwoOnly(shared)))
	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"GBP","report_token":"`+shared+`"}]}`))
	status, r := s.reload(t)
	if status != http.StatusConflict || r.Result != "refused" || r.Version != version || r.Partners != "swapped" ||
		!strings.Contains(r.Error, `"shop.example" has a daily budget in EUR`) {
		t.Errorf("a key removed, a token in both new files, a catalog in GBP: %d %+v, want the catalog refused, the partners swapped", status, r)
	}
	wantKept(t, "a token in both new files", r, "advertisers", s.advertisers, "refused", "with the new partners file "+s.partners+": ")
	if status, _ := s.get(t, "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=key-one&site_id=site-one", nil); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	if b, _ := s.Catalog().Accounts.Budget("shop.example"); b.Currency != "EUR" {
		t.Errorf("the budget served: %+v, want the EUR one", b)
	}
}
