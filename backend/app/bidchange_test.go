package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// handies are ads bidding on "lg handy", SHOP.1.H0 to SHOP.1.H(n-1),
// landing under the path prefix and bidding bid micros.
func handies(n int, prefix string, bid int64) []match.Ad {
	var ads []match.Ad
	for i := range n {
		id := fmt.Sprintf("SHOP.1.H%d", i)
		ads = append(ads, match.Ad{ID: id, Kind: match.KindProduct, Title: fmt.Sprintf("LG Handy %d", i),
			Keywords: []string{"lg handy"}, Landing: "https://shop.example/" + prefix + "/" + id, Advertiser: "shop.example",
			Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: bid})
	}
	return ads
}

// TestClickAfterARefreshBillsTheCatalogsBid: a link shown before a
// refresh changed its ad's bid and landing, clicked after it, lands on the
// new landing and bills the new bid, the catalog's when it is clicked; a
// link of an ad the refresh removed lands on its last landing and bills
// its last bid.
func TestClickAfterARefreshBillsTheCatalogsBid(t *testing.T) {
	before := handies(8, "old", 100_000)
	s := startAccountsFeed(t, twoPartners, "", before)
	changed, removed := s.links(t, "key-two", "site-two", "SHOP.1.H0", 1)[0], s.links(t, "key-two", "site-two", "SHOP.1.H7", 1)[0]
	writeFile(t, s.feed, feed(t, handies(7, "new", 250_000)))
	if status, r := s.reload(t); status != http.StatusOK || r.Result != resultSwapped {
		t.Fatalf("reload: %d %+v", status, r)
	}
	for i, c := range []struct {
		link, landing string
		bid           int64
	}{
		{changed, "https://shop.example/new/SHOP.1.H0", 250_000},
		{removed, "https://shop.example/old/SHOP.1.H7", 100_000},
	} {
		h := http.Header{}
		h.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		h.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", 40+i))
		clicks.Navigation.Header(h)
		req, err := http.NewRequest(http.MethodGet, s.pub.URL+c.link, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusFound || res.Header.Get("Location") != c.landing {
			t.Errorf("%s: %d to %q, want 302 to %s", c.link, res.StatusCode, res.Header.Get("Location"), c.landing)
		}
		id := res.Header.Get("X-Adlink-Click")
		var got clicks.Click
		if err := s.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(k clicks.Click) error {
			if k.ID == id {
				got = k
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !got.Billable || got.BidMicros != c.bid {
			t.Errorf("%s: billable %v (%q) at %d micros, want billable at %d", c.link, got.Billable, got.Reason, got.BidMicros, c.bid)
		}
	}
}
