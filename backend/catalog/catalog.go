//go:generate go run ./internal/demogen -o ../../testdata/catalog/demo.jsonl -logos ../../web/demo/logos

// Package catalog reads ad catalogs into match.Ad values: JSON-lines and CSV
// feed files (the format is documented in testdata/catalog/README.md) and the
// embedded demo catalog. The benchmarks' catalogs are in internal/testcatalog.
//
// Every feed line is validated; an error names the file, the line and the
// field, so an operator can fix a feed without guessing.
package catalog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/adlink/adlink"
	"github.com/adlink/adlink/match"
)

// Options tune how a feed is read.
type Options struct {
	// BaseURL is the server's public base URL ("http://localhost:8080").
	// Logo URLs in a feed that start with "/" are made absolute against it,
	// so the demo logos the backend serves at /demo/logos/ work from any
	// publisher page. Empty leaves such logos as they are.
	BaseURL string
	// Advertiser, Markets and Bid are given to every ad of the feed that
	// names none of its own: a source's options ("#advertiser=shop.example
	// &market=de-DE"). They win over what a Merchant Center feed says of
	// itself (its channel's link and language).
	Advertiser string
	Markets    []string
	Bid        string
	// Advertisers, when not empty, lock the feed to these advertiser ids
	// (a source's "#advertisers=shop.example"): an item whose advertiser,
	// its own, Advertiser or its landing page's host, is none of them is
	// an error. Ids compare as the budgets compare them, trimmed and
	// lower-cased. Advertiser alone locks nothing.
	Advertisers []string
	// Now is the time a Merchant Center feed's sales and expiration dates
	// are judged at; zero is the time the read starts.
	Now time.Time
	// Warn, when set, is told of what a feed says that adlink does not
	// read, which loads all the same: each attribute of a Merchant Center
	// feed that is neither adlink's nor Google's, once, on the line it is
	// first found on; past MaxErrors of them, once more with how many
	// were not named.
	Warn func(*LineError)
}

// MaxErrors is how many line errors Load lists; it counts the rest and
// says how many it left out.
const MaxErrors = 50

// MaxIDBytes bounds an ad's id: a Merchant Center id of the 50
// characters Google allows, each four bytes of UTF-8 escaped as %XX, fits.
const MaxIDBytes = maxMerchantID * 4 * 3

// maxLine bounds one JSON line, so a feed without newlines cannot take all
// memory.
const maxLine = 1 << 20

// LineError is one problem in a feed: where it is and what is wrong.
type LineError struct {
	// File is the feed's name as given to Load.
	File string
	// Line is 1-based.
	Line int
	// Field is the feed field at fault ("landing"); empty when the line as a
	// whole is unreadable.
	Field string
	// Msg says what is wrong and, where it helps, what is allowed.
	Msg string
}

// Error returns "file:line: field: message".
func (e *LineError) Error() string {
	if e.Field == "" {
		return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Field + ": " + e.Msg
}

// Demo returns the demo catalog embedded in the binary (adlink.DemoCatalog).
func Demo(opts Options) ([]match.Ad, error) {
	return Load(bytes.NewReader(adlink.DemoCatalog), "demo.jsonl", opts)
}

// LoadFile reads the feed file at path; its extension picks the format, as
// for Load.
func LoadFile(path string, opts Options) ([]match.Ad, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Load(f, path, opts)
}

// Load reads one feed. name's extension picks the format (FormatOf):
// ".jsonl" or ".ndjson" for JSON lines, ".csv" for CSV, ".xml", ".rss" or
// ".atom" for a Google Merchant Center XML feed, ".tsv" or ".txt" for its
// tab-separated form, each optionally followed by ".gz". name also
// prefixes every error. Load returns no ads unless every line is valid;
// the error then lists up to MaxErrors *LineError values (reach them with
// errors.As or by unwrapping the joined error).
//
// Ads of one feed share the strings and market lists that many lines repeat;
// treat their slices as read-only.
func Load(r io.Reader, name string, opts Options) ([]match.Ad, error) {
	f := FormatOf(name, "")
	if f == FormatUnknown {
		ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(strings.ToLower(name), ".gz")))
		return nil, fmt.Errorf("%s: unknown feed format %q: want .jsonl, .ndjson, .csv, .xml, .rss, .atom, .tsv or .txt", name, ext)
	}
	return LoadFormat(r, name, f, opts)
}

// LoadFormat reads one feed in format f; a gzip stream is read through
// gzip whatever its name. name prefixes every error, as for Load.
func LoadFormat(r io.Reader, name string, f Format, opts Options) ([]match.Ad, error) {
	return load(r, name, f, opts, true)
}

// load is LoadFormat; a caller that has decompressed the feed under its
// own cap asks for no second gzip layer.
func load(r io.Reader, name string, f Format, opts Options, gz bool) ([]match.Ad, error) {
	ads, _, err := loadAgain(r, name, f, opts, gz, nil)
	return ads, err
}

// loadAgain is load that finds the ads of unchanged lines of a JSON-lines
// feed in ls, its last read's lines, and notes this read's in ls. until
// is when the ads read would change though the feed does not (a sale
// starts or ends, an item expires), zero for never.
func loadAgain(r io.Reader, name string, f Format, opts Options, gz bool, ls *lines) (ads []match.Ad, until time.Time, err error) {
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, until, fmt.Errorf("catalog: base URL %q is not an absolute http(s) URL", opts.BaseURL)
		}
	}
	if gz {
		var err error
		if r, err = gunzipped(r); err != nil {
			return nil, until, fmt.Errorf("%s: %w", name, err)
		}
		if c, ok := r.(io.Closer); ok {
			defer c.Close()
		}
	}
	p := parser{name: name, opts: opts, seen: make(map[string]int), lines: ls, now: opts.Now}
	if p.now.IsZero() {
		p.now = time.Now()
	}
	if ls != nil && ls.prev != nil {
		// The feed read again is about as long as last time: no growing
		// of a million-ad slice line by line.
		n := len(ls.prev.ads)
		p.ads = make([]match.Ad, 0, n+n/16)
	}
	if err := p.setDefaults(); err != nil {
		return nil, until, fmt.Errorf("%s: %w", name, err)
	}
	switch f {
	case FormatJSONL:
		p.readJSONLOn(r, runtime.GOMAXPROCS(0), jsonlBlock)
	case FormatCSV:
		p.readCSV(r)
	case FormatMerchantXML:
		p.readMerchantXML(r)
	case FormatMerchantTSV:
		p.readMerchantTSV(r)
	default:
		return nil, until, fmt.Errorf("%s: unknown feed format", name)
	}
	p.unknownLeftOut()
	ads, err = p.result()
	if err != nil {
		return nil, time.Time{}, err
	}
	return ads, p.until, nil
}

// gunzipped returns r, or a reader of its gzip stream when it starts with
// gzip's magic bytes, whatever the feed is called or served as.
func gunzipped(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(2)
	if len(head) < 2 || head[0] != 0x1f || head[1] != 0x8b {
		return br, nil
	}
	return gzip.NewReader(br)
}

// parser collects the ads and the errors of one feed.
type parser struct {
	name    string
	opts    Options
	ads     []match.Ad
	errs    []error
	dropped int
	seen    map[string]int // id -> line
	// strs and markets share the values many lines repeat (advertiser,
	// manufacturer, category, currency, keywords, market lists), so a
	// large feed holds each once.
	strs    map[string]string
	markets map[string][]match.Market
	// The advertiser, markets and bid of lines that name none.
	defAdvertiser string
	defMarkets    []string
	defBid        decimal
	// allowed, when not empty, are the only advertisers the feed's ads
	// may have (Options.Advertisers).
	allowed []string
	// rename maps adlink's field names to the feed's own in errors.
	rename map[string]string
	// lines, when set, has the ads of a JSON-lines feed's last read by
	// line, and notes this read's.
	lines *lines
	// now is when the read is judged at; until is the first time after it
	// at which what an item is served as changes (Merchant Center dates).
	now, until time.Time
	// groups are the item_group_id values an ad was kept for, so that one
	// product's variants give one ad.
	groups map[string]bool
	// unknown are the attributes Options.Warn was told of, or that were
	// left out of it: unknownLeft of them, the first on unknownLeftLine.
	unknown                      map[string]bool
	unknownLeft, unknownLeftLine int
}

// changesAt notes that what an item is served as changes at t.
func (p *parser) changesAt(t time.Time) {
	if t.After(p.now) && (p.until.IsZero() || t.Before(p.until)) {
		p.until = t
	}
}

// setDefaults checks the options' defaults for the feed's lines.
func (p *parser) setDefaults() error {
	if a := strings.ToLower(strings.TrimSpace(p.opts.Advertiser)); a != "" {
		if !isDomain(a) {
			return fmt.Errorf("advertiser %q is not a domain name", p.opts.Advertiser)
		}
		p.defAdvertiser = a
	}
	if len(p.opts.Advertisers) > 0 {
		allowed, err := parseAdvertisers(p.opts.Advertisers, p.opts.Advertiser)
		if err != nil {
			return err
		}
		p.allowed = allowed
	}
	for _, m := range p.opts.Markets {
		if _, ok := match.ParseMarket(strings.TrimSpace(m)); !ok {
			return fmt.Errorf("market %q: want language-COUNTRY such as de-DE", m)
		}
	}
	p.defMarkets = p.opts.Markets
	if b := strings.TrimSpace(p.opts.Bid); b != "" {
		if _, err := parseDecimal(b, 6); err != nil {
			return fmt.Errorf("bid: %v", err)
		}
		p.defBid = decimal(b)
	}
	return nil
}

func (p *parser) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := p.strs[s]; ok {
		return v
	}
	if p.strs == nil {
		p.strs = make(map[string]string)
	}
	p.strs[s] = s
	return s
}

func (p *parser) internMarkets(ms []match.Market) []match.Market {
	if len(ms) == 0 {
		return ms
	}
	var key []byte
	for _, m := range ms {
		key = append(key, m.Lang...)
		key = append(key, m.Country...)
	}
	if v, ok := p.markets[string(key)]; ok {
		return v
	}
	if p.markets == nil {
		p.markets = make(map[string][]match.Market)
	}
	ms = slices.Clip(ms)
	p.markets[string(key)] = ms
	return ms
}

// collapseSpace trims s and turns every run of white space inside it
// (line breaks and tabs too) into one space.
func collapseSpace(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c == ' ' && i+1 < len(s) && s[i+1] == ' ') || c >= 0x80 {
			return strings.Join(strings.Fields(s), " ")
		}
	}
	return s
}

func (p *parser) fail(line int, field, msg string) {
	if len(p.errs) >= MaxErrors {
		p.dropped++
		return
	}
	if f, ok := p.rename[field]; ok {
		field = f
	}
	p.errs = append(p.errs, &LineError{File: p.name, Line: line, Field: field, Msg: msg})
}

func (p *parser) result() ([]match.Ad, error) {
	if len(p.errs) == 0 {
		if len(p.ads) == 0 {
			return nil, nil // none, whatever room was made for them
		}
		return p.ads, nil
	}
	if p.dropped > 0 {
		p.errs = append(p.errs, fmt.Errorf("%s: %d more errors not shown", p.name, p.dropped))
	}
	return nil, errors.Join(p.errs...)
}

// add converts one record, validates it and keeps it when it is sound.
func (p *parser) add(line int, rec *record) { p.addSince(line, rec, len(p.errs)+p.dropped) }

// addSince is add for a line whose problems are counted from before on.
func (p *parser) addSince(line int, rec *record, before int) {
	p.keep(line, p.check(line, rec), before)
}

// check converts one record and validates it, reporting its problems.
func (p *parser) check(line int, rec *record) match.Ad {
	if strings.TrimSpace(rec.Advertiser) == "" {
		rec.Advertiser = p.defAdvertiser
	}
	if len(rec.Markets) == 0 {
		rec.Markets = p.defMarkets
	}
	if strings.TrimSpace(string(rec.Bid)) == "" {
		rec.Bid = p.defBid
	}
	a := p.convert(line, rec)
	checkAd(&a, func(field, msg string) { p.fail(line, field, msg) })
	if p.allowed != nil && !slices.Contains(p.allowed, a.Advertiser) {
		p.fail(line, "advertiser", fmt.Sprintf("item %q is of advertiser %q, which this feed may not bill: its advertisers option names %s",
			a.ID, a.Advertiser, strings.Join(p.allowed, ",")))
	}
	return a
}

// keep keeps a, of line, unless its id is a duplicate or the line has had
// problems since before.
func (p *parser) keep(line int, a match.Ad, before int) {
	p.noteID(line, a.ID)
	if len(p.errs)+p.dropped == before {
		p.ads = append(p.ads, a)
	}
}

// noteID reports id, of line, when an earlier line had it.
func (p *parser) noteID(line int, id string) {
	if id == "" {
		return
	}
	if prev, dup := p.seen[id]; dup {
		p.fail(line, "id", fmt.Sprintf("duplicate id %q (first on line %d)", id, prev))
	} else {
		p.seen[id] = line
	}
}

// convert turns the strings of a record into an ad, reporting the fields
// that do not parse. Checks that apply to any ad are left to checkAd.
func (p *parser) convert(line int, rec *record) match.Ad {
	a := match.Ad{
		ID:           strings.TrimSpace(rec.ID),
		Title:        collapseSpace(rec.Title),
		Manufacturer: p.intern(collapseSpace(rec.Manufacturer)),
		Model:        collapseSpace(rec.Model),
		Category:     p.intern(collapseSpace(rec.Category)),
		Description:  collapseSpace(rec.Description),
		GTIN:         strings.TrimSpace(rec.GTIN),
		Currency:     p.intern(strings.ToUpper(strings.TrimSpace(rec.Currency))),
		Logo:         strings.TrimSpace(rec.Logo),
		Landing:      strings.TrimSpace(rec.Landing),
		Advertiser:   p.intern(strings.ToLower(strings.TrimSpace(rec.Advertiser))),
	}
	fail := func(field, msg string) { p.fail(line, field, msg) }

	kind := strings.TrimSpace(rec.Kind)
	if k, ok := match.ParseKind(kind); ok {
		a.Kind = k
	} else if kind == "" {
		fail("kind", "missing: want advertiser, product or coupon")
	} else {
		fail("kind", fmt.Sprintf("%q is not a kind: want advertiser, product or coupon", kind))
	}

	for _, k := range rec.Keywords {
		k = p.intern(collapseSpace(k))
		if k == "" {
			fail("keywords", "empty keyword")
			continue
		}
		if !slices.Contains(a.Keywords, k) {
			a.Keywords = append(a.Keywords, k)
		}
	}

	for _, s := range rec.Markets {
		s = strings.TrimSpace(s)
		m, ok := match.ParseMarket(s)
		if !ok {
			fail("markets", fmt.Sprintf("%q is not a market: want language-COUNTRY such as de-DE", s))
			continue
		}
		if !slices.Contains(a.Markets, m) {
			a.Markets = append(a.Markets, m)
		}
	}

	a.Markets = p.internMarkets(a.Markets)

	if s := strings.TrimSpace(string(rec.Price)); s != "" {
		c, err := parseDecimal(s, 2)
		if err != nil {
			fail("price", err.Error())
		}
		a.PriceCents = c
		if a.Currency == "" {
			fail("currency", "missing: a price needs a 3-letter ISO 4217 currency such as EUR")
		}
	}
	if s := strings.TrimSpace(string(rec.Bid)); s != "" {
		m, err := parseDecimal(s, 6)
		if err != nil {
			fail("bid", err.Error())
		}
		a.BidMicros = m
	}

	if a.Advertiser == "" {
		// An advertiser ad is its own merchant; anything else is sold by
		// whoever owns the landing page.
		if a.Kind == match.KindAdvertiser {
			a.Advertiser = p.intern(strings.ToLower(a.ID))
		} else if u, err := url.Parse(a.Landing); err == nil {
			a.Advertiser = p.intern(strings.TrimPrefix(strings.ToLower(u.Hostname()), "www."))
		}
	}
	if strings.HasPrefix(a.Logo, "/") && !strings.HasPrefix(a.Logo, "//") && p.opts.BaseURL != "" {
		a.Logo = strings.TrimSuffix(p.opts.BaseURL, "/") + a.Logo
	}
	return a
}

// Validate checks ads built in memory (by an importer or a generator) with the
// rules a feed line must pass, and reports the first MaxErrors problems,
// each naming the ad's position and id.
func Validate(ads []match.Ad) error {
	var errs []error
	seen := make(map[string]bool, len(ads))
	for i := range ads {
		a := &ads[i]
		report := func(field, msg string) {
			if len(errs) < MaxErrors {
				errs = append(errs, fmt.Errorf("ad %d (%q): %s: %s", i, a.ID, field, msg))
			}
		}
		checkAd(a, report)
		if seen[a.ID] {
			report("id", "duplicate id")
		}
		seen[a.ID] = true
		if a.PriceCents < 0 {
			report("price", "negative")
		}
		if a.BidMicros < 0 {
			report("bid", "negative")
		}
		for _, k := range a.Keywords {
			if strings.TrimSpace(k) == "" {
				report("keywords", "empty keyword")
			}
		}
		for _, m := range a.Markets {
			if _, ok := match.ParseMarket(m.String()); !ok {
				report("markets", fmt.Sprintf("%q is not a market", m.String()))
			}
		}
	}
	return errors.Join(errs...)
}

// checkAd applies the rules every ad must pass, however it was read.
func checkAd(a *match.Ad, fail func(field, msg string)) {
	switch {
	case a.ID == "":
		fail("id", "missing")
	case len(a.ID) > MaxIDBytes:
		fail("id", fmt.Sprintf("longer than %d bytes", MaxIDBytes))
	case strings.IndexFunc(a.ID, badIDRune) >= 0:
		fail("id", fmt.Sprintf("%q contains a space, control or non-ASCII character", a.ID))
	case a.Kind == match.KindAdvertiser && !isDomain(a.ID):
		fail("id", fmt.Sprintf("%q: an advertiser's id is its domain, such as handy-bestkauf.de", a.ID))
	}
	if a.Title == "" {
		fail("title", "missing")
	}
	if a.Kind == match.KindAdvertiser && len(a.Keywords) == 0 {
		fail("keywords", "an advertiser needs at least one bid phrase")
	}
	if a.Landing == "" {
		fail("landing", "missing")
	} else if !IsWebURL(a.Landing) {
		fail("landing", fmt.Sprintf("%q is not an absolute http or https URL", a.Landing))
	}
	if a.Logo != "" && !IsWebURL(strings.ReplaceAll(a.Logo, "{dim}", "90x90")) &&
		!(strings.HasPrefix(a.Logo, "/") && !strings.HasPrefix(a.Logo, "//")) {
		fail("logo", fmt.Sprintf("%q is neither an absolute http or https URL nor a path starting with /", a.Logo))
	}
	if len(a.Markets) == 0 {
		fail("markets", "missing: want at least one market such as de-DE, or the source's option #market=de-DE for every item without one")
	}
	if a.GTIN != "" && !isGTINShape(a.GTIN) {
		fail("gtin", fmt.Sprintf("%q is not a GTIN: want 8 to 14 digits", a.GTIN))
	}
	if a.Currency != "" && !isCurrency(a.Currency) {
		fail("currency", fmt.Sprintf("%q is not a 3-letter ISO 4217 currency code", a.Currency))
	}
	if a.Advertiser != "" && !isDomain(a.Advertiser) {
		fail("advertiser", fmt.Sprintf("%q is not a domain name", a.Advertiser))
	}
	for _, f := range [...]struct{ name, v string }{
		{"title", a.Title}, {"manufacturer", a.Manufacturer}, {"model", a.Model},
		{"category", a.Category}, {"description", a.Description}, {"landing", a.Landing}, {"logo", a.Logo},
	} {
		if !utf8.ValidString(f.v) {
			fail(f.name, "not valid UTF-8")
		} else if strings.IndexFunc(f.v, unicode.IsControl) >= 0 {
			fail(f.name, "contains a control character")
		}
	}
	for _, k := range a.Keywords {
		if !utf8.ValidString(k) {
			fail("keywords", "not valid UTF-8")
			break
		}
		if strings.IndexFunc(k, unicode.IsControl) >= 0 {
			fail("keywords", "contains a control character")
			break
		}
	}
}

func badIDRune(r rune) bool { return r <= ' ' || r >= 0x7f }

// IsWebURL reports whether s is an absolute http or https URL with a host,
// no credentials and no space or control byte: what a landing page or a
// logo must be, and what the redirect sends a browser to.
func IsWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.User == nil && strings.IndexFunc(s, badURLRune) < 0
}

func badURLRune(r rune) bool { return r <= ' ' || r == 0x7f }

// isDomain reports whether s is a lower-case host name with at least one dot.
func isDomain(s string) bool {
	if len(s) > 253 || !strings.Contains(s, ".") {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func isCurrency(s string) bool {
	return len(s) == 3 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z' && s[2] >= 'A' && s[2] <= 'Z'
}

func isGTINShape(s string) bool {
	if len(s) < 8 || len(s) > 14 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ValidGTIN reports whether s is a GTIN-8, -12, -13 or -14 whose check
// digit is right. Feeds only need 8 to 14 digits; importers use this to drop
// codes that are certainly wrong.
func ValidGTIN(s string) bool {
	switch len(s) {
	case 8, 12, 13, 14:
	default:
		return false
	}
	if !isGTINShape(s) {
		return false
	}
	return GTINCheckDigit(s[:len(s)-1]) == s[len(s)-1]
}

// GTINCheckDigit returns the GS1 check digit for the digits before it.
func GTINCheckDigit(body string) byte {
	sum := 0
	for i := len(body) - 1; i >= 0; i-- {
		d := int(body[i] - '0')
		if (len(body)-1-i)%2 == 0 {
			d *= 3
		}
		sum += d
	}
	return byte('0' + (10-sum%10)%10)
}

// parseDecimal reads a non-negative decimal with at most scale fractional
// digits ("19.99") as an integer count of 10^-scale units.
func parseDecimal(s string, scale int) (int64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("%q is negative", s)
	}
	ip, fp, dot := strings.Cut(s, ".")
	if ip == "" || !allDigits(ip) || (dot && (fp == "" || !allDigits(fp))) {
		return 0, fmt.Errorf("%q is not a decimal number such as 19.99", s)
	}
	if len(fp) > scale {
		return 0, fmt.Errorf("%q has more than %d decimal places", s, scale)
	}
	ip = strings.TrimLeft(ip, "0")
	if len(ip) > 9 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	v := int64(0)
	for i := 0; i < len(ip); i++ {
		v = v*10 + int64(ip[i]-'0')
	}
	for i := 0; i < scale; i++ {
		v *= 10
		if i < len(fp) {
			v += int64(fp[i] - '0')
		}
	}
	return v, nil
}

// formatDecimal writes v units of 10^-scale with at least two decimals and
// no trailing zeros beyond them: (1999, 2) -> "19.99", (450000, 6) -> "0.45".
func formatDecimal(v int64, scale int) string {
	p := int64(1)
	for range scale {
		p *= 10
	}
	frac := strconv.FormatInt(p+v%p, 10)[1:]
	for len(frac) > 2 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	return strconv.FormatInt(v/p, 10) + "." + frac
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
