package app

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/match"
)

// lockBudgets gives the merchant and its competitor a daily budget each.
const lockBudgets = `{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"EUR"},
	{"id":"competitor.example","daily_budget":"5.00","currency":"EUR"}]}`

// merchantAds are shop.example's own ads (currencyAds without the other
// advertiser's); attributed, when to is not "", to the advertiser to,
// their landing pages still the merchant's.
func merchantAds(to string) []match.Ad {
	var ads []match.Ad
	for _, a := range currencyAds() {
		if a.Advertiser != "shop.example" {
			continue
		}
		if to != "" {
			a.Advertiser = to
		}
		ads = append(ads, a)
	}
	return ads
}

// lockFeed adds opts to the feed's source.
func lockFeed(opts string) func(*config.Config) {
	return func(cfg *config.Config) { cfg.Catalogs[0] += opts }
}

// clickMerchantAd searches the server for the merchant's ads, clicks the
// first one's signed link and returns the advertiser the click was
// recorded for and whether it bills.
func clickMerchantAd(t *testing.T, s *accountsServer) (string, bool) {
	t.Helper()
	status, body := s.get(t, "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=key-one&site_id=site-one", nil)
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
		t.Fatalf("search: %d %v %.200s", status, err, body)
	}
	for _, l := range resp.Link {
		if strings.Contains(l.Ad, "adId=SHOP.1.") {
			c := s.click(t, l.Ad[strings.Index(l.Ad, "/v1/redirect?"):], 1)
			return c.Advertiser, c.Billable
		}
	}
	t.Fatalf("no ad of the merchant served: %.300s", body)
	return "", false
}

// spent is advertiser's spend of the day.
func spent(t *testing.T, s *accountsServer, advertiser string) int64 {
	t.Helper()
	n, err := s.Rollups.SpentOn(t.Context(), advertiser, clicks.BudgetDayIn(time.Now(), time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLockedFeedCannotBillAnotherAdvertiser: a merchant's feed locked to
// its own advertiser (#advertisers=shop.example) that attributes its ads
// to a competitor fails the refresh through POST /admin/reload, naming
// the feed, the line, the ad and the advertiser; the catalog served
// stays, and a click on the merchant's ad bills the merchant, never the
// competitor. Unlocked, the same feed is served as before, and its click
// bills the competitor's budget: what the option is for.
func TestLockedFeedCannotBillAnotherAdvertiser(t *testing.T) {
	s := startAccountsWith(t, onePartner, lockBudgets, merchantAds(""), lockFeed("#advertisers=shop.example"))
	version := s.Catalog().Version
	writeFile(t, s.feed, feed(t, merchantAds("competitor.example")))
	status, r := s.reload(t)
	want := s.feed + `#advertisers=shop.example:1: advertiser: item "SHOP.1.0" is of advertiser "competitor.example", which this feed may not bill`
	if status == http.StatusOK || r.Result != "failed" || r.Version != version || !strings.Contains(r.Error, want) {
		t.Errorf("a locked feed naming another advertiser: %d %+v, want failed with %q and the old version", status, r, want)
	}
	if s.Catalog().Version != version {
		t.Error("the refused catalog is served")
	}
	if adv, billed := clickMerchantAd(t, s); adv != "shop.example" || !billed {
		t.Errorf("the merchant's ad clicked: recorded for %s (billed %v), want shop.example, billed", adv, billed)
	}
	if n := spent(t, s, "competitor.example"); n != 0 {
		t.Errorf("the competitor spent %d on the merchant's ad, want 0", n)
	}
	if n := spent(t, s, "shop.example"); n != 200_000 {
		t.Errorf("the merchant spent %d, want its bid of 200000", n)
	}

	// Unlocked, the feed may name any advertiser, as before.
	open := startAccountsWith(t, onePartner, lockBudgets, merchantAds("competitor.example"), nil)
	if adv, billed := clickMerchantAd(t, open); adv != "competitor.example" || !billed {
		t.Errorf("unlocked: recorded for %s (billed %v), want competitor.example, billed", adv, billed)
	}
}

// TestLockedFeedRefusedAtStart: the server does not start on a locked
// feed with a line of another advertiser, nor on a bad option, and says
// which; the advertiser option alone does not lock.
func TestLockedFeedRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "feed.jsonl")
	other := merchantAds("competitor.example")[0]
	other.ID = "SHOP.9.9"
	writeFile(t, path, feed(t, append(merchantAds(""), other)))
	for _, c := range []struct{ opts, want string }{
		{"#advertisers=shop.example", `:9: advertiser: item "SHOP.9.9" is of advertiser "competitor.example"`},
		{"#advertisers=shop.example,", "advertisers: an empty advertiser id"},
		{"#advertiser=shop.example&advertisers=other.example", `advertiser "shop.example" is not one of advertisers other.example`},
	} {
		cfg := testConfig(t)
		cfg.Catalogs = []string{path + c.opts}
		if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.opts, err, c.want)
		}
	}
	cfg := testConfig(t)
	cfg.Catalogs = []string{path + "#advertiser=shop.example"}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatalf("the advertiser option alone: %v", err)
	}
	defer a.Close()
	all := a.Catalog().Indexes.All()
	if i, ok := all.Lookup("SHOP.9.9"); !ok || all.Ad(i).Advertiser != "competitor.example" {
		t.Errorf("the advertiser option alone: SHOP.9.9 served %v, want it served as competitor.example's", ok)
	}
}
