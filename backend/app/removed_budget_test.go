package app

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/match"
)

// TestRemovedAdvertiserKeepsItsLastBudget: an advertiser whose ads leave
// the feed and which leaves the advertisers file in the same reload still
// has signed links out, which land while they are valid. Clicked from
// many networks, they bill up to the last daily budget it had and no
// further, before a restart and after it (over_budget, as for an
// advertiser in the file); an advertiser still in the file keeps its
// own budget. So it is with the ledger in Postgres, on a replica started
// afterwards with a data directory of its own. The budget kept counts the
// days of the advertiser's time zone, one whose date is not UTC's.
func TestRemovedAdvertiserKeepsItsLastBudget(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testRemovedAdvertiserBudget(t, "") })
	t.Run("postgres", func(t *testing.T) { testRemovedAdvertiserBudget(t, testpg.New(t)) })
}

func testRemovedAdvertiserBudget(t *testing.T, postgres string) {
	const bid = 100_000
	zone := farZone(t, time.Now())
	gone := handies(1, "p", bid)[0] // shop.example
	kept := gone
	kept.ID, kept.Advertiser, kept.Landing = "KEPT.1.H0", "kept.example", "https://kept.example/p"
	s := startAccountsWith(t, twoPartners, `{"advertisers":[
		{"id":"shop.example","daily_budget":"0.50","currency":"EUR","timezone":"`+zone.String()+`"},
		{"id":"kept.example","daily_budget":"0.30","currency":"EUR"}]}`,
		[]match.Ad{gone, kept}, func(c *config.Config) {
			c.CatalogMaxDrop, c.PostgresURL = 1, postgres
			// Replicas share their click key, which a data directory
			// would otherwise make its own.
			c.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
		})
	goneLinks := s.links(t, "key-two", "site-two", gone.ID, 9)
	keptLinks := s.links(t, "key-two", "site-two", kept.ID, 5)

	writeFile(t, s.feed, feed(t, []match.Ad{kept}))
	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"kept.example","daily_budget":"0.30","currency":"EUR"}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Result != resultSwapped || r.Advertisers != resultSwapped {
		t.Fatalf("reload without shop.example: %d %+v", status, r)
	}
	tally := func(links []string, from int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for i, l := range links {
			c := s.click(t, l, from+i)
			got[c.Reason]++
		}
		return got
	}
	// 0.50 EUR is five clicks: four before the restart, one after it.
	if got := tally(goneLinks[:4], 1); got[""] != 4 {
		t.Errorf("the first 4 clicks of the advertiser gone: %v, want all billed", got)
	}
	if postgres != "" {
		// With Postgres, the server comes back as a replica started on
		// another machine would: an empty data directory, which knows the
		// removed ad, and its advertiser's last budget, from Postgres alone.
		s.cfg.DataDir = t.TempDir()
	}
	s.restart(t)
	if got := tally(goneLinks[4:], 5); got[""] != 1 || got[clicks.ReasonOverBudget] != 4 {
		t.Errorf("after the restart, 5 more clicks of the advertiser gone: %v, want 1 billed and 4 over_budget", got)
	}
	if spent, err := s.Rollups.SpentOn(t.Context(), "shop.example", clicks.BudgetDayIn(time.Now(), zone)); err != nil || spent != 500_000 {
		t.Errorf("the advertiser gone spent %d %v, want its last budget, 500000", spent, err)
	}
	if got := tally(keptLinks, 21); got[""] != 3 || got[clicks.ReasonOverBudget] != 2 {
		t.Errorf("5 clicks of the advertiser still in the file: %v, want 3 billed and 2 over_budget", got)
	}
}

// TestRemovedAdKeepsTheBudgetLastServed: an ad removed while its
// advertiser is still in the file bills under the budget the file gives
// it, lowered since, and keeps the lowered one once the advertiser
// leaves, across a restart; an advertiser listed without a budget has
// none, as a budget removed no longer holds.
func TestRemovedAdKeepsTheBudgetLastServed(t *testing.T) {
	const bid = 100_000
	gone := handies(1, "p", bid)[0] // shop.example
	kept := gone
	kept.ID, kept.Advertiser, kept.Landing = "KEPT.1.H0", "kept.example", "https://kept.example/p"
	s := startAccountsWith(t, twoPartners, `{"advertisers":[{"id":"shop.example","daily_budget":"0.50","currency":"EUR"}]}`,
		[]match.Ad{gone, kept}, func(c *config.Config) { c.CatalogMaxDrop = 1 })
	links := s.links(t, "key-two", "site-two", gone.ID, 6)
	writeFile(t, s.feed, feed(t, []match.Ad{kept}))
	if status, r := s.reload(t); status != http.StatusOK || r.Result != resultSwapped {
		t.Fatalf("reload without the ad: %d %+v", status, r)
	}
	for _, step := range []string{
		`{"advertisers":[{"id":"shop.example","daily_budget":"0.20","currency":"EUR"}]}`,
		`{"advertisers":[]}`,
	} {
		writeFile(t, s.advertisers, []byte(step))
		if status, r := s.reload(t); status != http.StatusOK || r.Advertisers != resultSwapped {
			t.Fatalf("reload of %s: %d %+v", step, status, r)
		}
	}
	s.restart(t)
	got := map[string]int{}
	for i, l := range links[:3] {
		got[s.click(t, l, i+1).Reason]++
	}
	if got[""] != 2 || got[clicks.ReasonOverBudget] != 1 {
		t.Errorf("3 clicks under the budget lowered to 0.20: %v, want 2 billed and 1 over_budget", got)
	}

	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"shop.example"}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Advertisers != resultSwapped {
		t.Fatalf("reload listing shop.example without a budget: %d %+v", status, r)
	}
	for i, l := range links[3:] {
		if c := s.click(t, l, 10+i); !c.Billable {
			t.Errorf("click %d with the budget removed: %q, want billed", i, c.Reason)
		}
	}
}

// farZone is a zone whose date at now is not UTC's, and stays so for an
// hour: Pago Pago (UTC-11) until 10:00 UTC, Kiritimati (UTC+14) after.
func farZone(t *testing.T, now time.Time) *time.Location {
	t.Helper()
	name := "Pacific/Kiritimati"
	if now.UTC().Hour() < 10 {
		name = "Pacific/Pago_Pago"
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
