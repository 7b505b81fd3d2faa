package app

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/config"
)

// TestMerchantLongIDsBill: the ads of Merchant Center items whose ids
// have Google's 50 characters in Cyrillic and in Chinese, hundreds of
// bytes once escaped, are found, clicked, billed and reported under
// their ids, as any ad is.
func TestMerchantLongIDsBill(t *testing.T) {
	ids := map[string]string{ // title -> the item's id
		"Samowar":  strings.Repeat("Ж", 50),
		"Teekanne": strings.Repeat("商", 50),
	}
	tsv := "id\ttitle\tlink\tprice\tproduct_type\n"
	for title, id := range ids {
		tsv += id + "\t" + title + " aus Messing\thttps://shop.example/" + strings.ToLower(title) + "\t49.00 EUR\tKüche > " + title + "\n"
	}
	feed := filepath.Join(t.TempDir(), "items.tsv")
	writeFile(t, feed, []byte(tsv))
	s := startAccountsWith(t, twoPartners, "", nil, func(cfg *config.Config) {
		cfg.Catalogs = []string{feed + "#market=de-DE&bid=0.25"}
	})
	billed := map[string]bool{} // the ads' ids
	for title, id := range ids {
		status, body := s.get(t, "/v2/search/link?q="+strings.ToLower(title)+"&loc=de&api_key=key-two&site_id=site-two", nil)
		var answer struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal([]byte(body), &answer); status != http.StatusOK || err != nil || len(answer.Link) == 0 {
			t.Fatalf("search for %s: %d %v %.300s", title, status, err, body)
		}
		link := answer.Link[0].Ad[strings.Index(answer.Link[0].Ad, "/v1/redirect?"):]
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		adID := u.Query().Get("adId")
		if want := url.PathEscape(id); adID != want {
			t.Fatalf("%s: adId %q, want %q", title, adID, want)
		}
		if status, body := s.get(t, beacon("key-two", "site-two", "two.example", link), nil); status != http.StatusOK {
			t.Fatalf("%s: beacon %d %.200s", title, status, body)
		}
		if c := s.click(t, link, len(billed)+1); !c.Billable || c.AdID != adID {
			t.Fatalf("%s: click on %q: %+v, want billed", title, adID, c)
		}
		billed[adID] = true
	}

	status, body := s.get(t, "/v2/report?group_by=ad", http.Header{"Authorization": {"Bearer key-two-report-token-0123"}})
	var report struct {
		Rows []struct {
			Ad             string
			BillableClicks int `json:"billable_clicks"`
			Spend          string
		}
	}
	if err := json.Unmarshal([]byte(body), &report); status != http.StatusOK || err != nil {
		t.Fatalf("report: %d %v %.300s", status, err, body)
	}
	for _, r := range report.Rows {
		if billed[r.Ad] && r.BillableClicks == 1 && r.Spend == "0.25" {
			delete(billed, r.Ad)
		}
	}
	if len(billed) != 0 {
		t.Errorf("ads billed but not in the report as one billable click at 0.25: %v\n%s", billed, body)
	}
}
