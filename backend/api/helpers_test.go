package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/match"
)

var (
	mDE = match.Market{Country: "de", Lang: "de"}
	mUS = match.Market{Country: "us", Lang: "en"}
	mGB = match.Market{Country: "gb", Lang: "en"}
)

// nokiaGTIN is one offer that several advertisers deliver.
const nokiaGTIN = "6438158655587"

// fixture is a small catalog: advertisers, products and a coupon in de-DE,
// en-US and en-GB, with and without price and logo, and one GTIN offered
// by several advertisers.
func fixture() []match.Ad {
	return []match.Ad{
		{ID: "handy-bestkauf.de", Kind: match.KindAdvertiser, Title: "handy-bestkauf.de - gebrauchte Handys verkaufen",
			Keywords: []string{"lg handy", "handy verkaufen"}, Landing: "https://handy-bestkauf.de/", Advertiser: "handy-bestkauf.de",
			Markets: []match.Market{mDE}, BidMicros: 450000},
		{ID: "handyladen.de", Kind: match.KindAdvertiser, Title: "Handyladen - Handys ohne Vertrag",
			Keywords: []string{"handy", "handy ohne vertrag"}, Landing: "https://handyladen.de/?src=adlink", Advertiser: "handyladen.de",
			Markets: []match.Market{mDE}, BidMicros: 200000},
		{ID: "AMAZON.1.B00JVL2X1I", Kind: match.KindProduct, Title: "Nokia Lumia 630 Smartphone 4,5 Zoll schwarz",
			Keywords: []string{"handy", "smartphone"}, Manufacturer: "Nokia", Model: "Lumia 630", Category: "Handy",
			GTIN: nokiaGTIN, PriceCents: 8999, Currency: "EUR", Logo: "https://img.example/nokia-{dim}.png",
			Landing: "https://www.amazon.de/dp/B00JVL2X1I", Advertiser: "amazon.de", Markets: []match.Market{mDE}, BidMicros: 300000},
		{ID: "OTTO.2.555", Kind: match.KindProduct, Title: "Nokia Lumia 630 Dual-SIM Handy", Manufacturer: "Nokia", Model: "Lumia 630",
			Keywords: []string{"handy"}, Category: "Handy", GTIN: nokiaGTIN, PriceCents: 9499, Currency: "EUR", Landing: "https://www.otto.de/p/555",
			Advertiser: "otto.de", Markets: []match.Market{mDE}, BidMicros: 200000},
		{ID: "EBAY.4.291181826279", Kind: match.KindProduct, Title: "Nokia Lumia 630 gebraucht", Manufacturer: "Nokia", Model: "Lumia 630",
			Keywords: []string{"handy"}, Category: "Handy", GTIN: nokiaGTIN, Landing: "https://www.ebay.de/itm/291181826279",
			Logo: "https://img.example/ebay-lumia.png", Advertiser: "ebay.de", Markets: []match.Market{mDE}, BidMicros: 150000},
		{ID: "COUPON.1.7", Kind: match.KindCoupon, Title: "10 % Rabatt auf Handy-Zubehör", Keywords: []string{"handy zubehör", "handyhülle"},
			Landing: "https://zubehoer.example/gutschein", Advertiser: "zubehoer.example", Markets: []match.Market{mDE}, BidMicros: 50000},
		{ID: "APPLE.1.IPHONE5", Kind: match.KindProduct, Title: "Apple iPhone 5 16GB white", Keywords: []string{"smartphone", "handy", "phone"},
			Manufacturer: "Apple", Model: "iPhone 5", Category: "Smartphone", PriceCents: 19900, Currency: "EUR",
			Logo: "https://img.example/iphone5-{dim}.png", Landing: "https://apple.example/iphone5",
			Advertiser: "apple.example", Markets: []match.Market{mDE, mUS, mGB}, BidMicros: 250000},
		{ID: "BESTBUY.1.9", Kind: match.KindProduct, Title: "Nokia Lumia 630 Smartphone black", Keywords: []string{"smartphone", "phone", "cell phone"},
			Manufacturer: "Nokia", Model: "Lumia 630", Category: "Smartphone", GTIN: nokiaGTIN, PriceCents: 12999, Currency: "USD",
			Logo: "https://img.example/bestbuy-{dim}.png", Landing: "https://bestbuy.example/p/9", Advertiser: "bestbuy.example",
			Markets: []match.Market{mUS}, BidMicros: 400000},
		{ID: "phonedeals.example", Kind: match.KindAdvertiser, Title: "Phone Deals - unlocked smartphones", Keywords: []string{"cell phone", "smartphone deals", "phone"},
			Landing: "https://phonedeals.example/", Advertiser: "phonedeals.example", Markets: []match.Market{mUS}, BidMicros: 350000},
		{ID: "mobiles.example.co.uk", Kind: match.KindAdvertiser, Title: "Mobiles UK - SIM free phones", Keywords: []string{"mobile phone", "phone", "smartphone"},
			Landing: "https://mobiles.example.co.uk/", Advertiser: "mobiles.example.co.uk", Markets: []match.Market{mGB}, BidMicros: 300000},
		{ID: "CURRYS.3.77", Kind: match.KindProduct, Title: "Nokia Lumia 630 SIM free smartphone", Keywords: []string{"smartphone", "phone", "mobile phone"},
			Manufacturer: "Nokia", Model: "Lumia 630", Category: "Smartphone", GTIN: nokiaGTIN, PriceCents: 7999, Currency: "GBP",
			Landing: "https://currys.example/p/77", Advertiser: "currys.example", Markets: []match.Market{mGB}, BidMicros: 100000},
		{ID: "COUPON.2.8", Kind: match.KindCoupon, Title: "20% off phone cases", Keywords: []string{"phone case", "phone"},
			Landing: "https://cases.example/coupon", Advertiser: "cases.example", Markets: []match.Market{mUS, mGB}, BidMicros: 50000},
	}
}

// fixtureAd returns the fixture ad with id.
func fixtureAd(t *testing.T, id string) match.Ad {
	t.Helper()
	for _, a := range fixture() {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("no fixture ad %q", id)
	return match.Ad{}
}

// clickRecorder is a clicks.Recorder whose behaviour a test sets.
type clickRecorder struct {
	AppendFn func(ctx context.Context, c clicks.Click) error
}

var _ clicks.Recorder = (*clickRecorder)(nil)

func (m *clickRecorder) Append(ctx context.Context, c clicks.Click) error {
	return m.AppendFn(ctx, c)
}

// testPartners has the demo partner and a second one with three sites.
func testPartners(t testing.TB) *partners.Static {
	reg, err := partners.NewStatic([]partners.Partner{
		partners.Demo(),
		{APIKey: "k2", Sites: []partners.Site{{ID: "blog", Domains: []string{"blog.example"}}, {ID: "shop", Domains: []string{"shop.example"}},
			// An internationalised domain, registered as its owner writes it.
			{ID: "idn", Domains: []string{"Bücher.example"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// testClock is the fixed time clicks are stamped with.
var testClock = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type testEnv struct {
	handler http.Handler
	clicks  []clicks.Click
	indexes *market.Set
}

// newEnv serves ads with the test partners, recording clicks in memory.
// Its rate limits never refuse: fuzzers and table tests send thousands of
// requests from one client, and limits_test.go sets its own.
func newEnv(t testing.TB, ads []match.Ad) *testEnv {
	t.Helper()
	ix, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	env := &testEnv{indexes: ix}
	env.handler = NewServer(Deps{
		Config:   cfg,
		Indexes:  ix,
		Partners: testPartners(t),
		Clicks: &clickRecorder{AppendFn: func(_ context.Context, c clicks.Click) error {
			env.clicks = append(env.clicks, c)
			return nil
		}},
		Now: func() time.Time { return testClock },
	})
	return env
}

// get serves one GET from an untrusted client unless remote is set.
func (env *testEnv) get(t testing.TB, target string, header http.Header, remote string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.RemoteAddr = "203.0.113.9:41000"
	if remote != "" {
		req.RemoteAddr = remote
	}
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	return rec.Result()
}

func readBody(t testing.TB, res *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return b
}

// link is a decoded link entry with the click URL's parameters.
type link struct {
	Title       string   `json:"title"`
	Keywords    []string `json:"keywords"`
	Ad          string   `json:"ad"`
	DisplayType []string `json:"display_type"`
	Price       *price   `json:"price"`
	Logo        string   `json:"logo"`
	AdType      string   `json:"ad_type"`
	GTIN        string   `json:"gtin"`
	Advertiser  string   `json:"advertiser"`
	click       url.Values
}

type price struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// search runs a search for query (api_key and site_id are added when
// absent) and returns its links, failing unless the answer is 200 JSON.
func (env *testEnv) search(t testing.TB, query string, header http.Header, remote string) []link {
	t.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Has("api_key") {
		v.Set("api_key", "demo")
	}
	if !v.Has("site_id") {
		v.Set("site_id", "demo")
	}
	res := env.get(t, "/v2/search/link?"+v.Encode(), header, remote)
	body := readBody(t, res)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("search %s: %s %s\n%s", query, res.Status, res.Header.Get("Content-Type"), body)
	}
	var resp struct {
		Link []link `json:"link"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("search %s: %v\n%s", query, err, body)
	}
	if resp.Link == nil {
		t.Fatalf("search %s: link is null or missing:\n%s", query, body)
	}
	for i := range resp.Link {
		u, err := url.Parse(resp.Link[i].Ad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Link[i].click = u.Query()
	}
	return resp.Link
}

func adIDs(links []link) []string {
	var ids []string
	for _, l := range links {
		ids = append(ids, l.click.Get("adId"))
	}
	return ids
}

// hasMarket reports whether ad runs in a market matching country and lang
// ("" matches any).
func hasMarket(a match.Ad, country, lang string) bool {
	return slices.ContainsFunc(a.Markets, func(m match.Market) bool {
		return (country == "" || m.Country == country) && (lang == "" || m.Lang == lang)
	})
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
