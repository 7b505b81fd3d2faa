package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"code.dny.dev/ssrf"

	"github.com/adlink/adlink/backend/egress"
	"github.com/adlink/adlink/match"
)

// Format is a feed's format.
type Format int

// The feed formats Load reads.
const (
	FormatUnknown     Format = iota
	FormatJSONL              // JSON lines, adlink's own fields
	FormatCSV                // CSV with a header row, adlink's own fields
	FormatMerchantXML        // Google Merchant Center RSS 2.0 or Atom
	FormatMerchantTSV        // Google Merchant Center tab-separated
)

// FormatOf picks a feed's format from its name's extension (a trailing
// ".gz" aside), else from the content type it was served with.
func FormatOf(name, contentType string) Format {
	n := strings.TrimSuffix(strings.ToLower(name), ".gz")
	switch path.Ext(n) {
	case ".jsonl", ".ndjson":
		return FormatJSONL
	case ".csv":
		return FormatCSV
	case ".xml", ".rss", ".atom":
		return FormatMerchantXML
	case ".tsv", ".txt": // Merchant Center names its tab-separated feeds .txt
		return FormatMerchantTSV
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/x-ndjson", "application/jsonl", "application/x-jsonlines":
		return FormatJSONL
	case "text/csv":
		return FormatCSV
	case "application/rss+xml", "application/atom+xml", "application/xml", "text/xml":
		return FormatMerchantXML
	case "text/tab-separated-values":
		return FormatMerchantTSV
	}
	return FormatUnknown
}

// Source is where a feed comes from: a file or an http(s) URL, as -catalog
// names it, with the options its fragment gives ("feed.xml#advertiser=
// shop.example&market=de-DE&market=de-AT&bid=0.10&format=tsv&advertisers=
// shop.example"). The fragment is never sent to the server.
type Source struct {
	// Name is the source as errors, warnings and the log show it: as
	// given, but a URL's credentials (Redacted).
	Name string
	// given is the source as given, which tells sources apart.
	given string
	// Location is the file path or URL without the fragment.
	Location string
	// Format, when not FormatUnknown, is the fragment's format=.
	Format Format
	// Defaults are the fragment's advertiser, markets and bid.
	Advertiser string
	Markets    []string
	Bid        string
	// Advertisers, when not empty, are the only advertisers the feed's
	// items may name or be given (the fragment's advertisers=, lower-case):
	// a merchant's feed cannot bill another advertiser's budget.
	Advertisers []string
}

// key tells s from the other sources: two that show the same (their
// credentials aside) are two feeds.
func (s *Source) key() string {
	if s.given != "" {
		return s.given
	}
	return s.Name
}

// IsURL reports whether the source is fetched over HTTP.
func (s *Source) IsURL() bool {
	return strings.HasPrefix(s.Location, "http://") || strings.HasPrefix(s.Location, "https://")
}

// ParseSource reads a -catalog value.
func ParseSource(v string) (Source, error) {
	s := Source{Name: Redacted(v), given: v, Location: v}
	if MisreadUserInfo(v) {
		return s, fmt.Errorf("catalog %s: an '@' after the host: percent-encode a '/', '?', '#' or '@' in the user name or password (%%2F, %%3F, %%23, %%40), and an '@' in the path or options as %%40", s.Name)
	}
	loc, frag, ok := strings.Cut(v, "#")
	if !ok {
		return s, nil
	}
	s.Location = loc
	q, err := url.ParseQuery(frag)
	if err != nil {
		return s, fmt.Errorf("catalog %s: options after #: %w", s.Name, err)
	}
	for k, vs := range q {
		switch k {
		case "advertiser":
			s.Advertiser = vs[len(vs)-1]
		case "market":
			for _, m := range vs {
				s.Markets = append(s.Markets, strings.Split(m, ",")...)
			}
		case "bid":
			s.Bid = vs[len(vs)-1]
		case "advertisers":
			for _, v := range vs {
				s.Advertisers = append(s.Advertisers, strings.Split(v, ",")...)
			}
		case "format":
			s.Format = map[string]Format{"jsonl": FormatJSONL, "csv": FormatCSV, "xml": FormatMerchantXML,
				"rss": FormatMerchantXML, "atom": FormatMerchantXML, "tsv": FormatMerchantTSV}[vs[len(vs)-1]]
			if s.Format == FormatUnknown {
				return s, fmt.Errorf("catalog %s: format %q: want jsonl, csv, xml or tsv", s.Name, vs[len(vs)-1])
			}
		default:
			return s, fmt.Errorf("catalog %s: unknown option %q after #: want advertiser, advertisers, market, bid or format", s.Name, k)
		}
	}
	if s.Advertisers != nil {
		var err error
		if s.Advertisers, err = parseAdvertisers(s.Advertisers, s.Advertiser); err != nil {
			return s, fmt.Errorf("catalog %s: %w", s.Name, err)
		}
	}
	if s.IsURL() {
		if u, err := url.Parse(s.Location); err != nil || u.Host == "" {
			return s, fmt.Errorf("catalog %s: not a valid URL", s.Name)
		}
	}
	return s, nil
}

// parseAdvertisers checks the ids of an advertisers= option and returns
// them as the budgets compare ids, trimmed and lower-cased. Each must be a
// domain name, as an item's advertiser is, and def, the advertiser option,
// must be one of them: else every item without its own advertiser fails.
func parseAdvertisers(ids []string, def string) ([]string, error) {
	var out []string
	for _, id := range ids {
		a := strings.ToLower(strings.TrimSpace(id))
		switch {
		case a == "":
			return nil, errors.New("advertisers: an empty advertiser id: want domain names such as shop.example, separated by commas")
		case !isDomain(a):
			return nil, fmt.Errorf("advertisers: %q is not a domain name", id)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if d := strings.ToLower(strings.TrimSpace(def)); d != "" && !slices.Contains(out, d) {
		return nil, fmt.Errorf("advertiser %q is not one of advertisers %s", def, strings.Join(out, ","))
	}
	return out, nil
}

// FetchOptions bound what a Fetcher reads.
type FetchOptions struct {
	// Timeout bounds one fetch of a URL, from the request to the last
	// byte; zero is a minute.
	Timeout time.Duration
	// MaxBytes bounds a feed's bytes, as read and once decompressed; zero
	// is 1 GiB.
	MaxBytes int64
	// Proxy picks the proxy of a request, as http.Transport's Proxy does;
	// nil is http.ProxyFromEnvironment: HTTPS_PROXY for https URLs,
	// HTTP_PROXY for http ones (or their lower-case forms), except the
	// hosts NO_PROXY names and loopback ones. Through a proxy the Fetcher
	// sees the proxy's address, not the feed server's (see Fetcher).
	Proxy func(*http.Request) (*url.URL, error)

	// resolve, in tests, makes names resolve to chosen addresses; nil is
	// the system's resolver.
	resolve egress.Resolver
	// guard, in tests, makes a loopback address count as public.
	guard []ssrf.Option
	// now, in tests, is the clock a feed's sales and expiration dates are
	// judged by; nil is time.Now.
	now func() time.Time
}

// ErrTooLarge is the error of a feed over FetchOptions.MaxBytes.
var ErrTooLarge = errors.New("feed is larger than its size cap (-catalog-max-bytes)")

// Fetcher reads sources again and again, and parses a source again only
// when it changed: a URL is asked for with If-None-Match and
// If-Modified-Since, a file is read again when its size or time changed,
// and a source whose bytes are those of last time keeps its ads. It is
// safe for concurrent use; of two fetches of one source at once, the one
// that ends last is what the next fetch compares with.
//
// A feed URL is the operator's, trusted as given, internal hosts
// included; its redirects are the feed server's. Once a fetch has
// connected to a public address, no later connection of it (a redirect's,
// to any name, however it resolves then) may go to an address that is
// not public: a merchant's server cannot lead the Fetcher into the
// operator's network or to the cloud metadata address. Each request has
// a connection of its own, judged when it is dialled.
//
// A request through the operator's proxy (FetchOptions.Proxy) connects
// to the proxy, whose address is all the guard sees: the proxy is trusted,
// and refusing a feed server's redirect into the operator's network is
// then the proxy's job. The server it reached is taken for a public one,
// so a later connection of the fetch made without the proxy (to a host
// NO_PROXY names) may not go to an address that is not public.
type Fetcher struct {
	opts   FetchOptions
	client *http.Client
	guard  *egress.Guard
	mu     sync.Mutex
	last   map[string]*fetched // by Source.key
	// afterRead, in tests, runs once a file is read and before it is
	// checked for a change.
	afterRead func(path string)
}

// fetched is what a source gave last time.
type fetched struct {
	etag, lastModified string
	size               int64
	modTime            time.Time
	sum                string // SHA-256 of the raw bytes
	ads                []match.Ad
	// lines are a JSON-lines feed's ads by line, for the next read.
	lines *lines
	// until is when its ads change though its bytes do not (a sale starts
	// or ends, an item expires): from then on it is read again in full.
	until time.Time
	// warnings are what Options.Warn was told as it was read.
	warnings []string
}

// NewFetcher returns a Fetcher with opts' bounds.
func NewFetcher(opts FetchOptions) *Fetcher {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 30
	}
	if opts.resolve == nil {
		opts.resolve = egress.SystemResolver
	}
	if opts.Proxy == nil {
		opts.Proxy = http.ProxyFromEnvironment
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	f := &Fetcher{opts: opts, guard: egress.New(opts.guard...), last: map[string]*fetched{}}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, ControlContext: f.control}
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy: noteProxy(opts.Proxy),
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return f.dial(ctx, d, network, addr)
			},
			// Every request dials, where the guard judges and notes the
			// address: a kept connection would let a public feed's
			// redirect reach an internal feed's host past the guard, and
			// a fetch that reused one would not know it went public.
			DisableKeepAlives:   true,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		CheckRedirect: checkFeedRedirect,
	}
	return f
}

// Result is what one fetch of a source gave.
type Result struct {
	// Ads are the source's ads: the same slice as last time when Unchanged.
	Ads []match.Ad
	// Unchanged is whether the source is as it was last time: not
	// modified (304), the same file, or the same bytes.
	Unchanged bool
	// Until is when the ads change though the source does not (a
	// Merchant Center sale starts or ends, an item expires): a fetch from
	// then on reads it again in full. Zero is never.
	Until time.Time
	// Warnings are what the source says that adlink does not read (its
	// unknown Merchant Center attributes), as of its last read: the same
	// when Unchanged.
	Warnings []string
}

// Fetch reads src, or keeps what it gave last time when it has not
// changed. An error leaves last time's state as it was, so the next fetch
// asks again. A feed whose ads change with time (a Merchant Center sale
// that starts or ends, an item that expires) is read again in full at the
// first fetch after the change, whether or not its bytes changed.
func (f *Fetcher) Fetch(ctx context.Context, src Source, opts Options) (Result, error) {
	opts.Advertiser, opts.Markets, opts.Bid, opts.Advertisers = src.Advertiser, src.Markets, src.Bid, src.Advertisers
	if opts.Now.IsZero() {
		opts.Now = f.opts.now()
	}
	f.mu.Lock()
	prev := f.last[src.key()]
	f.mu.Unlock()
	if prev != nil && !prev.until.IsZero() && !opts.Now.Before(prev.until) {
		prev = nil // what it gave is out of date, however unchanged its bytes
	}
	var (
		next *fetched
		err  error
	)
	if src.IsURL() {
		next, err = f.fetchURL(ctx, src, opts, prev)
	} else {
		next, err = f.readFile(src, opts, prev)
	}
	if err != nil {
		return Result{}, err
	}
	f.mu.Lock()
	f.last[src.key()] = next
	f.mu.Unlock()
	return Result{Ads: next.ads, Unchanged: prev != nil && next == prev, Until: next.until, Warnings: next.warnings}, nil
}

// Forget drops what the Fetcher knows of every source, so that the next
// fetches read everything again.
func (f *Fetcher) Forget() {
	f.mu.Lock()
	clear(f.last)
	f.mu.Unlock()
}

func (f *Fetcher) readFile(src Source, opts Options, prev *fetched) (*fetched, error) {
	file, err := os.Open(src.Location)
	if err != nil {
		return nil, redactErr(err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, redactErr(err)
	}
	if prev != nil && prev.size == st.Size() && prev.modTime.Equal(st.ModTime()) {
		return prev, nil
	}
	if st.Size() > f.opts.MaxBytes {
		return nil, fmt.Errorf("%s: %w (%d bytes, the cap is %d)", src.Name, ErrTooLarge, st.Size(), f.opts.MaxBytes)
	}
	next := &fetched{size: st.Size(), modTime: st.ModTime()}
	format := src.Format
	if format == FormatUnknown {
		format = FormatOf(src.Location, "")
	}
	ads, sum, ls, until, warns, err := f.parse(file, src, format, opts, prev)
	if f.afterRead != nil {
		f.afterRead(src.Location)
	}
	// A feed written in place while it was read is a mix of two feeds.
	if after, serr := os.Stat(src.Location); serr != nil || after.Size() != st.Size() || !after.ModTime().Equal(st.ModTime()) {
		return nil, fmt.Errorf("%s: changed while it was read; it is read again at the next refresh (write feeds to a new file and rename it)", src.Name)
	}
	if err != nil {
		return nil, err
	}
	next.sum, next.ads, next.lines, next.until, next.warnings = sum, ads, ls, until, warns
	if prev != nil && prev.sum == sum {
		prev.size, prev.modTime = next.size, next.modTime
		return prev, nil
	}
	return next, nil
}

func (f *Fetcher) fetchURL(ctx context.Context, src Source, opts Options, prev *fetched) (*fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, hopsKey{}, &hops{})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.Location, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name, redactErr(err))
	}
	req.Header.Set("User-Agent", "adlink-catalog/1")
	if prev != nil {
		if prev.etag != "" {
			req.Header.Set("If-None-Match", prev.etag)
		}
		if prev.lastModified != "" {
			req.Header.Set("If-Modified-Since", prev.lastModified)
		}
	}
	res, err := f.client.Do(req)
	err = redactErr(err) // its URL is the feed's, or a redirect's
	if ue := (*url.Error)(nil); errors.Is(err, ErrRedirectRefused) && errors.As(err, &ue) {
		return nil, fmt.Errorf("%s: redirect to %s: %w", src.Name, ue.URL, ue.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotModified && prev != nil:
		return prev, nil
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s: answered %s", src.Name, res.Status)
	case res.ContentLength > f.opts.MaxBytes:
		return nil, fmt.Errorf("%s: %w (%d bytes, the cap is %d)", src.Name, ErrTooLarge, res.ContentLength, f.opts.MaxBytes)
	}
	format := src.Format
	if format == FormatUnknown {
		u, _ := url.Parse(src.Location)
		format = FormatOf(u.Path, res.Header.Get("Content-Type"))
	}
	if format == FormatUnknown {
		return nil, fmt.Errorf("%s: unknown feed format (Content-Type %q): name it with #format=jsonl, csv, xml or tsv", src.Name, res.Header.Get("Content-Type"))
	}
	ads, sum, ls, until, warns, err := f.parse(res.Body, src, format, opts, prev)
	if err != nil {
		return nil, err
	}
	next := &fetched{etag: res.Header.Get("ETag"), lastModified: res.Header.Get("Last-Modified"), sum: sum, ads: ads, lines: ls, until: until,
		warnings: warns}
	if prev != nil && prev.sum == sum {
		prev.etag, prev.lastModified = next.etag, next.lastModified
		return prev, nil
	}
	return next, nil
}

// parse reads a feed under the size cap, as read and once decompressed,
// and returns its ads, the SHA-256 of its raw bytes and, for JSON lines,
// its ads by line; the lines prev, the last read, has are not decoded
// again. until is when the ads change though the bytes do not; warns are
// what opts.Warn would have been told.
func (f *Fetcher) parse(r io.Reader, src Source, format Format, opts Options, prev *fetched) (_ []match.Ad, _ string, _ *lines, until time.Time, warns []string, _ error) {
	if format == FormatUnknown {
		return nil, "", nil, until, nil, fmt.Errorf("%s: unknown feed format: want .jsonl, .ndjson, .csv, .xml, .rss, .atom, .tsv or .txt, or #format=", src.Name)
	}
	h := sha256.New()
	raw := &capped{r: io.TeeReader(r, h), left: f.opts.MaxBytes}
	body, err := gunzipped(raw)
	if err != nil {
		return nil, "", nil, until, nil, fmt.Errorf("%s: %w", src.Name, err)
	}
	var ls *lines
	if format == FormatJSONL {
		var last *lines
		if prev != nil {
			last = prev.lines
		}
		ls = nextLines(last, opts)
	}
	inflated := &capped{r: body, left: f.opts.MaxBytes}
	warn := opts.Warn
	opts.Warn = func(w *LineError) {
		warns = append(warns, w.Error())
		if warn != nil {
			warn(w)
		}
	}
	ads, until, err := loadAgain(inflated, src.Name, format, opts, false, ls)
	if raw.over || inflated.over {
		return nil, "", nil, until, nil, fmt.Errorf("%s: %w (%d bytes)", src.Name, ErrTooLarge, f.opts.MaxBytes)
	}
	if raw.err != nil {
		return nil, "", nil, until, nil, fmt.Errorf("%s: reading: %w", src.Name, raw.err)
	}
	if err != nil {
		return nil, "", nil, until, nil, err
	}
	if ls != nil {
		ls.done(ads)
	}
	return ads, hex.EncodeToString(h.Sum(nil)), ls, until, warns, nil
}

// capped reads at most left bytes of r, and remembers whether there were
// more and the read error, which the parser would report as a bad line.
type capped struct {
	r    io.Reader
	left int64
	over bool
	err  error
}

func (c *capped) Read(b []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a feed of exactly the cap from a larger one.
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			c.over = true
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// Version is the content hash of a catalog: the same ads in the same
// order give the same version, whatever feeds they came from.
func Version(ads []match.Ad) string {
	h := sha256.New()
	var buf []byte
	for i := range ads {
		buf = appendAd(buf[:0], &ads[i])
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// appendAd writes every field of an ad, each ended by a byte no field
// holds, so that no two ads write the same bytes.
func appendAd(b []byte, a *match.Ad) []byte {
	for _, s := range [...]string{a.ID, a.Kind.String(), a.Title, a.Manufacturer, a.Model, a.Category,
		a.Description, a.GTIN, a.Currency, a.Logo, a.Landing, a.Advertiser} {
		b = append(append(b, s...), 0)
	}
	for _, k := range a.Keywords {
		b = append(append(b, k...), 1)
	}
	b = append(b, 0)
	for _, m := range a.Markets {
		b = append(append(append(b, m.Lang...), m.Country...), 1)
	}
	b = append(b, 0)
	b = append(strconv.AppendInt(b, a.PriceCents, 10), 0)
	b = append(strconv.AppendInt(b, a.BidMicros, 10), 0, 2)
	return b
}
