package catalog

import (
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	nethtml "golang.org/x/net/html"
)

// The attributes of one Merchant Center item, and what of them decides
// whether and how it is advertised: a link ad is a paid ad, so an item
// the merchant would not pay for (out of stock, expired, paused or
// excluded from ads) is left out, and the price shown is the one the
// shopper pays at the time the feed is read.

// merchantItem is one product as the feed writes it.
type merchantItem struct {
	id, title, description, link, imageLink, price, salePrice, availability string
	brand, gtin, mpn, googleCategory, productType, condition                string
	salePriceDate, expiration, pause, adult, multipack, isBundle            string
	itemGroup, adsRedirect                                                  string
	// excluded are the excluded_destination values, which repeat.
	excluded []string
	// unknown are the names of the g: elements of an XML item that are
	// no attribute adlink reads or Google defines.
	unknown []string
}

// set stores a g: attribute; it reports false for one adlink does not read.
func (it *merchantItem) set(name, v string) bool {
	var dst *string
	switch name {
	case "id":
		dst = &it.id
	case "title":
		dst = &it.title
	case "description":
		dst = &it.description
	case "link":
		dst = &it.link
	case "image_link":
		dst = &it.imageLink
	case "price":
		dst = &it.price
	case "sale_price":
		dst = &it.salePrice
	case "sale_price_effective_date":
		dst = &it.salePriceDate
	case "availability":
		dst = &it.availability
	case "brand":
		dst = &it.brand
	case "gtin":
		dst = &it.gtin
	case "mpn":
		dst = &it.mpn
	case "google_product_category":
		dst = &it.googleCategory
	case "product_type":
		dst = &it.productType
	case "condition":
		dst = &it.condition
	case "expiration_date":
		dst = &it.expiration
	case "pause":
		dst = &it.pause
	case "adult":
		dst = &it.adult
	case "multipack":
		dst = &it.multipack
	case "is_bundle":
		dst = &it.isBundle
	case "item_group_id":
		dst = &it.itemGroup
	case "ads_redirect":
		dst = &it.adsRedirect
	case "excluded_destination":
		// Repeated, or several in one value separated by commas.
		for d := range strings.SplitSeq(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				it.excluded = append(it.excluded, d)
			}
		}
		return true
	default:
		return false
	}
	if *dst == "" { // the first of a repeated attribute counts
		*dst = v
	}
	return true
}

// gtinSeparators are what Google ignores in a GTIN ("978-3-16-148410-0").
var gtinSeparators = strings.NewReplacer("-", "", " ", "")

// merchantToken is an enumerated value as Google reads it: any case, a
// space for an underscore ("in stock", "Shopping ads").
func merchantToken(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "_")
}

// paidDestinations are the excluded_destination values that keep an item
// out of paid ads, as a link ad is; the free listings do not.
var paidDestinations = map[string]bool{"shopping_ads": true, "display_ads": true, "shopping": true}

// addMerchant checks an item's own attributes, turns it into an ad and
// adds it; an item that is not to be advertised now is left out, not an
// error.
func (p *parser) addMerchant(line int, it *merchantItem) {
	before := len(p.errs) + p.dropped
	if !p.merchantServed(line, it) {
		return // its other attributes reach no ad, and are not checked
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(it.id)); n > maxMerchantID && len(merchantID(it.id)) > maxIDBefore {
		p.fail(line, "id", fmt.Sprintf("%d characters: Merchant Center allows %d characters", n, maxMerchantID))
	}
	rec := record{
		Kind:         "product",
		ID:           merchantID(it.id),
		Title:        html.UnescapeString(it.title), // "<USB-C>" in a title is text
		Description:  htmlText(it.description),
		Landing:      it.link,
		Logo:         it.imageLink,
		Manufacturer: html.UnescapeString(it.brand),
		GTIN:         gtinSeparators.Replace(it.gtin),
		Model:        it.mpn,
		Category:     html.UnescapeString(merchantCategory(it.productType, it.googleCategory)),
	}
	if r := strings.TrimSpace(it.adsRedirect); r != "" {
		// A paid click goes where the merchant tracks paid clicks; the
		// merchant is still the one of the product's own page.
		if !IsWebURL(r) {
			p.fail(line, "ads_redirect", fmt.Sprintf("%q is not an absolute http or https URL", r))
		} else if IsWebURL(strings.TrimSpace(it.link)) {
			rec.Landing = r
			if u, err := url.Parse(strings.TrimSpace(it.link)); err == nil && p.defAdvertiser == "" {
				rec.Advertiser = strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
			}
		}
	}
	if p.merchantSingleUnit(line, it) {
		// A merchant's multipack or bundle carries the GTIN of the one
		// product in it; it is not the same offer as that product.
		rec.GTIN = ""
	}
	rec.Price, rec.Currency = p.merchantPrice(line, it)
	group := strings.TrimSpace(it.itemGroup)
	if group != "" && p.groups[group] {
		// A variant of a product already advertised: checked, not kept.
		p.noteID(line, p.check(line, &rec).ID)
		return
	}
	n := len(p.ads)
	p.addSince(line, &rec, before)
	if group != "" && len(p.ads) > n {
		if p.groups == nil {
			p.groups = make(map[string]bool)
		}
		p.groups[group] = true
	}
}

// merchantServed checks the attributes that decide whether the item is
// advertised at p.now, and reports whether it is.
func (p *parser) merchantServed(line int, it *merchantItem) bool {
	served := true
	switch a := merchantToken(it.availability); a {
	case "", "in_stock", "preorder", "backorder", "available_for_order":
	case "out_of_stock":
		served = false // the merchant takes no orders: a click would be paid for nothing
	default:
		p.fail(line, "availability", fmt.Sprintf("%q: want in_stock, out_of_stock, preorder or backorder", it.availability))
	}
	switch c := strings.ToLower(strings.TrimSpace(it.condition)); c {
	case "", "new", "used", "refurbished":
	default:
		p.fail(line, "condition", fmt.Sprintf("%q: want new, used or refurbished", it.condition))
	}
	switch merchantToken(it.pause) {
	case "":
	case "ads", "all":
		served = false
	default:
		p.fail(line, "pause", fmt.Sprintf("%q: want ads, or no value", it.pause))
	}
	for _, d := range it.excluded {
		if paidDestinations[merchantToken(d)] {
			served = false
		}
	}
	if adult, ok := merchantBool(it.adult); !ok {
		p.fail(line, "adult", fmt.Sprintf("%q: want yes or no", it.adult))
	} else if adult {
		served = false // publishers' pages are not for adult products
	}
	if e := strings.TrimSpace(it.expiration); e != "" {
		t, _, err := parseMerchantTime(e)
		switch {
		case err != nil:
			p.fail(line, "expiration_date", fmt.Sprintf("%q: %v", e, err))
		case !p.now.Before(t):
			served = false
		default:
			p.changesAt(t)
		}
	}
	return served
}

// merchantSingleUnit checks multipack and is_bundle, and reports whether
// the item is several products sold as one.
func (p *parser) merchantSingleUnit(line int, it *merchantItem) bool {
	several := false
	if m := strings.TrimSpace(it.multipack); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 {
			p.fail(line, "multipack", fmt.Sprintf("%q: want the number of products in the pack, such as 6", m))
		}
		several = n > 1
	}
	if b, ok := merchantBool(it.isBundle); !ok {
		p.fail(line, "is_bundle", fmt.Sprintf("%q: want yes or no", it.isBundle))
	} else if b {
		several = true
	}
	return several
}

// merchantBool reads a yes-or-no attribute; empty is no.
func merchantBool(s string) (v, ok bool) {
	switch merchantToken(s) {
	case "", "no", "false":
		return false, true
	case "yes", "true":
		return true, true
	}
	return false, false
}

// merchantPrice is the price the shopper pays at p.now: the sale price
// while its sale runs (always, when it gives no dates), else the price.
func (p *parser) merchantPrice(line int, it *merchantItem) (decimal, string) {
	amount, currency, ok := p.merchantAmount(line, "price", it.price)
	if strings.TrimSpace(it.salePrice) == "" {
		if strings.TrimSpace(it.salePriceDate) != "" {
			p.fail(line, "sale_price_effective_date", "given without a sale_price")
		}
		return amount, currency
	}
	saleAmount, saleCurrency, saleOK := p.merchantAmount(line, "sale_price", it.salePrice)
	if ok && saleOK && currency != "" && saleCurrency != currency {
		p.fail(line, "sale_price", fmt.Sprintf("%q is in another currency than the price %q", it.salePrice, it.price))
	}
	if d := strings.TrimSpace(it.salePriceDate); d != "" {
		start, end, err := parseMerchantRange(d)
		if err != nil {
			p.fail(line, "sale_price_effective_date", fmt.Sprintf("%q: %v", d, err))
			return amount, currency
		}
		p.changesAt(start)
		p.changesAt(end)
		if p.now.Before(start) || !p.now.Before(end) {
			return amount, currency
		}
	}
	return saleAmount, saleCurrency
}

// merchantAmount reads a price attribute, reporting it under field when
// it does not read; empty is no price.
func (p *parser) merchantAmount(line int, field, s string) (decimal, string, bool) {
	if strings.TrimSpace(s) == "" {
		return "", "", true
	}
	amount, currency, msg := parseMerchantPrice(s)
	if msg != "" {
		p.fail(line, field, msg)
		return "", "", false
	}
	return decimal(amount), currency, true
}

// merchantCategory is the most specific level of the merchant's own
// product type, else of Google's category when it is written out rather
// than given by its number.
func merchantCategory(productType, googleCategory string) string {
	for _, s := range []string{productType, googleCategory} {
		s = strings.TrimSpace(s)
		if i := strings.LastIndexByte(s, '>'); i >= 0 {
			s = strings.TrimSpace(s[i+1:])
		}
		if s != "" && !allDigits(s) {
			return s
		}
	}
	return ""
}

// parseMerchantPrice reads "19.99 EUR", "EUR 19.99", "19.99EUR" or
// "1.299,00 EUR" into its amount ("1299.00") and currency; msg says what
// is wrong when it does not read.
func parseMerchantPrice(s string) (amount, currency, msg string) {
	f := strings.Fields(s)
	if len(f) == 1 {
		// The currency written against the amount.
		if v := f[0]; len(v) > 3 && isDigit(v[0]) && isCurrency(strings.ToUpper(v[len(v)-3:])) {
			f = []string{v[:len(v)-3], v[len(v)-3:]}
		} else if len(v) > 3 && isDigit(v[3]) && isCurrency(strings.ToUpper(v[:3])) {
			f = []string{v[:3], v[3:]}
		}
	}
	if len(f) == 2 && isCurrency(strings.ToUpper(f[0])) && !isCurrency(strings.ToUpper(f[1])) {
		f[0], f[1] = f[1], f[0]
	}
	switch {
	case len(f) == 1:
		return "", "", fmt.Sprintf("%q has no currency: want an amount and an ISO 4217 currency such as 19.99 EUR", s)
	case len(f) != 2 || !isCurrency(strings.ToUpper(f[1])):
		return "", "", fmt.Sprintf("%q: want an amount and an ISO 4217 currency such as 19.99 EUR", s)
	}
	a, msg := merchantDecimal(f[0])
	if msg != "" {
		return "", "", fmt.Sprintf("%q: %s", s, msg)
	}
	if _, err := parseDecimal(a, 2); err != nil {
		return "", "", fmt.Sprintf("%q: %v", s, err)
	}
	return a, strings.ToUpper(f[1]), ""
}

// merchantDecimal writes an amount with a decimal point or comma and
// thousands separators ("1,299.00", "1.299,00", "15,00") as a plain
// decimal ("1299.00"). One separator followed by three digits ("1.299")
// may be either, and a price a thousand times off is worse than a
// refused feed: msg says so.
func merchantDecimal(s string) (string, string) {
	i := strings.LastIndexAny(s, ".,")
	if i < 0 {
		return s, ""
	}
	sep, tail := s[i], s[i+1:]
	thousands := byte(',')
	if sep == ',' {
		thousands = '.'
	}
	n := strings.Count(s, string(sep))
	intPart, frac := s[:i], tail
	switch {
	case n == 1 && len(tail) == 3 && strings.IndexByte(s, thousands) < 0:
		return "", fmt.Sprintf("is %q a decimal or a thousands separator? Write the amount with a decimal point and no thousands separator, such as 1299.00", sep)
	case n == 1 && len(tail) != 3:
		// sep is the decimal separator.
	default:
		// sep separates thousands, and there is no decimal part.
		if strings.IndexByte(s, thousands) >= 0 {
			return "", "its thousands and decimal separators are mixed up: write it such as 1299.00"
		}
		thousands, intPart, frac = sep, s, ""
	}
	if strings.IndexByte(intPart, thousands) >= 0 {
		groups := strings.Split(intPart, string(thousands))
		for j, g := range groups {
			if len(g) != 3 && (j > 0 || len(g) == 0 || len(g) > 3) {
				return "", fmt.Sprintf("%q does not separate thousands in groups of three digits", string(thousands))
			}
		}
		intPart = strings.Join(groups, "")
	}
	if frac == "" && sep == thousands {
		return intPart, ""
	}
	return intPart + "." + frac, ""
}

// merchantTimeLayouts are the ISO 8601 forms Merchant Center dates take:
// a zone as Z, -0800 or -08:00, seconds or none; without a zone, UTC.
var merchantTimeLayouts = []string{
	"2006-01-02T15:04Z0700", "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04Z07", "2006-01-02T15:04:05Z07",
	"2006-01-02T15:04", "2006-01-02T15:04:05",
}

// parseMerchantTime reads a Merchant Center date and time; dateOnly says
// it gave no time, which is midnight UTC.
func parseMerchantTime(s string) (t time.Time, dateOnly bool, err error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, true, nil
	}
	for _, l := range merchantTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, false, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("want an ISO 8601 date and time such as 2026-02-24T13:00-0800")
}

// parseMerchantRange reads "start/end", the sale's first moment and the
// first moment after it: an end given as a date alone lasts to that
// day's end.
func parseMerchantRange(s string) (start, end time.Time, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return start, end, fmt.Errorf("want a start and an end separated by /, such as 2026-02-24T13:00-0800/2026-02-28T15:30-0800")
	}
	start, _, err = parseMerchantTime(a)
	if err != nil {
		return start, end, fmt.Errorf("start: %v", err)
	}
	end, dateOnly, err := parseMerchantTime(b)
	if err != nil {
		return start, end, fmt.Errorf("end: %v", err)
	}
	if dateOnly {
		end = end.AddDate(0, 0, 1)
	}
	if !start.Before(end) {
		return start, end, fmt.Errorf("the sale ends before it starts")
	}
	return start, end, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// htmlText is the text of an attribute a shop wrote as HTML: its tags
// dropped ("<p>Edelstahl</p>"), its character references read, also when
// escaped once more for the XML ("&amp;quot;").
func htmlText(s string) string {
	if !strings.Contains(s, "<") {
		return html.UnescapeString(s)
	}
	var b strings.Builder
	z := nethtml.NewTokenizer(strings.NewReader(s))
	skip := 0 // inside <script> or <style>
	for {
		switch z.Next() {
		case nethtml.ErrorToken:
			return b.String()
		case nethtml.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case nethtml.StartTagToken:
			if name, _ := z.TagName(); string(name) == "script" || string(name) == "style" {
				skip++
			}
			b.WriteByte(' ')
		case nethtml.EndTagToken:
			if name, _ := z.TagName(); (string(name) == "script" || string(name) == "style") && skip > 0 {
				skip--
			}
			b.WriteByte(' ')
		case nethtml.SelfClosingTagToken:
			b.WriteByte(' ')
		}
	}
}

// maxMerchantID is Google's bound on a Merchant Center id, in characters.
const maxMerchantID = 50

// maxIDBefore is the bound on an ad's id, in bytes, before ids could be
// as long as Google allows once escaped: a longer Merchant Center id that
// fits in it still loads, as it did.
const maxIDBefore = 200

// merchantID is a Merchant Center id as an ad's id, which click URLs
// carry: Google takes any text, adlink printable ASCII without spaces, so
// in an id with a space or a byte outside ASCII these and the escape's own
// % are written as %XX ("SKU 12" is "SKU%2012"). An id without them is
// kept as it is, % and all, as it was before ids were escaped: its ad's
// links, report rows and windows go on. An escaped id that spells another
// id of the catalog is refused as its duplicate.
func merchantID(id string) string {
	id = strings.TrimSpace(id)
	if strings.IndexFunc(id, badIDRune) < 0 {
		return id
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
