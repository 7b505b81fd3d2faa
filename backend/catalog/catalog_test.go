package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/adlink/adlink/match"
)

// good is a valid JSON line that the table tests below break one field at a
// time.
const good = `{"kind":"product","id":"SHOP.1.42","title":"Bosch KGN39VLEB Kühlschrank","keywords":["kühlschrank"],"manufacturer":"Bosch","model":"KGN39VLEB","category":"Kühlschrank","gtin":"4242005196940","price":"799.00","currency":"EUR","logo":"/demo/logos/bosch.svg?dim={dim}","landing":"https://haushalt-direkt.de/p/42","advertiser":"haushalt-direkt.de","markets":["de-DE"],"bid":"0.35"}`

// with replaces one "name":value pair of good (or adds it when absent).
func with(field, value string) string {
	i := strings.Index(good, `"`+field+`":`)
	if i < 0 {
		return good[:len(good)-1] + `,"` + field + `":` + value + `}`
	}
	j := i + len(field) + 3
	depth, inStr := 0, false
	for k := j; k < len(good); k++ {
		c := good[k]
		switch {
		case inStr && c == '\\':
			k++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[':
			depth++
		case c == ']':
			depth--
		case (c == ',' || c == '}') && depth == 0:
			if value == "" { // drop the field
				if good[i-1] == ',' {
					return good[:i-1] + good[k:]
				}
				return good[:i] + good[k+1:]
			}
			return good[:j] + value + good[k:]
		}
	}
	panic("bad field " + field)
}

func TestLoadGoodLine(t *testing.T) {
	ads, err := Load(strings.NewReader(good+"\n"), "feed.jsonl", Options{BaseURL: "http://localhost:8080/"})
	if err != nil {
		t.Fatal(err)
	}
	want := match.Ad{
		ID: "SHOP.1.42", Kind: match.KindProduct, Title: "Bosch KGN39VLEB Kühlschrank",
		Keywords: []string{"kühlschrank"}, Manufacturer: "Bosch", Model: "KGN39VLEB",
		Category: "Kühlschrank", GTIN: "4242005196940", PriceCents: 79900, Currency: "EUR",
		Logo:    "http://localhost:8080/demo/logos/bosch.svg?dim={dim}",
		Landing: "https://haushalt-direkt.de/p/42", Advertiser: "haushalt-direkt.de",
		Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: 350000,
	}
	if len(ads) != 1 || !reflect.DeepEqual(ads[0], want) {
		t.Fatalf("got %+v\nwant %+v", ads, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		field string
		msg   string
	}{
		{"missing id", with("id", ""), "id", "missing"},
		{"blank id", with("id", `"  "`), "id", "missing"},
		{"id with space", with("id", `"SHOP 1"`), "id", "space"},
		{"advertiser id not a domain", with("kind", `"advertiser"`) + "", "id", "domain"},
		{"missing kind", with("kind", ""), "kind", "missing"},
		{"bad kind", with("kind", `"banner"`), "kind", "not a kind"},
		{"missing title", with("title", `""`), "title", "missing"},
		{"missing landing", with("landing", ""), "landing", "missing"},
		{"relative landing", with("landing", `"/p/42"`), "landing", "absolute"},
		{"ftp landing", with("landing", `"ftp://haushalt-direkt.de/x"`), "landing", "absolute"},
		{"javascript landing", with("landing", `"javascript:alert(1)"`), "landing", "absolute"},
		{"missing markets", with("markets", ""), "markets", "missing"},
		{"empty markets", with("markets", `[]`), "markets", "missing"},
		{"bad market", with("markets", `["germany"]`), "markets", "not a market"},
		{"markets not a list", with("markets", `"de-DE"`), "markets", "list of strings"},
		{"negative price", with("price", `"-1.00"`), "price", "negative"},
		{"price with comma", with("price", `"19,99"`), "price", "decimal"},
		{"price too precise", with("price", `"19.999"`), "price", "decimal places"},
		{"price word", with("price", `"free"`), "price", "decimal"},
		{"price object", with("price", `{}`), "price", "not a decimal"},
		{"bid bool", with("bid", `true`), "bid", "not a decimal"},
		{"negative bid", with("bid", `"-0.10"`), "bid", "negative"},
		{"bid too precise", with("bid", `"0.1234567"`), "bid", "decimal places"},
		{"bid empty fraction", with("bid", `"1."`), "bid", "decimal"},
		{"gtin letters", with("gtin", `"42420051969AB"`), "gtin", "8 to 14 digits"},
		{"gtin short", with("gtin", `"1234567"`), "gtin", "8 to 14 digits"},
		{"gtin long", with("gtin", `"123456789012345"`), "gtin", "8 to 14 digits"},
		{"price without currency", with("currency", ""), "currency", "missing"},
		{"currency too long", with("currency", `"EURO"`), "currency", "3-letter"},
		{"currency digits", with("currency", `"E1R"`), "currency", "3-letter"},
		{"unknown field", with("titel", `"x"`), "titel", "unknown field"},
		{"title a number", with("title", `5`), "title", "want a string"},
		{"keyword a number", with("keywords", `[5]`), "keywords", "list of strings"},
		{"empty keyword", with("keywords", `["kühlschrank"," "]`), "keywords", "empty keyword"},
		{"bad logo", with("logo", `"logo.svg"`), "logo", "absolute"},
		{"bad advertiser", with("advertiser", `"Haushalt Direkt"`), "advertiser", "domain"},
		{"control character", with("title", `"Bosch\u0007KGN"`), "title", "control character"},
		{"not an object", `["SHOP.1.42"]`, "", "not a JSON object"},
		{"broken JSON", good[:len(good)-1], "", "invalid JSON"},
		{"trailing data", good + ` {}`, "", "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := "\n" + tt.line + "\n" // the bad line is line 2
			ads, err := Load(strings.NewReader(feed), "shop.jsonl", Options{})
			if err == nil {
				t.Fatalf("no error for %s; got %+v", tt.line, ads)
			}
			if ads != nil {
				t.Errorf("ads returned with an error: %+v", ads)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LineError", err)
			}
			if le.File != "shop.jsonl" || le.Line != 2 || le.Field != tt.field || !strings.Contains(le.Msg, tt.msg) {
				t.Errorf("got %q (file %q line %d field %q), want shop.jsonl line 2 field %q with %q",
					err, le.File, le.Line, le.Field, tt.field, tt.msg)
			}
			prefix := "shop.jsonl:2: "
			if tt.field != "" {
				prefix += tt.field + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

func TestLoadDuplicateID(t *testing.T) {
	_, err := Load(strings.NewReader(good+"\n"+good+"\n"), "shop.jsonl", Options{})
	if err == nil || !strings.Contains(err.Error(), "shop.jsonl:2: id: duplicate id \"SHOP.1.42\" (first on line 1)") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadReportsEveryBadLine(t *testing.T) {
	feed := with("title", `""`) + "\n" + with("id", `"SHOP.1.43"`) + "\n" + good[:40] + "\n" +
		strings.Replace(with("landing", `"x"`), "SHOP.1.42", "SHOP.1.44", 1) + "\n"
	_, err := Load(strings.NewReader(feed), "f.jsonl", Options{})
	var lines []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var le *LineError
		if errors.As(e, &le) {
			lines = append(lines, le.Line)
		}
	}
	if !reflect.DeepEqual(lines, []int{1, 3, 4}) {
		t.Fatalf("errors on lines %v, want [1 3 4]: %v", lines, err)
	}
}

func TestLoadCapsErrors(t *testing.T) {
	var b strings.Builder
	for range MaxErrors + 7 {
		b.WriteString("{}\n")
	}
	_, err := Load(strings.NewReader(b.String()), "f.jsonl", Options{})
	if err == nil || !strings.Contains(err.Error(), "more errors not shown") {
		t.Fatalf("got %v", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != MaxErrors+1 {
		t.Errorf("%d errors, want %d", n, MaxErrors+1)
	}
}

func TestLoadDefaults(t *testing.T) {
	feed := `{"kind":"advertiser","id":"handy-bestkauf.de","title":" Handys\n\tverkaufen ","keywords":[" lg   handy ","lg handy"],"landing":"https://www.handy-bestkauf.de/","markets":["de_de","de-DE"],"bid":0.45}` + "\n" +
		`{"kind":"coupon","id":"C.1.1","title":"10 % auf alles","landing":"https://www.Shop.de/c","markets":["de-DE"],"price":null}` + "\n"
	ads, err := Load(strings.NewReader(feed), "f.ndjson", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := ads[0]; a.Advertiser != "handy-bestkauf.de" || a.Title != "Handys verkaufen" || !reflect.DeepEqual(a.Keywords, []string{"lg handy"}) ||
		len(a.Markets) != 1 || a.BidMicros != 450000 {
		t.Errorf("advertiser: %+v", a)
	}
	if a := ads[1]; a.Advertiser != "shop.de" || a.PriceCents != 0 {
		t.Errorf("coupon: %+v", a)
	}
}

func TestLoadFormats(t *testing.T) {
	if _, err := Load(strings.NewReader(good), "f.pdf", Options{}); err == nil || !strings.Contains(err.Error(), ".jsonl") {
		t.Errorf("unknown extension: %v", err)
	}
	if _, err := Load(strings.NewReader(good), "f.jsonl", Options{BaseURL: "localhost:8080"}); err == nil {
		t.Error("a base URL without scheme is accepted")
	}
	ads, err := Load(strings.NewReader("\ufeff"+good), "f.JSONL", Options{})
	if err != nil || len(ads) != 1 {
		t.Errorf("BOM and upper-case extension: %v", err)
	}
	if ads, err := Load(strings.NewReader(""), "f.csv", Options{}); err != nil || len(ads) != 0 {
		t.Errorf("empty CSV: %v %v", ads, err)
	}
}

func TestCSVErrors(t *testing.T) {
	const header = "kind,id,title,landing,markets,price,currency,keywords\n"
	tests := []struct {
		name, feed string
		line       int
		field, msg string
	}{
		{"unknown column", "kind,id,titel,landing,markets\n", 1, "titel", "unknown column"},
		{"missing column", "kind,id,landing,markets\n", 1, "title", "required column"},
		{"twice", "kind,id,title,landing,markets,id\n", 1, "id", "twice"},
		{"bad landing", header + "product,A.1.1,T,https://a.de/,de-DE,,,\nproduct,A.1.2,T,a.de,de-DE,,,\n", 3, "landing", "absolute"},
		{"bad market", header + "product,A.1.1,T,https://a.de/,de-DE|xx,,,\n", 2, "markets", "not a market"},
		{"empty keyword", header + "product,A.1.1,T,https://a.de/,de-DE,,,a||b\n", 2, "keywords", "empty keyword"},
		{"bad price", header + "product,A.1.1,T,https://a.de/,de-DE,1.2.3,EUR,\n", 2, "price", "decimal"},
		{"field count", header + "product,A.1.1,T\n", 2, "", "wrong number of fields"},
		{"invalid UTF-8", header + "product,A.1.1,K\xfchlschrank,https://a.de/,de-DE,,,\n", 2, "title", "UTF-8"},
		{"quote", header + "product,A.1.1,\"T\"x,https://a.de/,de-DE,,,\n", 2, "", "invalid CSV"},
		{"multi-line title", header + "product,A.1.1,\"T\nU\",https://a.de/,de-DE,,,\nproduct,A.1.2,,https://a.de/,de-DE,,,\n", 4, "title", "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.feed), "f.csv", Options{})
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LineError", err)
			}
			if le.Line != tt.line || le.Field != tt.field || !strings.Contains(le.Msg, tt.msg) {
				t.Errorf("got %q, want line %d field %q with %q", err, tt.line, tt.field, tt.msg)
			}
		})
	}
}

func TestDecimals(t *testing.T) {
	for _, tt := range []struct {
		s     string
		scale int
		v     int64
	}{{"19.99", 2, 1999}, {"19.9", 2, 1990}, {"19", 2, 1900}, {"0.05", 2, 5}, {"007.50", 2, 750},
		{"0.45", 6, 450000}, {"1.234567", 6, 1234567}, {"999999999.99", 2, 99999999999}} {
		v, err := parseDecimal(tt.s, tt.scale)
		if err != nil || v != tt.v {
			t.Errorf("parseDecimal(%q, %d) = %d, %v; want %d", tt.s, tt.scale, v, err, tt.v)
		}
		back, _ := parseDecimal(formatDecimal(v, tt.scale), tt.scale)
		if back != v {
			t.Errorf("formatDecimal(%d) = %q does not read back", v, formatDecimal(v, tt.scale))
		}
	}
	for _, s := range []string{"", ".5", "1e3", "+1", "1.2.3", " 1", "0x10", "1234567890"} {
		if _, err := parseDecimal(s+"x"[:0], 2); err == nil && s != "" {
			t.Errorf("parseDecimal(%q) accepted", s)
		}
	}
	if got := formatDecimal(450000, 6); got != "0.45" {
		t.Errorf("formatDecimal(450000, 6) = %q", got)
	}
	if got := formatDecimal(1999, 2); got != "19.99" {
		t.Errorf("formatDecimal(1999, 2) = %q", got)
	}
}

func TestValidGTIN(t *testing.T) {
	for s, want := range map[string]bool{
		"4006381333931": true, "96385074": true, "036000291452": true, "10036000291459": true,
		"4006381333932": false, "400638133393": false, "4006381333a31": false, "": false,
	} {
		if got := ValidGTIN(s); got != want {
			t.Errorf("ValidGTIN(%q) = %v", s, got)
		}
	}
}
