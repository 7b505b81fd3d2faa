// Command demogen writes adlink's demo catalog (testdata/catalog/demo.jsonl)
// and the demo logos (web/demo/logos/*.svg) from the tables in data.go.
// The output is deterministic, so regenerating it changes nothing unless the
// tables change:
//
//	go generate ./backend/catalog
package main

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

func main() {
	out := flag.String("o", "testdata/catalog/demo.jsonl", "catalog file to write")
	logos := flag.String("logos", "web/demo/logos", "directory for the logo SVGs")
	flag.Parse()

	ads, logoNames := build()
	if err := catalog.Validate(ads); err != nil {
		log.Fatal(err)
	}
	var b bytes.Buffer
	if err := catalog.WriteJSONL(&b, ads); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*logos, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, name := range logoNames {
		if err := os.WriteFile(filepath.Join(*logos, logoSlug(name)+".svg"), logoSVG(name), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("wrote %d ads to %s and %d logos to %s", len(ads), *out, len(logoNames), *logos)
}

var marketNames = map[string][]string{"de": {"de-DE"}, "us": {"en-US"}, "gb": {"en-GB"}}

var currencies = map[string]string{"de": "EUR", "us": "USD", "gb": "GBP"}

// build returns the ads in a fixed order and the names that need a logo.
func build() ([]match.Ad, []string) {
	var ads []match.Ad
	logos := map[string]bool{}
	logo := func(name string) string {
		logos[name] = true
		return "/demo/logos/" + logoSlug(name) + ".svg?dim={dim}"
	}

	for _, a := range advertisers {
		ad := match.Ad{
			ID: a.domain, Kind: match.KindAdvertiser, Title: a.title, Keywords: a.keywords,
			Landing: "https://" + a.domain + a.path, Advertiser: a.domain,
			Markets: markets(a.market), BidMicros: micros(a.bid),
		}
		if isShop(a.domain) && a.domain != "ao.com" {
			ad.Landing = "https://www." + a.domain + a.path
		}
		if a.logo {
			ad.Logo = logo(a.domain)
		}
		ads = append(ads, ad)
	}

	// The seed's documented examples, exactly as its tests expect them.
	ads = append(ads,
		match.Ad{
			ID: "AMAZON.1.B00JVL2X1I", Kind: match.KindProduct,
			Title:        "Nokia Lumia 630 Smartphone (11,4 cm (4,5 Zoll) Touchscreen, 5 Megapixel Kamera, Quad-Core, 1,2 GHz, 8 GB Speicher, Windows Phone 8.1) schwarz",
			Keywords:     []string{"handy", "smartphone", "nokia handy", "windows phone"},
			Manufacturer: "Nokia", Model: "Lumia 630", Category: "Handy",
			Description: "Smartphone von Nokia: 4,5\" Touchscreen, Quad-Core 1,2 GHz, 5 MP Kamera, Windows Phone 8.1.",
			GTIN:        gtin("Nokia", "Lumia 630"), PriceCents: 8900, Currency: "EUR",
			Logo: logo("Nokia"), Landing: "https://www.amazon.de/dp/B00JVL2X1I", Advertiser: "amazon.de",
			Markets: markets("de"), BidMicros: 600_000,
		},
		match.Ad{
			ID: "EBAY.4.291181826279", Kind: match.KindProduct,
			Title:        "Apple iPhone 5 16GB Black & Slate Smartphone (Unlocked) – Refurbished",
			Keywords:     []string{"iphone", "iphone 5", "smartphone", "handy"},
			Manufacturer: "Apple", Model: "iPhone 5", Category: "smartphone",
			Description: "Refurbished Apple iPhone 5: 4\" Retina display, A6 chip, 8 MP camera, 16 GB, unlocked.",
			GTIN:        gtin("Apple", "iPhone 5"), PriceCents: 8999, Currency: "USD",
			Logo: logo("Apple"), Landing: "https://www.ebay.com/itm/291181826279", Advertiser: "ebay.com",
			Markets:   []match.Market{{Country: "de", Lang: "de"}, {Country: "us", Lang: "en"}, {Country: "gb", Lang: "en"}},
			BidMicros: 400_000,
		},
	)

	for _, p := range products {
		for _, s := range offers(p) {
			ads = append(ads, offer(p, s, logo))
		}
	}

	for _, c := range coupons {
		ads = append(ads, couponAd(c, logo))
	}

	names := make([]string, 0, len(logos))
	for n := range logos {
		names = append(names, n)
	}
	slices.Sort(names)
	return ads, names
}

// offers picks the shops that sell p: one to three per market, by a hash,
// so the catalog has GTINs offered by several advertisers.
func offers(p product) []shop {
	var out []shop
	for _, m := range []string{"de", "us", "gb"} {
		if !strings.Contains(p.markets, m[:1]) {
			continue
		}
		var cands []shop
		for _, s := range shops {
			if s.market == m && (s.cats == "*" || slices.Contains(strings.Fields(s.cats), p.cat)) {
				cands = append(cands, s)
			}
		}
		h := hash(p.brand, p.model, m)
		n := 1 + int(h%10)/6 + int(h%10)/9 // 1 (60%), 2 (30%), 3 (10%)
		start := int(h>>8) % len(cands)
		for k := 0; k < n && k < len(cands); k++ {
			out = append(out, cands[(start+k)%len(cands)])
		}
	}
	return out
}

func offer(p product, s shop, logo func(string) string) match.Ad {
	c := categories[p.cat]
	h := hash(s.domain, p.brand, p.model)
	id := offerID(s, h)
	slug := logoSlug(p.brand + " " + p.model)
	landing := strings.NewReplacer("{id}", id, "{slug}", slug).Replace(s.landing)
	a := match.Ad{
		ID: s.network + id, Kind: match.KindProduct,
		Manufacturer: p.brand, Model: p.model, GTIN: gtin(p.brand, p.model),
		Landing: landing, Advertiser: s.domain, Markets: markets(s.market),
		BidMicros: 100_000 + int64(h%40)*10_000,
	}
	var kw []string
	switch s.market {
	case "de":
		a.Category, kw = c.de, c.deKW
		a.Description = fmt.Sprintf("%s von %s: %s.", c.deNoun, p.brand, german(p.spec))
	case "us":
		a.Category, kw = c.us, c.usKW
		noun := c.enNoun
		if n, ok := usNouns[p.cat]; ok {
			noun = n
		}
		a.Description = fmt.Sprintf("%s by %s: %s.", noun, p.brand, p.spec)
	case "gb":
		a.Category, kw = c.gb, c.gbKW
		a.Description = fmt.Sprintf("%s by %s: %s.", c.enNoun, p.brand, p.spec)
	}
	a.Keywords = slices.Clip(kw)
	for _, k := range p.keywords {
		lang, word, limited := strings.Cut(k, ":")
		if !limited {
			word = k
		} else if (lang == "de") != (s.market == "de") {
			continue
		}
		a.Keywords = append(a.Keywords, word)
	}
	noun, variant, colour := c.enNoun, p.variant, p.colour
	switch s.market {
	case "de":
		noun, variant, colour = c.deNoun, german(variant), germanColour(colour)
	case "us":
		if n, ok := usNouns[p.cat]; ok {
			noun = n
		}
	}
	switch h % 3 { // each shop writes titles its own way
	case 0:
		a.Title = p.brand + " " + p.model + " " + noun + ", " + variant + ", " + colour
	case 1:
		a.Title = p.brand + " " + p.model + " (" + variant + ") " + colour
	default:
		a.Title = noun + " " + p.brand + " " + p.model + " – " + variant + " – " + colour
	}
	if h%11 != 0 { // a few offers carry no price
		a.PriceCents, a.Currency = price(p.eur, s.market, h), currencies[s.market]
	}
	if h%7 != 0 { // and a few no image
		a.Logo = logo(p.brand)
	}
	return a
}

func couponAd(c coupon, logo func(string) string) match.Ad {
	var s shop
	for _, x := range shops {
		if x.domain == c.shop {
			s = x
		}
	}
	cat := categories[c.cat]
	h := hash("coupon", c.shop, c.code)
	a := match.Ad{
		ID: s.network + "C" + strconv.FormatUint(100000+h%900000, 10), Kind: match.KindCoupon,
		Advertiser: c.shop, Markets: markets(s.market), BidMicros: 150_000 + int64(h%30)*10_000,
		Logo: logo(c.shop),
	}
	host := "https://www." + c.shop
	if c.shop == "ao.com" {
		host = "https://ao.com"
	}
	switch s.market {
	case "de":
		a.Title = c.amount + " Rabatt auf " + cat.de + " bei " + c.shop + " – Gutscheincode " + c.code
		a.Keywords = []string{cat.deKW[0] + " gutschein", c.shop + " gutschein", "gutscheincode"}
		a.Category = cat.de
		a.Description = "Code " + c.code + " im Warenkorb eingeben. Gültig bis 31.12., nicht mit anderen Aktionen kombinierbar."
		a.Landing = host + "/gutscheine?code=" + c.code
	case "us":
		a.Title = c.amount + " off " + cat.us + " at " + c.shop + " with code " + c.code
		a.Keywords = []string{cat.usKW[0] + " coupon", c.shop + " coupon", "promo code"}
		a.Category = cat.us
		a.Description = "Enter " + c.code + " at checkout. Valid through Dec 31; cannot be combined with other offers."
		a.Landing = host + "/promo?code=" + c.code
	case "gb":
		a.Title = c.amount + " off " + cat.gb + " at " + c.shop + " – voucher code " + c.code
		a.Keywords = []string{cat.gbKW[0] + " voucher", c.shop + " discount code", "voucher code"}
		a.Category = cat.gb
		a.Description = "Use " + c.code + " at checkout. Valid until 31 December; excludes clearance items."
		a.Landing = host + "/vouchers?code=" + c.code
	}
	return a
}

func isShop(domain string) bool {
	for _, s := range shops {
		if s.domain == domain {
			return true
		}
	}
	return false
}

// germanWords translates the English words of specs and variants; longer
// phrases come first so they win.
var germanWords = strings.NewReplacer(
	"ice and water dispenser", "Eis- und Wasserspender",
	"robot vacuum and mop", "Saug- und Wischroboter",
	"firm and artificial ground", "Rasen und Kunstrasen (FG/AG)",
	"whole-machine filtration", "Komplettfiltration",
	"laser dust detection", "Laser-Staubdetektion",
	"self-cleaning dock", "selbstreinigende Station",
	"humidity-controlled crispers", "Gemüsefächer mit Feuchteregelung",
	"integrated conical burr grinder", "integriertes Kegelmahlwerk",
	"integrated grinder", "integriertes Mahlwerk",
	"obstacle avoidance", "Hinderniserkennung",
	"auto-empty base", "Absaugstation",
	"wireless charging", "kabelloses Laden",
	"replaceable battery", "austauschbarer Akku",
	"repairable design", "reparierbares Design",
	"detachable cable", "abnehmbares Kabel",
	"velour ear pads", "Velours-Ohrpolster",
	"studio monitoring", "Studio-Monitoring",
	"studio monitor", "Studiomonitor",
	"temperature sensor", "Temperatursensor",
	"handheld and docked", "Handheld- und TV-Modus",
	"handheld PC", "Handheld-PC",
	"solar charging", "Solarladen",
	"training ball", "Trainingsball",
	"thermally bonded", "thermisch verklebt",
	"thermo bonded", "thermisch verklebt",
	"hand-stitched", "handgenäht",
	"machine-stitched", "maschinengenäht",
	"synthetic leather upper", "Obermaterial aus Kunstleder",
	"knit upper", "Strick-Obermaterial",
	"rubber fins", "Gummilamellen",
	"laceless option", "schnürsenkellose Option",
	"keyless chuck", "Schnellspannbohrfutter",
	"brushless combi drill", "bürstenloser Schlagbohrschrauber",
	"brushless", "bürstenlos",
	"ink tank", "Tintentank",
	"mono laser", "Mono-Laser",
	"all-in-one", "Multifunktion",
	"dual camera", "Dual-Kamera",
	"steam wand", "Dampflanze",
	"steel grinder", "Stahlmahlwerk",
	"ceramic grinder", "Keramikmahlwerk",
	"milk frother", "Milchaufschäumer",
	"two bean hoppers", "zwei Bohnenbehälter",
	"app control", "App-Steuerung",
	"touch display", "Touch-Display",
	"recipes", "Rezepte",
	"specialities", "Spezialitäten",
	"fine foam", "Feinschaum",
	"LED floor head", "LED-Bodendüse",
	"body only", "nur Gehäuse",
	"full frame", "Vollformat",
	"early stage meta-rocker", "Meta-Rocker-Geometrie",
	"compression-molded", "formgepresstes",
	"spatial audio", "3D-Audio",
	"portable stereo", "tragbar, Stereo",
	"portable", "tragbar",
	"smart speaker", "Smart Speaker",
	"action camera", "Actioncam",
	"fitness tracker", "Fitnesstracker",
	"cordless 3-in-1", "kabellos, 3-in-1",
	"cordless", "kabellos",
	"upright", "Bodenstaubsauger",
	"firm ground", "Rasen (FG)",
	"men's", "Herren",
	"women's", "Damen",
	"Size 5", "Größe 5",
	"Size 4", "Größe 4",
	"battery", "Akku",
	"runtime", "Laufzeit",
	"playtime", "Spielzeit",
	"waterproof", "wasserdicht",
	"maps", "Karten",
	"days", "Tage",
	"with", "mit",
	" and ", " und ",
	"open-back", "offen",
	"closed-back", "geschlossen",
	"True Wireless", "True Wireless",
)

// german puts a spec or variant into German, with decimal commas.
func german(s string) string {
	b := []byte(germanWords.Replace(s))
	for i := 1; i+1 < len(b); i++ {
		if b[i] == '.' && b[i-1] >= '0' && b[i-1] <= '9' && b[i+1] >= '0' && b[i+1] <= '9' {
			b[i] = ','
		}
	}
	return string(b)
}

var germanColours = map[string]string{
	"Black": "Schwarz", "White": "Weiß", "Silver": "Silber", "Grey": "Grau", "Gray": "Grau",
	"Blue": "Blau", "Red": "Rot", "Green": "Grün", "Yellow": "Gelb", "Teal": "Petrol",
	"Stainless Steel": "Edelstahl", "Brushed Stainless Steel": "Edelstahl gebürstet", "Titanium": "Titan",
}

// germanColour translates simple colours, also in "Black/White".
func germanColour(s string) string {
	parts := strings.Split(s, "/")
	for i, p := range parts {
		if g, ok := germanColours[p]; ok {
			parts[i] = g
		}
	}
	return strings.Join(parts, "/")
}

// usNouns are the American words where they differ from the British.
var usNouns = map[string]string{
	"football": "Soccer Ball", "boots": "Soccer Cleats", "fridge": "Refrigerator",
	"washer": "Washer", "coffee": "Espresso Machine", "vacuum": "Vacuum",
}

func markets(m string) []match.Market {
	var out []match.Market
	for _, s := range marketNames[m] {
		mk, _ := match.ParseMarket(s)
		out = append(out, mk)
	}
	return out
}

func micros(s string) int64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		log.Fatalf("bid %q: %v", s, err)
	}
	return int64(f*1e6 + 0.5)
}

// price converts a euro list price to the market's currency, varies it a
// little per shop and ends it the way shops do (.99, .00, .95, .49).
func price(eur int, market string, h uint64) int64 {
	f := float64(eur)
	switch market {
	case "us":
		f *= 1.05
	case "gb":
		f *= 0.86
	}
	f *= 0.94 + float64(h%13)/100
	whole := int64(f)
	if whole < 1 {
		whole = 1
	}
	return (whole-1)*100 + [...]int64{99, 100, 95, 49}[h%4]
}

// offerID makes a shop's product number in the style of its network.
func offerID(s shop, h uint64) string {
	switch s.network {
	case "AMAZON.1.":
		const alnum = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"
		b := []byte("B0")
		for x := h; len(b) < 10; x /= uint64(len(alnum)) {
			b = append(b, alnum[x%uint64(len(alnum))])
		}
		return string(b)
	case "EBAY.4.":
		return strconv.FormatUint(100000000000+h%900000000000, 10)
	}
	return strconv.FormatUint(10000000+h%90000000, 10)
}

// gtinPrefixes are GS1 company prefixes in the style of each brand's.
var gtinPrefixes = map[string]string{
	"Apple": "0194253", "Samsung": "8806094", "Sony": "4548736", "Bosch": "4242005",
	"Siemens": "4242003", "Nokia": "6438158", "Google": "0840244", "Xiaomi": "6941812",
	"LG": "8806091", "Miele": "4002516", "Dyson": "5025155", "Adidas": "4066746",
	"Nike": "0196154", "Puma": "4065452", "Lenovo": "0197529", "HP": "0196786",
}

// gtin returns a GTIN-13 with a valid check digit, stable per product.
func gtin(brand, model string) string {
	prefix, ok := gtinPrefixes[brand]
	if !ok {
		prefix = "40" + strconv.FormatUint(10000+hash(brand)%90000, 10)
	}
	body := prefix + strconv.FormatUint(hash(brand, model)%100000, 10)
	for len(body) < 12 {
		body += "0"
	}
	body = body[:12]
	sum := 0
	for i := 0; i < 12; i++ {
		d := int(body[i] - '0')
		if i%2 == 1 {
			d *= 3
		}
		sum += d
	}
	return body + strconv.Itoa((10-sum%10)%10)
}

func hash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// logoSlug is a file-name-safe form of a brand or shop name.
func logoSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		case r == '\'':
		default:
			dash = true
		}
	}
	return b.String()
}

var palette = []string{"#1f6feb", "#d1242f", "#1a7f37", "#8250df", "#bf3989", "#9a6700", "#0a3069", "#cf222e", "#116329", "#6639ba", "#953800", "#24292f"}

// logoSVG draws a coloured square with the name's initials.
func logoSVG(name string) []byte {
	words := strings.FieldsFunc(strings.TrimSuffix(strings.TrimSuffix(name, ".de"), ".com"), func(r rune) bool {
		return r == ' ' || r == '-' || r == '.' || r == '\''
	})
	var initials string
	switch {
	case len(words) >= 2:
		initials = strings.ToUpper(words[0][:1] + words[1][:1])
	case len(words[0]) >= 2:
		initials = strings.ToUpper(words[0][:1]) + words[0][1:2]
	default:
		initials = strings.ToUpper(words[0])
	}
	colour := palette[hash(name)%uint64(len(palette))]
	return fmt.Appendf(nil, `<svg xmlns="http://www.w3.org/2000/svg" width="150" height="150" viewBox="0 0 150 150">`+
		`<title>%s</title><rect width="150" height="150" rx="18" fill="%s"/>`+
		`<text x="75" y="75" dy=".35em" text-anchor="middle" font-family="Helvetica,Arial,sans-serif" font-size="64" font-weight="700" fill="#fff">%s</text></svg>`+"\n",
		xmlEscape(name), colour, xmlEscape(initials))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
