package testcatalog

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// icecatDir is ../shared/data/catalog/icecat seen from the module root.
func icecatDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "data", "catalog", "icecat")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("Icecat data not found at %s (../shared/data from the project root): %v", dir, err)
	}
	return dir
}

func TestIcecat(t *testing.T) {
	dir := icecatDir(t)
	start := time.Now()
	ads, err := Icecat(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %d Icecat products in %v", len(ads), time.Since(start))
	if len(ads) != 19406 {
		t.Errorf("%d products, want 19406", len(ads))
	}
	if err := catalog.Validate(ads); err != nil {
		t.Fatal(err)
	}
	var withGTIN, withPrice, withDesc, withCat, withLogo int
	markets := map[int]int{}
	advertisers := map[string]bool{}
	for _, a := range ads {
		if a.Kind != match.KindProduct || a.Title == "" || a.Manufacturer == "" || a.Model == "" ||
			a.Advertiser == "" || a.Landing != "https://"+a.Advertiser+"/p/"+a.ID[len("ICECAT.1."):] ||
			a.BidMicros <= 0 || len(a.Markets) < 1 || len(a.Markets) > 3 {
			t.Fatalf("incomplete ad: %+v", a)
		}
		advertisers[a.Advertiser] = true
		markets[len(a.Markets)]++
		if a.GTIN != "" {
			withGTIN++
		}
		if a.PriceCents > 0 {
			withPrice++
			if a.Currency != "EUR" {
				t.Fatalf("%s: currency %q", a.ID, a.Currency)
			}
		}
		if a.Description != "" {
			withDesc++
		}
		if a.Category != "" {
			withCat++
		}
		if a.Logo != "" {
			withLogo++
		}
	}
	t.Logf("%d advertisers; with GTIN %d, price %d, description %d, category %d, logo %d; markets per ad %v",
		len(advertisers), withGTIN, withPrice, withDesc, withCat, withLogo, markets)
	n := len(ads)
	if withGTIN < n*8/10 || withPrice < n*9/10 || withDesc < n*9/10 || withCat < n/3 || withLogo < n*9/10 {
		t.Errorf("too few documented fields filled")
	}
	if markets[1] == 0 || markets[2] == 0 || markets[3] == 0 {
		t.Errorf("markets per ad %v: want 1, 2 and 3", markets)
	}
	if len(advertisers) < 100 {
		t.Errorf("only %d advertisers", len(advertisers))
	}

	if a := ads[0]; a.ID != "ICECAT.1.3920564" || a.Model != "006R90321" || a.Manufacturer != "Xerox" ||
		a.Category != "toner cartridge" || a.PriceCents != 4995 || a.GTIN != "0095205603217" ||
		a.Advertiser != "xerox.shop.example" {
		t.Errorf("first product: %+v", a)
	}

	buildStart := time.Now()
	ix, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != len(ads) {
		t.Errorf("index holds %d ads, want %d", ix.Len(), len(ads))
	}
	t.Logf("match.Build: %v", time.Since(buildStart))
}

func TestIcecatMissing(t *testing.T) {
	if _, err := Icecat(t.TempDir()); err == nil {
		t.Fatal("no error for a directory without Icecat files")
	}
}

func TestTitleProductType(t *testing.T) {
	for _, tt := range []struct{ title, model, want string }{
		{"Xerox 006R90321 toner cartridge Original Black 6 pc(s)", "006R90321", "toner cartridge"},
		{"HP Pavilion dv7-1211ea Notebook Silver 43.2 cm", "dv7-1211ea", ""},
		{"Netgear MK63 Network repeater 10,100,1000 Mbit/s Black", "MK63", "network repeater"},
		{"HP Q1898B large format media", "Q1898B", "large format media"},
		{"Canon PFI-701Y Original Yellow", "PFI-701Y", ""},
		{"HP Monitor VH27 de 27 pulgadas", "Monitor VH27 de 27 pulgadas", ""},
		{"Intel BOXDQ57TM motherboard LGA 1156 (Socket H) Micro ATX", "BOXDQ57TM", "motherboard"},
		{"Tripp Lite SMART1500RMXL2U uninterruptible power supply (UPS) 1500 VA", "SMART1500RMXL2U", "uninterruptible power supply"},
		{"Fujitsu S26113-F540-L1 power supply unit 400 W Gray", "S26113-F540-L1", "power supply unit"},
		{"D-Link DSL-320B modem 24000 Kbit/s", "DSL-320B", "modem"},
		{"no model here", "", ""},
	} {
		if got := titleProductType(tt.title, tt.model); got != tt.want {
			t.Errorf("titleProductType(%q, %q) = %q, want %q", tt.title, tt.model, got, tt.want)
		}
	}
}

func BenchmarkIcecat(b *testing.B) {
	dir := icecatDir(b)
	for b.Loop() {
		if _, err := Icecat(dir); err != nil {
			b.Fatal(err)
		}
	}
}
