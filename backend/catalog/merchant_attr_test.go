package catalog

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// at is a fixed moment for a feed's dates to be judged at.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// prices maps each ad's id to its price in cents.
func prices(t *testing.T, feed []byte, name string, now time.Time) map[string]int64 {
	t.Helper()
	ads, err := Load(strings.NewReader(string(feed)), name, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, a := range ads {
		m[a.ID] = a.PriceCents
	}
	return m
}

// TestMerchantSaleDates: a sale price shows only while its sale runs, and
// an expired item is not served.
func TestMerchantSaleDates(t *testing.T) {
	feed, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", "merchant-sale.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		now  string
		want map[string]int64
	}{
		{"2026-11-15T12:00:00Z", map[string]int64{"KL-2001": 3990, "KL-2002": 1999, "KL-2003": 950}},
		{"2026-12-01T00:00:00Z", map[string]int64{"KL-2001": 3990, "KL-2002": 1499, "KL-2003": 950}},
		{"2026-12-31T23:59:00Z", map[string]int64{"KL-2001": 3990, "KL-2002": 1499, "KL-2003": 950}},
		{"2027-01-01T00:00:00Z", map[string]int64{"KL-2001": 3990, "KL-2002": 1999}},
	} {
		got := prices(t, feed, "sale.xml", at(c.now))
		if len(got) != len(c.want) {
			t.Errorf("at %s: %v, want %v", c.now, got, c.want)
			continue
		}
		for id, p := range c.want {
			if got[id] != p {
				t.Errorf("at %s: %s costs %d, want %d", c.now, id, got[id], p)
			}
		}
	}
}

// TestFetchMerchantSaleEnds: a feed served unchanged (304) is read again
// once a sale in it ended or an item in it expired, and the price and the
// item served follow; then it is unchanged again.
func TestFetchMerchantSaleEnds(t *testing.T) {
	feed, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", "merchant-sale.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var full atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write(feed)
	}))
	defer srv.Close()
	var now atomic.Pointer[time.Time]
	f := NewFetcher(FetchOptions{now: func() time.Time { return *now.Load() }})
	src, err := ParseSource(srv.URL + "/feed#market=de-DE")
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(when string) (Result, map[string]int64) {
		t.Helper()
		w := at(when)
		now.Store(&w)
		res, err := f.Fetch(context.Background(), src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, a := range res.Ads {
			m[a.ID] = a.PriceCents
		}
		return res, m
	}
	if res, m := fetch("2026-12-15T00:00:00Z"); m["KL-2002"] != 1499 || len(m) != 3 || !res.Until.Equal(at("2027-01-01T00:00:00Z")) {
		t.Fatalf("during the sale: %v, until %v", m, res.Until)
	}
	if res, m := fetch("2026-12-20T00:00:00Z"); !res.Unchanged || m["KL-2002"] != 1499 || full.Load() != 1 {
		t.Errorf("nothing changed: unchanged %v, %v, %d full reads", res.Unchanged, m, full.Load())
	}
	res, m := fetch("2027-01-02T00:00:00Z")
	if res.Unchanged || m["KL-2002"] != 1999 || len(m) != 2 || full.Load() != 2 {
		t.Errorf("after the sale and the expiry: unchanged %v, %v, %d full reads", res.Unchanged, m, full.Load())
	}
	if res, _ := fetch("2027-02-01T00:00:00Z"); !res.Unchanged || full.Load() != 2 || !res.Until.IsZero() {
		t.Errorf("no date left ahead: unchanged %v, %d full reads, until %v", res.Unchanged, full.Load(), res.Until)
	}
}

// TestMerchantNotAdvertised: items the merchant keeps out of paid ads
// (paused, excluded from Shopping or Display ads), out of stock, or for
// adults are left out; one kept only out of the free listings is served.
func TestMerchantNotAdvertised(t *testing.T) {
	feed := `<?xml version="1.0"?>
<rss xmlns:g="http://base.google.com/ns/1.0"><channel><link>https://shop.example/</link><language>de-DE</language>
<item><g:id>A</g:id><g:title>a</g:title><g:link>https://shop.example/a</g:link>
  <g:excluded_destination>Free_listings</g:excluded_destination><g:excluded_destination>Shopping_ads</g:excluded_destination></item>
<item><g:id>B</g:id><g:title>b</g:title><g:link>https://shop.example/b</g:link><g:pause>ads</g:pause></item>
<item><g:id>C</g:id><g:title>c</g:title><g:link>https://shop.example/c</g:link><g:adult>yes</g:adult></item>
<item><g:id>D</g:id><g:title>d</g:title><g:link>https://shop.example/d</g:link><g:excluded_destination>Display ads</g:excluded_destination></item>
<item><g:id>E</g:id><g:title>e</g:title><g:link>https://shop.example/e</g:link><g:excluded_destination>Free listings</g:excluded_destination><g:adult>no</g:adult></item>
<item><g:id>F</g:id><g:title>f</g:title><g:link>https://shop.example/f</g:link><g:availability>Out of Stock</g:availability></item>
<item><g:id>G</g:id><g:title>g</g:title><g:link>https://shop.example/g</g:link><g:availability>preorder</g:availability></item>
</channel></rss>`
	ads, err := Load(strings.NewReader(feed), "f.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range ads {
		ids = append(ids, a.ID)
	}
	if strings.Join(ids, " ") != "E G" {
		t.Errorf("served %v, want E G", ids)
	}
	tsv := "id\ttitle\tlink\texcluded_destination\texcluded_destination\n" +
		"A\ta\thttps://shop.example/a\tFree_listings, Shopping_ads\t\n" +
		"B\tb\thttps://shop.example/b\tFree_listings\tDisplay_ads\n" +
		"C\tc\thttps://shop.example/c\tFree_listings\t\n"
	ads, err = Load(strings.NewReader(tsv), "f.tsv", Options{Markets: []string{"de-DE"}})
	if err != nil || len(ads) != 1 || ads[0].ID != "C" {
		t.Errorf("TSV: %+v, %v", ads, err)
	}
	// An item left out does not refuse the feed for attributes that
	// would reach no ad.
	tsv = "id\ttitle\tlink\tprice\tavailability\n" +
		"A\ta\thttps://shop.example/a\tsoon\tout_of_stock\n" +
		"B\tb\thttps://shop.example/b\t5.00 EUR\tin_stock\n"
	ads, err = Load(strings.NewReader(tsv), "f.tsv", Options{Markets: []string{"de-DE"}})
	if err != nil || len(ads) != 1 || ads[0].ID != "B" {
		t.Errorf("out of stock with a bad price: %+v, %v", ads, err)
	}
}

// TestMerchantPrices: the price text merchants write reads as the amount
// they mean, and an amount that could mean two is refused.
func TestMerchantPrices(t *testing.T) {
	for _, c := range []struct {
		price string
		cents int64
		err   string
	}{
		{"15.00 USD", 1500, ""}, {"USD 15.00", 1500, ""}, {"15,00 EUR", 1500, ""}, {"15,5 EUR", 1550, ""},
		{"1.299,00 EUR", 129900, ""}, {"1,299.00 USD", 129900, ""}, {"1.299.000 EUR", 129900000, ""},
		{"15.00USD", 1500, ""}, {"eur 9.5", 950, ""}, {"19 EUR", 1900, ""},
		{"1.299 EUR", 0, "decimal or a thousands"}, {"19,990 EUR", 0, "decimal or a thousands"},
		{"1,2,3 EUR", 0, "groups of three"}, {"1.299,000 EUR", 0, "mixed up"}, {"19.999 EUR", 0, "decimal or a thousands"},
		{"19.9999 EUR", 0, "decimal places"}, {"$19.99", 0, "no currency"}, {"19.99", 0, "no currency"},
	} {
		feed := "id\ttitle\tlink\tprice\nA\ta\thttps://shop.example/a\t" + c.price + "\n"
		ads, err := Load(strings.NewReader(feed), "f.tsv", Options{Markets: []string{"de-DE"}})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.price, err, c.err)
			}
			continue
		}
		if err != nil || len(ads) != 1 || ads[0].PriceCents != c.cents {
			t.Errorf("%q: %+v, %v, want %d cents", c.price, ads, err, c.cents)
		}
	}
}

// TestMerchantVariants: the variants of one item_group_id give one ad,
// that of the first variant served.
func TestMerchantVariants(t *testing.T) {
	tsv := "id\ttitle\tlink\tprice\tavailability\titem_group_id\n" +
		"S-RED\tShirt red S\thttps://shop.example/s?c=red\t10.00 EUR\tout_of_stock\tSHIRT\n" +
		"M-RED\tShirt red M\thttps://shop.example/s?c=red&s=m\t11.00 EUR\tin_stock\tSHIRT\n" +
		"L-RED\tShirt red L\thttps://shop.example/s?c=red&s=l\t12.00 EUR\tin_stock\tSHIRT\n" +
		"CAP\tCap\thttps://shop.example/cap\t5.00 EUR\tin_stock\t\n"
	ads, err := Load(strings.NewReader(tsv), "f.tsv", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 2 || ads[0].ID != "M-RED" || ads[0].PriceCents != 1100 || ads[1].ID != "CAP" {
		t.Errorf("%+v", ads)
	}
	// A variant not advertised is still checked.
	bad := strings.Replace(tsv, "https://shop.example/s?c=red&s=l", "/s?c=red&s=l", 1)
	if _, err := Load(strings.NewReader(bad), "f.tsv", Options{Markets: []string{"de-DE"}}); err == nil || !strings.Contains(err.Error(), "f.tsv:4: link:") {
		t.Errorf("a broken variant: %v", err)
	}
}

// TestMerchantAdsRedirect: a paid click lands on the ads_redirect URL, and
// the merchant is still the one of the product's link.
func TestMerchantAdsRedirect(t *testing.T) {
	feed := `<rss xmlns:g="http://base.google.com/ns/1.0"><channel>
<item><g:id>A</g:id><g:title>Topf</g:title><g:link>https://www.topfladen.example/a</g:link>
<g:ads_redirect>https://track.example/c?u=https%3A%2F%2Fwww.topfladen.example%2Fa</g:ads_redirect></item></channel></rss>`
	ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 1 || ads[0].Landing != "https://track.example/c?u=https%3A%2F%2Fwww.topfladen.example%2Fa" || ads[0].Advertiser != "topfladen.example" {
		t.Errorf("%+v", ads)
	}
}

// TestMerchantGTIN: a GTIN written with hyphens or spaces reads, and a
// multipack or bundle does not pass for the single product whose GTIN it
// carries.
func TestMerchantGTIN(t *testing.T) {
	tsv := "id\ttitle\tlink\tgtin\tmultipack\tis_bundle\n" +
		"BOOK\tBuch\thttps://shop.example/b\t978-3-16-148410-0\t\t\n" +
		"ONE\tWasser\thttps://shop.example/w1\t4006381 333931\t1\tno\n" +
		"SIX\tWasser 6er\thttps://shop.example/w6\t4006381333931\t6\t\n" +
		"SET\tKamera-Set\thttps://shop.example/set\t4006381333931\t\tyes\n"
	ads, err := Load(strings.NewReader(tsv), "f.tsv", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"9783161484100", "4006381333931", "", ""}
	for i, a := range ads {
		if a.GTIN != want[i] {
			t.Errorf("%s: GTIN %q, want %q", a.ID, a.GTIN, want[i])
		}
	}
}

// TestMerchantXMLSpelling: the ways shops write the same feed all read
// alike: the namespace under another prefix, as the default, or its g:
// prefix undeclared; CDATA; HTML's entities, and escaped twice.
func TestMerchantXMLSpelling(t *testing.T) {
	for name, feed := range map[string]string{
		"other prefix": `<rss xmlns:google="http://base.google.com/ns/1.0"><channel><item><google:id>A</google:id>
<google:title>Kanne &quot;Venus&quot;</google:title><google:link>https://shop.example/a</google:link><google:price>9.50 EUR</google:price></item></channel></rss>`,
		"default namespace": `<rss><channel><item xmlns="http://base.google.com/ns/1.0"><id>A</id>
<title>Kanne "Venus"</title><link>https://shop.example/a</link><price>9.50 EUR</price></item></channel></rss>`,
		"undeclared prefix": `<rss><channel><item><g:id>A</g:id>
<g:title>Kanne "Venus"</g:title><g:link>https://shop.example/a</g:link><g:price>9.50 EUR</g:price></item></channel></rss>`,
		"CDATA and entities twice": `<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:id>A</g:id>
<g:title><![CDATA[Kanne &quot;Venus&quot;]]></g:title><g:link>https://shop.example/a</g:link><g:price>9.50&nbsp;EUR</g:price></item></channel></rss>`,
		"escaped twice": `<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:id>A</g:id>
<g:title>Kanne &amp;quot;Venus&amp;quot;</g:title><g:link>https://shop.example/a</g:link><g:price>9.50 EUR</g:price></item></channel></rss>`,
	} {
		ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(ads) != 1 || ads[0].ID != "A" || ads[0].Title != `Kanne "Venus"` || ads[0].PriceCents != 950 {
			t.Errorf("%s: %+v", name, ads)
		}
	}
	// An attribute's name in another case reads.
	feed := `<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:ID>A</g:ID>
<g:Title>Kanne "Venus"</g:Title><g:Link>https://shop.example/a</g:Link><g:Price>9.50 EUR</g:Price></item></channel></rss>`
	if ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}}); err != nil || len(ads) != 1 || ads[0].PriceCents != 950 {
		t.Errorf("names in another case: %+v, %v", ads, err)
	}
	// HTML's named letters in an XML feed read as the letters.
	feed = `<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:id>A</g:id>
<g:title>K&auml;sereibe&nbsp;Profi</g:title><g:link>https://shop.example/a</g:link></item></channel></rss>`
	ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
	if err != nil || len(ads) != 1 || ads[0].Title != "Käsereibe Profi" {
		t.Errorf("HTML entities: %+v, %v", ads, err)
	}
	// Angle brackets in a title are its text.
	feed = `<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:id>A</g:id>
<g:title>Adapter &lt;USB-C&gt; &amp;amp; HDMI</g:title><g:link>https://shop.example/a</g:link></item></channel></rss>`
	ads, err = Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
	if err != nil || len(ads) != 1 || ads[0].Title != "Adapter <USB-C> & HDMI" {
		t.Errorf("angle brackets: %+v, %v", ads, err)
	}
	// A description written as HTML, in elements or in CDATA, keeps its
	// words and loses its tags.
	for _, d := range []string{
		`<p>Edelstahl, <b>für</b> Induktion</p>`,
		`<![CDATA[<p>Edelstahl,<br/><b>für</b> Induktion</p><script>x()</script>]]>`,
		`&lt;p&gt;Edelstahl, &lt;b&gt;f&amp;uuml;r&lt;/b&gt; Induktion&lt;/p&gt;`,
	} {
		feed := `<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:id>A</g:id><g:title>a</g:title>
<g:link>https://shop.example/a</g:link><g:description>` + d + `</g:description></item></channel></rss>`
		ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
		if err != nil || len(ads) != 1 || ads[0].Description != "Edelstahl, für Induktion" {
			t.Errorf("description %s: %+v, %v", d, ads, err)
		}
	}
}

// TestMerchantTSVSpelling: a byte order mark before a quoted header,
// CRLF line ends, headers in any case with a space for the underscore,
// quoted fields with tabs and doubled quotes, and the .txt name Merchant
// Center's own examples use.
func TestMerchantTSVSpelling(t *testing.T) {
	tsv := "\ufeff\"ID\"\tTitle\tG:Link\tImage Link\tPrice\r\n" +
		"A\t\"Pfanne 28\"\" mit\tGriff\"\thttps://shop.example/a\thttps://shop.example/a.jpg\t24,99 EUR\t\t\r\n"
	ads, err := Load(strings.NewReader(tsv), "products.txt", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 1 || ads[0].ID != "A" || ads[0].Title != `Pfanne 28" mit Griff` || ads[0].Logo != "https://shop.example/a.jpg" ||
		ads[0].PriceCents != 2499 || ads[0].Landing != "https://shop.example/a" {
		t.Errorf("%+v", ads)
	}
}

// TestMerchantBadAttributes: each attribute that does not read refuses
// the feed, naming the attribute.
func TestMerchantBadAttributes(t *testing.T) {
	for _, c := range []struct{ field, cols, vals string }{
		{"sale_price_effective_date", "sale_price\tsale_price_effective_date", "5.00 EUR\t2026-12-01"},
		{"sale_price_effective_date", "sale_price\tsale_price_effective_date", "5.00 EUR\t2026-12-31/2026-12-01"},
		{"sale_price_effective_date", "sale_price\tsale_price_effective_date", "5.00 EUR\tsoon/later"},
		{"sale_price_effective_date", "sale_price_effective_date", "2026-12-01/2026-12-31"},
		{"sale_price", "sale_price", "5.00 USD"},
		{"expiration_date", "expiration_date", "31.12.2026"},
		{"adult", "adult", "maybe"},
		{"pause", "pause", "everything"},
		{"multipack", "multipack", "six"},
		{"is_bundle", "is_bundle", "sometimes"},
		{"ads_redirect", "ads_redirect", "javascript:alert(1)"},
	} {
		feed := "id\ttitle\tlink\tprice\t" + c.cols + "\nA\ta\thttps://shop.example/a\t9.00 EUR\t" + c.vals + "\n"
		_, err := Load(strings.NewReader(feed), "f.tsv", Options{Markets: []string{"de-DE"}})
		var le *LineError
		if !errors.As(err, &le) || le.Field != c.field || le.Line != 2 {
			t.Errorf("%s %q: %v, want an error on line 2 naming %s", c.cols, c.vals, err, c.field)
		}
	}
}

// TestMerchantIDs: ids Google takes and click URLs cannot carry as they
// are (a space, a letter outside ASCII) are escaped, their own % too, and
// stay distinct; an id click URLs always carried, % or not, is the ad's
// id as it was before ids were escaped, so that the links, reports and
// windows of its ad go on across an upgrade.
func TestMerchantIDs(t *testing.T) {
	tsv := "id\ttitle\tlink\n" +
		"SKU 12%\ta\thttps://shop.example/a\n" +
		"SKU%2012\tb\thttps://shop.example/b\n" +
		"Größe-1\tc\thttps://shop.example/c\n" +
		"50%OFF\td\thttps://shop.example/d\n"
	ads, err := Load(strings.NewReader(tsv), "f.tsv", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range ads {
		ids = append(ids, a.ID)
	}
	if got := strings.Join(ids, " "); got != "SKU%2012%25 SKU%2012 Gr%C3%B6%C3%9Fe-1 50%OFF" {
		t.Errorf("ids %s", got)
	}
}

// TestMerchantIDsEscapedAsAnother: an id escaped into another id of the
// feed is a duplicate, refused on its line, not one ad of two items.
func TestMerchantIDsEscapedAsAnother(t *testing.T) {
	tsv := "id\ttitle\tlink\n" +
		"SKU%2012\ta\thttps://shop.example/a\n" +
		"SKU 12\tb\thttps://shop.example/b\n"
	_, err := Load(strings.NewReader(tsv), "f.tsv", Options{Markets: []string{"de-DE"}})
	var le *LineError
	if !errors.As(err, &le) || le.Field != "id" || le.Line != 3 || !strings.Contains(err.Error(), "duplicate id") {
		t.Errorf("%v, want a duplicate id on line 3", err)
	}
}

// TestMerchantEncodingNames: a feed that declares UTF-8 as "utf8", or
// its ASCII subset, reads as UTF-8.
func TestMerchantEncodingNames(t *testing.T) {
	for _, e := range []string{"utf8", "UTF8", "US-ASCII"} {
		feed := `<?xml version="1.0" encoding="` + e + `"?><rss xmlns:g="http://base.google.com/ns/1.0"><channel><item>` +
			`<g:id>A</g:id><g:title>Töpfe</g:title><g:link>https://shop.example/a</g:link></item></channel></rss>`
		ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
		if err != nil || len(ads) != 1 || ads[0].Title != "Töpfe" {
			t.Errorf("%s: %+v, %v", e, ads, err)
		}
	}
}

// TestFetchMerchantFileSaleEnds: an unchanged file is read again once a
// sale in it ended.
func TestFetchMerchantFileSaleEnds(t *testing.T) {
	feed, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", "merchant-sale.xml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shop.xml")
	if err := os.WriteFile(path, feed, 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(FetchOptions{})
	src, _ := ParseSource(path)
	price := func(now string) (Result, int64) {
		t.Helper()
		res, err := f.Fetch(context.Background(), src, Options{Now: at(now)})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range res.Ads {
			if a.ID == "KL-2002" {
				return res, a.PriceCents
			}
		}
		t.Fatalf("KL-2002 missing at %s", now)
		return res, 0
	}
	if _, p := price("2026-12-15T00:00:00Z"); p != 1499 {
		t.Errorf("during the sale: %d", p)
	}
	if res, p := price("2026-12-16T00:00:00Z"); !res.Unchanged || p != 1499 {
		t.Errorf("nothing changed: unchanged %v, %d", res.Unchanged, p)
	}
	if res, p := price("2027-01-02T00:00:00Z"); res.Unchanged || p != 1999 {
		t.Errorf("after the sale: unchanged %v, %d", res.Unchanged, p)
	}
}

// TestMerchantDateExamples: the sale dates the errors give as examples
// read, so that a feed written after them is not refused.
func TestMerchantDateExamples(t *testing.T) {
	for _, bad := range []string{"soon", "2026-12-01T10:00Z/later"} {
		var msg string
		if _, _, err := parseMerchantRange(bad); err != nil {
			msg = err.Error()
		}
		_, example, ok := strings.Cut(msg, "such as ")
		if !ok {
			t.Fatalf("%q: %q gives no example", bad, msg)
		}
		if strings.Contains(example, "/") {
			if _, _, err := parseMerchantRange(example); err != nil {
				t.Errorf("the example %q does not read: %v", example, err)
			}
		} else if _, _, err := parseMerchantTime(example); err != nil {
			t.Errorf("the example %q does not read: %v", example, err)
		}
	}
}
