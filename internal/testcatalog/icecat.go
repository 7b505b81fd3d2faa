package testcatalog

import (
	"archive/zip"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-json"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// icecatProduct holds the fields of an Icecat product the importer uses;
// the many attr_* fields it does not use are skipped by the decoder.
type icecatProduct struct {
	ID               json.Number `json:"id"`
	Name             string      `json:"name"`
	Title            string      `json:"title"`
	EAN              []string    `json:"ean"`
	ShortDescription string      `json:"short_description"`
	ImgThumb         string      `json:"img_thumb"`
	Supplier         string      `json:"supplier"`
	Price            json.Number `json:"price"`
	ProductType      string      `json:"attr_t_product_type"`
}

// icecatMarkets are the markets an Icecat product may run in; each product
// gets a non-empty subset chosen by a hash of its id.
var icecatMarkets = [3]match.Market{{Country: "de", Lang: "de"}, {Country: "us", Lang: "en"}, {Country: "gb", Lang: "en"}}

// Icecat reads the Icecat product set: the *.json.zip files in dir (each a
// zip holding one JSON array of products), in name order. Every product
// becomes a match.Ad of kind product with id "ICECAT.1.<id>", the title,
// manufacturer (the supplier), model (the name), GTIN (the first EAN with a
// valid check digit), price in euro cents, short description, thumbnail as
// logo and a category: the product type the title names after the model
// ("toner cartridge"), else attr_t_product_type. Icecat has no merchants or
// markets, so each supplier gets one advertiser "<supplier-slug>.shop.example"
// with landing pages https://<advertiser>/p/<id>, and the markets (one to
// three of de-DE, en-US, en-GB) and the bid follow from a hash of the id:
// the same files always give the same ads.
//
// The arrays are decoded as streams, one product at a time, and the files
// are read concurrently.
func Icecat(dir string) ([]match.Ad, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json.zip"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("icecat: no *.json.zip files in %s", dir)
	}
	slices.Sort(files)

	var subsets [8][]match.Market
	for mask := 1; mask < 8; mask++ {
		for k, m := range icecatMarkets {
			if mask&(1<<k) != 0 {
				subsets[mask] = append(subsets[mask], m)
			}
		}
	}
	im := &icecatImporter{subsets: subsets, suppliers: make(map[string][2]string)}

	results := make([][]match.Ad, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() { results[i], errs[i] = im.readZip(f) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n := 0
	for _, r := range results {
		n += len(r)
	}
	ads := make([]match.Ad, 0, n)
	seen := make(map[string]bool, n)
	for _, r := range results {
		for _, a := range r {
			if seen[a.ID] {
				return nil, fmt.Errorf("icecat: duplicate product id %s", a.ID)
			}
			seen[a.ID] = true
			ads = append(ads, a)
		}
	}
	return ads, nil
}

type icecatImporter struct {
	subsets [8][]match.Market

	mu        sync.Mutex
	suppliers map[string][2]string // supplier -> {manufacturer, advertiser}, shared strings
}

// supplier returns the interned manufacturer name and advertiser domain.
func (im *icecatImporter) supplier(name string) (string, string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if s, ok := im.suppliers[name]; ok {
		return s[0], s[1]
	}
	sl := slug(name)
	if sl == "" {
		sl = "supplier-" + strconv.FormatUint(fnv64(name)%100000, 10)
	}
	s := [2]string{strings.Clone(name), sl + ".shop.example"}
	im.suppliers[name] = s
	return s[0], s[1]
}

func (im *icecatImporter) readZip(path string) ([]match.Ad, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var ads []match.Ad
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
		ads, err = im.decodeArray(rc, ads)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, f.Name, err)
		}
	}
	return ads, nil
}

// decodeArray streams one JSON array of products.
func (im *icecatImporter) decodeArray(r io.Reader, ads []match.Ad) ([]match.Ad, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, fmt.Errorf("want a JSON array (%v)", err)
	}
	for i := 0; dec.More(); i++ {
		var p icecatProduct
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("product %d: %w", i, err)
		}
		a, err := im.ad(&p)
		if err != nil {
			return nil, fmt.Errorf("product %d: %w", i, err)
		}
		ads = append(ads, a)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return ads, nil
}

func (im *icecatImporter) ad(p *icecatProduct) (match.Ad, error) {
	id := strings.TrimSpace(p.ID.String())
	if id == "" || strings.IndexFunc(id, badIDRune) >= 0 {
		return match.Ad{}, fmt.Errorf("bad id %q", id)
	}
	manufacturer, advertiser := im.supplier(strings.TrimSpace(p.Supplier))
	h := fnv64(id)
	a := match.Ad{
		ID:           "ICECAT.1." + id,
		Kind:         match.KindProduct,
		Title:        strings.Join(strings.Fields(p.Title), " "),
		Manufacturer: manufacturer,
		Model:        strings.TrimSpace(p.Name),
		Description:  strings.Join(strings.Fields(p.ShortDescription), " "),
		Landing:      "https://" + advertiser + "/p/" + id,
		Advertiser:   advertiser,
		Markets:      im.subsets[1+h%7],
		BidMicros:    50_000 + int64((h>>8)%100)*10_000,
	}
	if a.Title == "" {
		a.Title = strings.TrimSpace(manufacturer + " " + a.Model)
	}
	for _, e := range p.EAN {
		if e = strings.TrimSpace(e); catalog.ValidGTIN(e) {
			a.GTIN = e
			break
		}
	}
	if s := p.Price.String(); s != "" {
		c, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil {
				return match.Ad{}, fmt.Errorf("id %s: price %q", id, s)
			}
			c = int64(f + 0.5)
		}
		if c > 0 {
			a.PriceCents, a.Currency = c, "EUR"
		}
	}
	if isWebURL(p.ImgThumb) {
		a.Logo = p.ImgThumb
	}
	a.Category = titleProductType(a.Title, a.Model)
	if a.Category == "" {
		a.Category = strings.TrimSpace(p.ProductType)
	}
	return a, nil
}

// titleProductType finds the product type in an Icecat title, which is
// written "<brand> [family] <model> <type> <attributes>": the lower-case
// words right after the model ("toner cartridge", "networking cable"), or a
// capitalised noun followed by lower-case ones ("Network repeater").
func titleProductType(title, model string) string {
	if model == "" {
		return ""
	}
	i := strings.Index(title, model)
	if i < 0 {
		return ""
	}
	words := strings.Fields(title[i+len(model):])
	var out []string
	for k, w := range words {
		if !isTypeWord(w) {
			break
		}
		if c := w[0]; c >= 'A' && c <= 'Z' {
			// Capitalised: a type only as the first word and when a
			// lower-case word follows; otherwise it is an attribute such as
			// "Original" or "Black".
			if k != 0 || k+1 >= len(words) || !isTypeWord(words[k+1]) || words[k+1][0] < 'a' || words[k+1][0] > 'z' {
				break
			}
			w = strings.ToLower(w)
		}
		out = append(out, w)
	}
	if len(out) == 0 || (len(out) == 1 && len(out[0]) < 3) {
		return ""
	}
	return strings.Join(out, " ")
}

var typeStopWords = map[string]bool{
	"de": true, "with": true, "for": true, "to": true, "on": true, "of": true, "and": true,
	"in": true, "x": true, "w/": true, "the": true, "a": true, "per": true, "pc(s)": true, "pcs": true,
}

// isTypeWord accepts letters with inner '-' or '/', no digits, no stop words.
func isTypeWord(w string) bool {
	if typeStopWords[w] {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case (c == '-' || c == '/') && i > 0 && i < len(w)-1:
		default:
			return false
		}
	}
	return w != ""
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// badIDRune and isWebURL are catalog.Validate's rules for ids and logos:
// the importer refuses such an id and drops such a logo.
func badIDRune(r rune) bool { return r <= ' ' || r >= 0x7f }

func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.User == nil && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}
