package catalog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/adlink/adlink/match"
)

const merchantRSS = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:g="http://base.google.com/ns/1.0">
<channel>
<title>Küchenladen</title>
<link>https://www.kuechenladen.example/</link>
<language>de-DE</language>
<item>
<g:id>KL-1001</g:id>
<g:title>Espressokanne Venus 6 Tassen</g:title>
<g:description>Edelstahl, für Induktion</g:description>
<g:link>https://www.kuechenladen.example/p/1001</g:link>
<g:image_link>https://img.kuechenladen.example/1001.jpg</g:image_link>
<g:price>39.90 EUR</g:price>
<g:sale_price>29.90 EUR</g:sale_price>
<g:availability>in stock</g:availability>
<g:brand>Bialetti</g:brand>
<g:gtin>8006363011648</g:gtin>
<g:mpn>VEN-6</g:mpn>
<g:google_product_category>Home &amp; Garden &gt; Kitchen &amp; Dining &gt; Coffee Makers</g:google_product_category>
<g:product_type>Küche &gt; Kaffee &gt; Espressokannen</g:product_type>
<g:condition>new</g:condition>
<g:shipping><g:country>DE</g:country><g:price>4.95 EUR</g:price></g:shipping>
</item>
<item>
<title>Milchaufschäumer</title>
<link>https://www.kuechenladen.example/p/1002</link>
<description>plain RSS fields where g: ones are missing</description>
<g:id>KL-1002</g:id>
<g:price>19.99 EUR</g:price>
<g:availability>out_of_stock</g:availability>
</item>
<item>
<title>Milchkännchen</title>
<link>https://www.kuechenladen.example/p/1003</link>
<g:id>KL-1003</g:id>
<g:price>EUR 9.50</g:price>
<g:google_product_category>2271</g:google_product_category>
</item>
</channel>
</rss>
`

func TestMerchantRSS(t *testing.T) {
	ads, err := Load(strings.NewReader(merchantRSS), "shop.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 2 {
		t.Fatalf("%d ads, want 2 (the out-of-stock item left out): %+v", len(ads), ads)
	}
	want := match.Ad{
		ID: "KL-1001", Kind: match.KindProduct, Title: "Espressokanne Venus 6 Tassen", Manufacturer: "Bialetti",
		Model: "VEN-6", Category: "Espressokannen", Description: "Edelstahl, für Induktion", GTIN: "8006363011648",
		PriceCents: 2990, Currency: "EUR", Logo: "https://img.kuechenladen.example/1001.jpg",
		Landing: "https://www.kuechenladen.example/p/1001", Advertiser: "kuechenladen.example",
		Markets: []match.Market{{Country: "de", Lang: "de"}},
	}
	if !reflect.DeepEqual(ads[0], want) {
		t.Errorf("item 1:\n got %+v\nwant %+v", ads[0], want)
	}
	if a := ads[1]; a.ID != "KL-1003" || a.Title != "Milchkännchen" || a.PriceCents != 950 || a.Category != "" ||
		a.Landing != "https://www.kuechenladen.example/p/1003" {
		t.Errorf("item 3: %+v", a)
	}
	// The source's options win over what the feed says of itself.
	ads, err = Load(strings.NewReader(merchantRSS), "shop.xml", Options{Advertiser: "Kuechen.example", Markets: []string{"de-AT", "de-DE"}, Bid: "0.25"})
	if err != nil {
		t.Fatal(err)
	}
	if a := ads[0]; a.Advertiser != "kuechen.example" || len(a.Markets) != 2 || a.BidMicros != 250000 {
		t.Errorf("with options: %+v", a)
	}
}

func TestMerchantAtom(t *testing.T) {
	feed := `<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:g="http://base.google.com/ns/1.0">
<title>Shop</title>
<link rel="self" href="https://feeds.example/atom.xml"/>
<link href="https://shop.example/"/>
<entry>
<id>tag:shop.example,2026:1</id>
<title>Laufschuh Aero</title>
<summary>leicht</summary>
<link href="https://shop.example/aero"/>
<g:id>A-1</g:id>
<g:price>89.00 EUR</g:price>
</entry>
</feed>`
	ads, err := Load(strings.NewReader(feed), "shop.atom", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 1 || ads[0].ID != "A-1" || ads[0].Title != "Laufschuh Aero" || ads[0].Description != "leicht" ||
		ads[0].Landing != "https://shop.example/aero" || ads[0].Advertiser != "shop.example" || ads[0].PriceCents != 8900 {
		t.Errorf("%+v", ads)
	}
}

const merchantTSV = "id\ttitle\tdescription\tlink\timage_link\tprice\tavailability\tbrand\tgtin\tmpn\tg:product_type\tcondition\n" +
	"T-1\tWasserkocher \"Classic\" 1,7 l\tSchnell\thttps://shop.example/t1\thttps://shop.example/t1.jpg\t24.99 EUR\tin_stock\tBosch\t4242005123456\tTWK-1\tKüche > Wasserkocher\tnew\n" +
	"T-2\tToaster\t\thttps://shop.example/t2\t\t19.00 EUR\tout of stock\t\t\t\t\t\n"

func TestMerchantTSV(t *testing.T) {
	ads, err := Load(strings.NewReader(merchantTSV), "shop.tsv", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 1 {
		t.Fatalf("%d ads: %+v", len(ads), ads)
	}
	if a := ads[0]; a.Title != `Wasserkocher "Classic" 1,7 l` || a.Manufacturer != "Bosch" || a.Model != "TWK-1" ||
		a.Category != "Wasserkocher" || a.PriceCents != 2499 || a.Advertiser != "shop.example" {
		t.Errorf("%+v", a)
	}
}

func TestMerchantGzip(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(merchantRSS))
	zw.Close()
	ads, err := Load(&b, "shop.xml.gz", Options{})
	if err != nil || len(ads) != 2 {
		t.Fatalf("%d ads, %v", len(ads), err)
	}
}

// TestMerchantBadInput checks that each bad feed is refused with the line
// and field at fault.
func TestMerchantBadInput(t *testing.T) {
	item := func(fields string) string {
		return `<?xml version="1.0" encoding="UTF-8"?>
<rss xmlns:g="http://base.google.com/ns/1.0"><channel><language>de-DE</language>
<item><g:id>X-1</g:id><g:title>Topf</g:title><g:link>https://shop.example/x1</g:link>` + fields + `</item>
</channel></rss>`
	}
	latin1, _ := charmap.ISO8859_1.NewEncoder().String(`<?xml version="1.0" encoding="UTF-8"?>
<rss xmlns:g="http://base.google.com/ns/1.0"><channel>
<item><g:id>X-1</g:id><g:title>Töpfe</g:title></item></channel></rss>`)
	for _, c := range []struct {
		name, feed, file  string
		opts              Options
		line              int
		field, msgContain string
	}{
		{"malformed XML", item("<g:price>1.00 EUR</g:pric>"), "f.xml", Options{}, 3, "", "invalid XML"},
		{"truncated XML", item("")[:120], "f.xml", Options{}, 3, "", "invalid XML"},
		{"not a feed", `<html><body>hi</body></html>`, "f.xml", Options{}, 1, "", "not a feed"},
		{"items outside channel", "<rss xmlns:g=\"http://base.google.com/ns/1.0\">\n<item><g:id>X-1</g:id></item></rss>", "f.xml", Options{}, 2, "", "outside <channel>"},
		{"price without currency", item("<g:price>19.99</g:price>"), "f.xml", Options{}, 3, "price", "no currency"},
		{"ambiguous separator", item("<g:price>1.299 EUR</g:price>"), "f.xml", Options{}, 3, "price", "decimal point"},
		{"bad sale price", item("<g:price>19.99 EUR</g:price><g:sale_price>cheap</g:sale_price>"), "f.xml", Options{}, 3, "sale_price", "currency"},
		{"bad availability", item("<g:availability>maybe</g:availability>"), "f.xml", Options{}, 3, "availability", "in_stock"},
		{"bad link", strings.Replace(item(""), "https://shop.example/x1", "javascript:alert(1)", 1), "f.xml", Options{}, 3, "link", "absolute"},
		{"UTF-8 declared, Latin-1 bytes", latin1, "f.xml", Options{}, 3, "", "invalid UTF-8"},
		{"Latin-1 declared, UTF-8 bytes", strings.Replace(item("<g:description>Töpfe für Köche</g:description>"), "UTF-8", "ISO-8859-1", 1), "f.xml", Options{}, 1, "encoding", "the feed is UTF-8"},
		{"unsupported encoding", strings.Replace(item(""), "UTF-8", "EBCDIC-US", 1), "f.xml", Options{}, 1, "", "not supported"},
		{"duplicate ids", item("") + "", "f.xml", Options{}, 0, "", ""},
		{"no market", strings.Replace(item(""), "<language>de-DE</language>", "", 1), "f.xml", Options{}, 3, "market", "#market=de-DE"},
		{"TSV without link column", "id\ttitle\nA\tB\n", "f.tsv", Options{}, 1, "link", "required column"},
		{"TSV price without currency", "id\ttitle\tlink\tprice\nA\tB\thttps://s.example/a\t5\n", "f.tsv", Options{Markets: []string{"de-DE"}}, 2, "price", "no currency"},
	} {
		if c.name == "duplicate ids" {
			c.feed = strings.Replace(c.feed, "</channel>", "<item><g:id>X-1</g:id><g:title>Pfanne</g:title><g:link>https://shop.example/x2</g:link></item></channel>", 1)
			c.line, c.field, c.msgContain = 4, "id", "duplicate"
		}
		t.Run(c.name, func(t *testing.T) {
			ads, err := Load(strings.NewReader(c.feed), c.file, c.opts)
			if err == nil {
				t.Fatalf("accepted: %+v", ads)
			}
			if ads != nil {
				t.Error("ads returned with an error")
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("no LineError: %v", err)
			}
			if le.File != c.file || le.Line != c.line || le.Field != c.field || !strings.Contains(le.Msg, c.msgContain) {
				t.Errorf("got %q (line %d, field %q), want line %d, field %q, message with %q", le, le.Line, le.Field, c.line, c.field, c.msgContain)
			}
		})
	}
	// A feed declared as Latin-1 and written in Latin-1 reads.
	ok, _ := charmap.ISO8859_1.NewEncoder().String(strings.Replace(item("<g:description>Töpfe</g:description>"), "UTF-8", "ISO-8859-1", 1))
	ads, err := Load(strings.NewReader(ok), "f.xml", Options{})
	if err != nil || len(ads) != 1 || ads[0].Description != "Töpfe" {
		t.Errorf("Latin-1 feed: %+v, %v", ads, err)
	}
	// An advertiser option that is no domain is refused before any line.
	if _, err := Load(strings.NewReader(item("")), "f.xml", Options{Advertiser: "not a domain"}); err == nil {
		t.Error("an advertiser that is no domain is accepted")
	}
	// An empty feed is no ads and no error: whether that may replace a
	// catalog is the refresh's check.
	ads, err = Load(strings.NewReader(`<rss><channel></channel></rss>`), "f.xml", Options{})
	if err != nil || len(ads) != 0 {
		t.Errorf("empty feed: %+v, %v", ads, err)
	}
}

// FuzzLoadMerchantXML checks that no input crashes the Merchant Center XML
// reader and that whatever it accepts is valid and survives a JSON-lines
// round trip.
func FuzzLoadMerchantXML(f *testing.F) {
	f.Add([]byte(merchantRSS))
	f.Add([]byte(`<feed xmlns:g="http://base.google.com/ns/1.0"><link href="https://a.example"/><entry><g:id>1</g:id><title>t</title><link href="https://a.example/1"/><g:price>1 EUR</g:price></entry></feed>`))
	f.Add([]byte(`<?xml version="1.0" encoding="windows-1252"?><rss><channel><item><g:id>1</g:id></item></channel></rss>`))
	f.Add([]byte("<rss><channel><item>\xff</item>"))
	sale, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", "merchant-sale.xml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sale)
	f.Add([]byte(`<rss><channel><item xmlns="http://base.google.com/ns/1.0"><id>A</id><title>K&auml;se &amp;quot;x&amp;quot;</title><link>https://a.example/</link>` +
		`<ads_redirect>https://t.example/?u=1</ads_redirect><price>1.299,00 EUR</price><sale_price>999,00EUR</sale_price>` +
		`<sale_price_effective_date>2026-01-01/2026-12-31T23:59+0100</sale_price_effective_date><expiration_date>2027-01-01</expiration_date>` +
		`<excluded_destination>Free_listings</excluded_destination><item_group_id>G</item_group_id><gtin>978-3-16-148410-0</gtin>` +
		`<multipack>6</multipack><is_bundle>no</is_bundle><adult>no</adult><pause></pause></item>` +
		`<item><g:id>B</g:id><g:title>b</g:title><g:link>https://a.example/b</g:link><g:item_group_id>G</g:item_group_id></item></channel></rss>`))
	f.Add([]byte(`<rss xmlns:g="http://base.google.com/ns/1.0"><channel><item><g:id>` + strings.Repeat("Ж", 50) + `</g:id><g:title>t</g:title>` +
		`<g:link>https://a.example/</g:link><g:sale_prize>1 EUR</g:sale_prize><g:imagelink>x</g:imagelink><g:color>c</g:color>` +
		`<g:shipping><g:country>DE</g:country></g:shipping></item></channel></rss>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRoundTrip(t, data, "fuzz.xml")
	})
}

// FuzzLoadMerchantTSV does the same for the tab-separated form.
func FuzzLoadMerchantTSV(f *testing.F) {
	f.Add([]byte(merchantTSV))
	f.Add([]byte("g:id\tg:title\tg:link\tg:price\n1\t\"q\tx\thttps://a.example/\t1.5 usd\n"))
	f.Add([]byte("\ufeff\"ID\"\tTitle\tImage Link\tLink\tPrice\tSale_Price\tsale_price_effective_date\texcluded_destination\titem_group_id\tmultipack\r\n" +
		"A\t\"x \"\"y\"\"\"\thttps://a.example/a.jpg\thttps://a.example/a\t1,299.00 USD\tUSD 999\t2026-05-01T00:00Z/2026-07-01T00:00Z\tDisplay ads, Free listings\tG\t2\r\n"))
	f.Add([]byte("id\ttitle\tlink\tsalesprice\tshipping(country:price)\tBrnad\t\tSALE-PRICE\n1\tt\thttps://a.example/\t1 EUR\tDE:1 EUR\tb\t\t\n"))
	f.Add([]byte("id\ttitle\tlink\t" + strings.Repeat("Ж", 50) + "\n" + strings.Repeat("商", 50) + "\tt\thttps://a.example/\tx\n" +
		strings.Repeat("𝄞", 51) + "\tt\thttps://a.example/b\t\n"))
	var many strings.Builder
	many.WriteString("id\ttitle\tlink")
	for i := range MaxErrors + 10 {
		fmt.Fprintf(&many, "\tmine_%d", i)
	}
	f.Add([]byte(many.String() + "\n1\tt\thttps://a.example/\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRoundTrip(t, data, "fuzz.tsv")
	})
}

func fuzzRoundTrip(t *testing.T, data []byte, name string) {
	// A fixed clock, so that a feed's dates judge alike at every run.
	warned := map[string]bool{}
	warn := func(w *LineError) {
		if w.Field == "" && len(warned) == MaxErrors && strings.HasSuffix(w.Msg, "skipped and not named") && w.Line >= 1 {
			warned[""] = true // the count of the rest, once
			return
		}
		if w.Field == "" || w.Line < 1 || warned[w.Field] || len(warned) >= MaxErrors {
			t.Fatalf("warning %q: want one a name, on a line, for the first %d names alone", w.Error(), MaxErrors)
		}
		warned[w.Field] = true
	}
	ads, err := Load(bytes.NewReader(data), name, Options{Markets: []string{"de-DE"}, Now: at("2026-06-01T00:00:00Z"), Warn: warn})
	if err != nil {
		if ads != nil {
			t.Fatal("ads returned with an error")
		}
		return
	}
	if err := Validate(ads); err != nil {
		t.Fatalf("accepted ads are invalid: %v", err)
	}
	var b bytes.Buffer
	if err := WriteJSONL(&b, ads); err != nil {
		t.Fatal(err)
	}
	back, err := Load(&b, "back.jsonl", Options{})
	if err != nil {
		t.Fatalf("written feed does not load: %v\n%s", err, b.String())
	}
	if len(ads) > 0 && !reflect.DeepEqual(ads, back) {
		t.Fatalf("round trip changed the ads:\n%+v\n%+v", ads, back)
	}
}

// TestMerchantUnknownAdvertiser: a feed that names no advertiser, in
// itself or in its source's options, gives each item its landing page's
// host, as adlink's own feeds do; an advertiser option that is no domain
// refuses the feed.
func TestMerchantUnknownAdvertiser(t *testing.T) {
	feed := `<rss xmlns:g="http://base.google.com/ns/1.0"><channel>
<item><g:id>A</g:id><g:title>Topf</g:title><g:link>https://www.topfladen.example/a</g:link></item>
<item><g:id>B</g:id><g:title>Pfanne</g:title><g:link>https://pfannen.example/b</g:link></item>
</channel></rss>`
	ads, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ads) != 2 || ads[0].Advertiser != "topfladen.example" || ads[1].Advertiser != "pfannen.example" {
		t.Errorf("advertisers %+v", ads)
	}
	if _, err := Load(strings.NewReader(feed), "f.xml", Options{Markets: []string{"de-DE"}, Advertiser: "Topf Laden"}); err == nil ||
		!strings.Contains(err.Error(), "not a domain") {
		t.Errorf("advertiser option that is no domain: %v", err)
	}
}

// FuzzMerchantPrice checks that no price text crashes the reader, that
// what it reads is a valid amount, and that writing it back plainly reads
// the same.
func FuzzMerchantPrice(f *testing.F) {
	for _, s := range []string{"15.00 USD", "USD 15.00", "15,00 EUR", "1.299,00 EUR", "1,299.00 USD", "15.00USD",
		"1.299 EUR", "1,2,3 EUR", "1.299.000 EUR", ",5 EUR", "5, EUR", "EUR"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		amount, currency, msg := parseMerchantPrice(s)
		if msg != "" {
			return
		}
		cents, err := parseDecimal(amount, 2)
		if err != nil || !isCurrency(currency) {
			t.Fatalf("%q read as %q %q: %v", s, amount, currency, err)
		}
		a2, c2, msg := parseMerchantPrice(amount + " " + currency)
		if back, _ := parseDecimal(a2, 2); msg != "" || back != cents || c2 != currency {
			t.Fatalf("%q read as %q %q, which reads back as %q %q (%s)", s, amount, currency, a2, c2, msg)
		}
	})
}
