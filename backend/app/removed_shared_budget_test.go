package app

import (
	"net/http"
	"testing"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
)

// TestSharedRemovedAdKeepsTheLoweredBudget: an advertiser's budget
// lowered after one of its ads left the feed holds for that ad's links on
// every replica: the removal Postgres shares carries the budget lowered,
// not the one the ad left with, which a replica started afterwards, whose
// advertisers file no longer lists the advertiser, would bill under.
func TestSharedRemovedAdKeepsTheLoweredBudget(t *testing.T) {
	ads := handies(2, "p", 100_000)
	s := startAccountsWith(t, twoPartners, `{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"EUR"}]}`,
		ads, func(c *config.Config) { c.CatalogMaxDrop, c.PostgresURL = 1, testpg.New(t) })
	writeFile(t, s.feed, feed(t, ads[:1]))
	if status, r := s.reload(t); status != http.StatusOK || r.Result != resultSwapped {
		t.Fatalf("reload without %s: %d %+v", ads[1].ID, status, r)
	}
	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"shop.example","daily_budget":"0.10","currency":"EUR"}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Advertisers != resultSwapped {
		t.Fatalf("reload of the lowered budget: %d %+v", status, r)
	}
	if got := s.Catalog().Removed[ads[1].ID].Budget.DailyMicros; got != 100_000 {
		t.Fatalf("the removed ad's budget served: %d micros, want 100000", got)
	}
	var doc []byte
	if err := s.pg.Pool().QueryRow(t.Context(), `SELECT ad FROM removed_ads WHERE id = $1`, ads[1].ID).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Budget struct {
			DailyMicros int64 `json:"daily_micros"`
		} `json:"adlink_last_budget"`
	}
	if err := json.Unmarshal(doc, &row); err != nil || row.Budget.DailyMicros != 100_000 {
		t.Errorf("the shared removal's budget: %d micros (%v), want the lowered 100000", row.Budget.DailyMicros, err)
	}
}
