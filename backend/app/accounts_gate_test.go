package app

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
)

// The budget gate a reload kept while the day's spend could not be read
// is made again on a later reload, even while the advertisers file
// changed since is refused: the budgets served must not wait for it.

// startGateBehind serves twoPartners and a budget of 100.00 EUR on a
// Postgres of its own, and lowers the budget to 50.00 while Postgres is
// down, so that the budgets served are not their gate's; Postgres is
// back when it returns, with the gate served before.
func startGateBehind(t *testing.T) (*accountsServer, *testpg.Server) {
	t.Helper()
	pg := testpg.Start(t)
	s := startAccountsWith(t, twoPartners, budgetOf("100.00", ""), nil, func(cfg *config.Config) { cfg.PostgresURL = pg.URL() })
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.advertisers, []byte(budgetOf("50.00", "")))
	if status, r := s.reload(t); status != http.StatusOK || r.Advertisers != "swapped" || !strings.Contains(r.AccountsError, "budget gate served stays") {
		t.Fatalf("a budget lowered with Postgres down: %d %+v, want it swapped, the gate kept", status, r)
	}
	if acc := s.live.accounts(); maps.Equal(acc.budgets, acc.gateOf) {
		t.Fatalf("with Postgres down, the gate holds %v, want the budgets before", acc.gateOf)
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	return s, pg
}

// reloadUntilGated reloads until the gate served holds the budgets served,
// for a minute at most, and returns the last answer.
func reloadUntilGated(t *testing.T, s *accountsServer) (int, api.Reload) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		status, r := s.reload(t)
		if acc := s.live.accounts(); maps.Equal(acc.budgets, acc.gateOf) || time.Now().After(deadline) {
			return status, r
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantGated checks that the gate served holds the budget of 50.00 served.
func wantGated(t *testing.T, what string, s *accountsServer) {
	t.Helper()
	acc := s.live.accounts()
	if b := acc.budgets["handy-bestkauf.de"]; b.DailyMicros != 50_000_000 || !maps.Equal(acc.budgets, acc.gateOf) || s.Catalog().Budget != acc.gate {
		t.Errorf("%s: budgets %v, the gate's %v; want 50.00 EUR held by the gate served", what, acc.budgets, acc.gateOf)
	}
}

// TestReloadGatesPastAnAdvertisersFileRefused: Postgres back, the
// advertisers file gives key-two's report token, or puts the budget in
// USD, which the catalog does not bid in: refused, and the gate of the
// budget served is made all the same, once.
func TestReloadGatesPastAnAdvertisersFileRefused(t *testing.T) {
	for _, c := range []struct{ name, advertisers, problem string }{
		{"a token in both files", budgetOf("20.00", "key-two-report-token-0123"), "with the partners served: "},
		{"a budget in USD", strings.Replace(budgetOf("20.00", ""), "EUR", "USD", 1), "daily budget in USD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := startGateBehind(t)
			writeFile(t, s.advertisers, []byte(c.advertisers))
			status, r := reloadUntilGated(t, s)
			if status != http.StatusConflict || r.Advertisers != "refused" || strings.Contains(r.AccountsError, "not enforced") {
				t.Errorf("Postgres back, %s: %d %+v", c.name, status, r)
			}
			wantKept(t, "Postgres back, "+c.name, r, "advertisers", s.advertisers, "refused", c.problem)
			wantGated(t, "Postgres back, "+c.name, s)
			gate := s.Catalog().Budget
			if _, r := s.reload(t); r.Advertisers != "refused" || s.Catalog().Budget != gate {
				t.Errorf("%s, again: %+v, gate kept %v; want the file refused, the gate kept", c.name, r, s.Catalog().Budget == gate)
			}
		})
	}
}

// TestReloadGatesRevokingPastACurrencyRefused: Postgres back, a key
// removed and the budget put in USD: the new partners are served with
// the advertisers served, and the gate of their budget is made.
func TestReloadGatesRevokingPastACurrencyRefused(t *testing.T) {
	s, _ := startGateBehind(t)
	writeFile(t, s.partners, []byte(keyTwoOnly("key-two-report-token-0123")))
	writeFile(t, s.advertisers, []byte(strings.Replace(budgetOf("20.00", ""), "EUR", "USD", 1)))
	status, r := reloadUntilGated(t, s)
	// The partners may have been swapped by a reload before the gate.
	if status != http.StatusConflict || r.Advertisers != "refused" || strings.Contains(r.AccountsError, "not enforced") {
		t.Errorf("Postgres back, a key removed, a budget in USD: %d %+v", status, r)
	}
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("the key removed: %d, want 401", status)
	}
	wantGated(t, "Postgres back, a key removed, a budget in USD", s)
}
