package app

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/api"
)

// TestFeedUnknownAttributesTold: a Merchant Center feed with a misspelt
// attribute loads, and the name, with the attribute it likely means, is
// logged once when the feed is read (at start, and when it changes) and
// is in the answer of every POST /admin/reload, changed or not.
func TestFeedUnknownAttributesTold(t *testing.T) {
	const told = `salesprice: not an attribute adlink reads, so skipped: did you mean sale_price?`
	feed := filepath.Join(t.TempDir(), "items.tsv")
	rows := "A\tSamowar\thttps://shop.example/a\t49.00 EUR\t39.00 EUR\nB\tTeekanne\thttps://shop.example/b\t19.00 EUR\t15.00 EUR\n"
	writeFile(t, feed, []byte("id\ttitle\tlink\tprice\tsalesprice\n"+rows))
	cfg := testConfig(t)
	cfg.Catalogs = []string{feed + "#market=de-DE"}
	logs := &syncLog{}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if len(a.Ads) != 2 || a.Ads[0].PriceCents != 4900 {
		t.Fatalf("ads %+v, want both at their price", a.Ads)
	}
	admin := httptest.NewServer(a.Admin)
	defer admin.Close()
	reload := func() api.Reload {
		t.Helper()
		res, err := http.Post(admin.URL+"/admin/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var r api.Reload
		if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("reload: %s %v", res.Status, err)
		}
		return r
	}
	if n := strings.Count(logs.String(), told); n != 1 {
		t.Errorf("at start, told %d times, want once:\n%s", n, logs.String())
	}
	r := reload()
	if r.Result != "unchanged" || len(r.Warnings) != 1 || !strings.HasSuffix(r.Warnings[0], told) || !strings.HasPrefix(r.Warnings[0], cfg.Catalogs[0]+":1: ") {
		t.Errorf("reload of the same feed: %+v, want its warning", r)
	}
	if n := strings.Count(logs.String(), told); n != 1 {
		t.Errorf("after a reload of the same feed, told %d times in the log, want once", n)
	}

	writeFile(t, feed, []byte("id\ttitle\tlink\tprice\tsale_price\tlieferzeit\n"+strings.ReplaceAll(rows, "EUR\n", "EUR\t2 Tage\n")))
	r = reload()
	if r.Result != "swapped" || len(r.Warnings) != 1 || !strings.HasSuffix(r.Warnings[0], "lieferzeit: not an attribute adlink reads, so skipped") {
		t.Errorf("reload of the feed fixed: %+v, want the new column's warning alone", r)
	}
	if n := strings.Count(logs.String(), "lieferzeit"); n != 1 {
		t.Errorf("the new column told %d times in the log, want once:\n%s", n, logs.String())
	}
}
