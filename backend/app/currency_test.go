package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/adlink/adlink/internal/testredis"
	"github.com/adlink/adlink/match"
)

// currencyAds are shop.example's ads in de-DE, bidding in EUR, and
// another advertiser's in en-GB, in GBP.
func currencyAds() []match.Ad {
	var ads []match.Ad
	for i := range 8 {
		ads = append(ads, match.Ad{ID: "SHOP.1." + strconv.Itoa(i), Kind: match.KindProduct, Title: "Kaffeemühle " + strconv.Itoa(i),
			Keywords: []string{"kaffeemühle"}, Landing: "https://shop.example/p/" + strconv.Itoa(i), Advertiser: "shop.example",
			Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: 200_000})
	}
	return append(ads, match.Ad{ID: "UK.1.1", Kind: match.KindProduct, Title: "Coffee grinder", Keywords: []string{"coffee grinder"},
		Landing: "https://uk-shop.example/p/1", Advertiser: "uk-shop.example", Markets: []match.Market{{Country: "gb", Lang: "en"}},
		BidMicros: 200_000})
}

// TestRefreshRefusesABudgetInAnotherCurrency: a refreshed catalog that
// gives an advertiser with a EUR budget an ad in the en-GB market (GBP),
// or one priced in USD, is refused, even forced, naming the advertiser,
// the ad, the market and both currencies; the catalog served stays. The
// same ad under an advertiser without a budget is served.
func TestRefreshRefusesABudgetInAnotherCurrency(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	path := filepath.Join(dir, "feed.jsonl")
	writeFile(t, path, feed(t, currencyAds()))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	cfg.AdvertisersFile = write("advertisers.json", `{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"EUR"}]}`)
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	v1 := a.Catalog().Version

	gbp := append(currencyAds(), match.Ad{ID: "SHOP.2.1", Kind: match.KindProduct, Title: "Coffee grinder", Keywords: []string{"coffee grinder"},
		Landing: "https://shop.example/uk/1", Advertiser: "shop.example", Markets: []match.Market{{Country: "gb", Lang: "en"}}, BidMicros: 200_000})
	usd := append(currencyAds(), match.Ad{ID: "SHOP.3.1", Kind: match.KindProduct, Title: "Kaffeemühle aus den USA", Keywords: []string{"kaffeemühle"},
		Landing: "https://shop.example/us/1", Advertiser: "shop.example", Markets: []match.Market{{Country: "de", Lang: "de"}},
		PriceCents: 4900, Currency: "USD", BidMicros: 200_000})
	for _, c := range []struct {
		name string
		ads  []match.Ad
		want string
	}{
		{"GBP market", gbp, `budgets: advertiser "shop.example" has a daily budget in EUR, but its ad "SHOP.2.1" bids in GBP in the market en-GB`},
		{"USD price", usd, `advertiser "shop.example" has a daily budget in EUR, but its ad "SHOP.3.1" bids in USD in the market de-DE`},
	} {
		writeFile(t, path, feed(t, c.ads))
		for _, force := range []bool{false, true} {
			r := a.Reload(context.Background(), force)
			if r.Result != "refused" || r.Version != v1 || !strings.Contains(r.Error, c.want) || strings.Contains(r.Error, "force=true") {
				t.Errorf("%s (force %v): %+v, want refused with %q and the old version", c.name, force, r, c.want)
			}
		}
		if got := header(t, a.Handler, "/healthz", "X-Adlink-Catalog"); got != v1 {
			t.Errorf("%s: serving %s, want the old %s", c.name, got, v1)
		}
		if s := readyz(t, a); s.LastRefresh == nil || s.LastRefresh.Result != "refused" || !strings.Contains(s.LastRefresh.Error, c.want) {
			t.Errorf("%s: /readyz %+v", c.name, s.LastRefresh)
		}
		rec := httptest.NewRecorder()
		a.Admin.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/admin/reload?force=true", nil))
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "SHOP.") {
			t.Errorf("%s: POST /admin/reload?force=true: %d %s, want 409 naming the ad", c.name, rec.Code, rec.Body)
		}
	}
	if _, ok := a.Catalog().Indexes.All().Lookup("SHOP.2.1"); ok {
		t.Error("the GBP ad of the EUR budget is served")
	}

	// Another advertiser's, without a budget, may bid in GBP.
	ok := append(currencyAds(), match.Ad{ID: "UK.1.2", Kind: match.KindProduct, Title: "Coffee grinder", Keywords: []string{"coffee grinder"},
		Landing: "https://uk-shop.example/p/2", Advertiser: "uk-shop.example", Markets: []match.Market{{Country: "gb", Lang: "en"}}, BidMicros: 200_000})
	writeFile(t, path, feed(t, ok))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Errorf("a GBP ad of an advertiser without a budget: %+v, want swapped", r)
	}
}

// TestNewRefusesABudgetInAnotherCurrency: at start, the same catalog is
// an error of New, before the store is opened.
func TestNewRefusesABudgetInAnotherCurrency(t *testing.T) {
	dir := t.TempDir()
	write := writer(t, dir)
	path := filepath.Join(dir, "feed.jsonl")
	writeFile(t, path, feed(t, currencyAds()))
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Catalogs = []string{path}
	cfg.AdvertisersFile = write("advertisers.json", `{"advertisers":[{"id":"uk-shop.example","daily_budget":"5.00","currency":"EUR"}]}`)
	_, err := New(cfg, Options{})
	want := `budgets: advertiser "uk-shop.example" has a daily budget in EUR, but its ad "UK.1.1" bids in GBP in the market en-GB`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New: %v, want %q", err, want)
	}
	if _, err := os.Stat(cfg.DataDir); err == nil {
		t.Error("the store was opened")
	}
	// The old form of the file, with the budget in GBP, serves it.
	cfg.AdvertisersFile = write("advertisers.json", `{"advertisers":[{"id":"uk-shop.example","daily_budget":"5.00","currency":"gbp"}]}`)
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
}

// TestReplicaRefusesAnAnnouncedCatalogOverItsBudget: of two replicas on
// Redis, B has a EUR budget for shop.example and A none. A swaps in a
// catalog with a GBP ad of shop.example and announces it; B, on A's word,
// refuses it as its own refresh would, keeps serving the catalog before,
// and says it is behind.
func TestReplicaRefusesAnAnnouncedCatalogOverItsBudget(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	a := startMember(t, srv.URL(), "", currencyAds(), "A")
	b := startMemberWith(t, srv.URL(), "", currencyAds(), "B",
		`{"advertisers":[{"id":"shop.example","daily_budget":"5.00","currency":"EUR"}]}`)
	v1 := a.Catalog().Version
	b.serving(t, v1)
	b.drain()

	gbp := append(currencyAds(), match.Ad{ID: "SHOP.2.1", Kind: match.KindProduct, Title: "Coffee grinder", Keywords: []string{"coffee grinder"},
		Landing: "https://shop.example/uk/1", Advertiser: "shop.example", Markets: []match.Market{{Country: "gb", Lang: "en"}}, BidMicros: 200_000})
	write(t, []*member{a, b}, gbp)
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A, without budgets: %+v, want swapped", r)
	}
	v2 := a.Catalog().Version
	r := b.nextRefresh(t)
	if r.Result != resultRefused || r.Version != v1 || !strings.Contains(r.Error, `its ad "SHOP.2.1" bids in GBP in the market en-GB`) {
		t.Fatalf("B on A's word: %+v, want refused on %s", r, v1)
	}
	if s := readyz(t, b.App); s.Version != v1 || s.Replicas == nil || s.Replicas.Version != v2 || !s.Replicas.Behind {
		t.Errorf("B's /readyz: %+v %+v, want serving %s, behind %s", s, s.Replicas, v1, v2)
	}
	if _, ok := b.Catalog().Indexes.All().Lookup("SHOP.2.1"); ok {
		t.Error("B serves the GBP ad of its EUR budget")
	}
}
