package parity

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/app"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testcatalog"
)

// TestParityBudget spends an advertiser's budget on the server, then asks
// the server and the module the same searches, the module with the
// shard manifest's exclude: equal bytes, and neither shows the
// advertiser.
func TestParityBudget(t *testing.T) {
	ads := demoAds(t)
	c := newCorpus(t, ads)
	cfg := config.Default()
	cfg.RedirectURL = redirectURL
	cfg.DataDir = t.TempDir()
	cfg.Demo = true
	cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9
	cfg.AdvertisersFile = filepath.Join(t.TempDir(), "advertisers.json")
	if err := os.WriteFile(cfg.AdvertisersFile,
		[]byte(`{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"0.01","currency":"EUR"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, app.Options{Ads: ads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()

	search := func(v url.Values) []byte {
		v.Set("api_key", "demo")
		v.Set("site_id", "demo")
		return get(t, srv.URL+"/v2/search/link?"+v.Encode(), http.StatusOK)
	}
	var first struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(search(url.Values{"q": {"lg handy"}, "loc": {"de"}, "lang": {"de"}}), &first); err != nil {
		t.Fatal(err)
	}
	clicked := false
	for _, l := range first.Link {
		if !strings.Contains(l.Ad, "adId=handy-bestkauf.de") {
			continue
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+strings.TrimPrefix(l.Ad, redirectURL), nil)
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
		clicks.Navigation.Header(req.Header)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusFound {
			t.Fatalf("click: %v %v", resp, err)
		}
		resp.Body.Close()
		clicked = true
	}
	if !clicked || a.Budget.Spent("handy-bestkauf.de") == 0 {
		t.Fatalf("no billed click on handy-bestkauf.de in %+v", first)
	}

	ctx := context.Background()
	reqs := []url.Values{{"q": {"lg handy"}, "loc": {"de"}, "lang": {"de"}}, {"q": {"handy verkaufen"}, "loc": {"de"}}, {"q": {"handy"}}}
	for _, r := range testcatalog.Requests(ads, 40, 3, false) {
		reqs = append(reqs, r.Values())
	}
	excluded := 0
	for _, v := range reqs {
		body := search(v)
		if strings.Contains(string(body), "adId=handy-bestkauf.de") {
			t.Errorf("%s: the server shows handy-bestkauf.de after its budget is spent", v.Encode())
		}
		loc, lang := strings.ToLower(v.Get("loc")), strings.ToLower(v.Get("lang"))
		var m struct{ Exclude []uint32 }
		mv := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "loc": {loc}, "lang": {lang}}
		if err := json.Unmarshal(get(t, srv.URL+"/v2/shards?"+mv.Encode(), http.StatusOK), &m); err != nil {
			t.Fatal(err)
		}
		var ex []string
		for _, g := range m.Exclude {
			ex = append(ex, strconv.FormatUint(uint64(g), 10))
		}
		if len(ex) > 0 {
			v.Set("exclude", strings.Join(ex, ","))
			excluded++
		}
		v.Set("redirect_url", redirectURL)
		got, err := c.pick(loc, lang).in.SearchJSON(ctx, v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != unsigned(body) {
			t.Errorf("%s\nmodule: %s\nserver: %s", v.Encode(), got, body)
		}
	}
	if excluded == 0 {
		t.Error("no manifest excluded handy-bestkauf.de")
	}
}
