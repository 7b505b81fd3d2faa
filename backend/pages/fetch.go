package pages

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
	"github.com/temoto/robotstxt"
	"golang.org/x/net/html/charset"

	"github.com/adlink/adlink/backend/egress"
)

// Defaults of FetchOptions.
const (
	DefaultUserAgent     = "adlink-pagebot/1.0 (+https://github.com/adlink/adlink)"
	DefaultMaxBytes      = 2 << 20
	DefaultMaxRedirects  = 5
	DefaultDialTimeout   = 5 * time.Second
	DefaultTLSTimeout    = 5 * time.Second
	DefaultHeaderTimeout = 10 * time.Second
	DefaultFetchTimeout  = 15 * time.Second
	DefaultRobotsTTL     = 24 * time.Hour

	// robotsAgent is the product token robots.txt groups are matched on.
	robotsAgent    = "adlink-pagebot"
	maxRobotsBytes = 512 << 10
	maxRobotsHosts = 10000
	// unreachableRobotsTTL is how long a host whose robots.txt could not
	// be read (no connection, a 5xx, a body cut short) stays disallowed,
	// rather than RobotsTTL: one down for a moment does not fail its
	// pages' retries (DefaultRetryBackoff) for a day.
	unreachableRobotsTTL = time.Minute
)

// FetchOptions configure a Fetcher. The zero value of each field is its
// default.
type FetchOptions struct {
	// AllowPrivate turns the SSRF guard off so loopback and private
	// addresses, and ports other than 80 and 443, can be fetched. Only the
	// demo and tests set it. With the guard on, a connection to any
	// special-purpose address (loopback, private, link-local and the
	// metadata address, CGNAT, IPv4-mapped, NAT64, 6to4, ...) or another
	// port is refused after resolution, on every redirect hop.
	AllowPrivate bool
	// UserAgent is sent with every request; it names us and where to read
	// about us.
	UserAgent string
	// MaxBytes caps a page body, both as sent and after decompression.
	MaxBytes int64
	// MaxRedirects caps the redirects one fetch follows.
	MaxRedirects int
	// DialTimeout, TLSTimeout and HeaderTimeout bound connecting, the TLS
	// handshake and waiting for the response headers; Timeout bounds the
	// whole fetch, robots.txt and body included. A host's robots.txt is
	// read under half of Timeout of its own, whichever page asked first;
	// one not read by then disallows the host briefly, as one in error.
	DialTimeout   time.Duration
	TLSTimeout    time.Duration
	HeaderTimeout time.Duration
	Timeout       time.Duration
	// RobotsTTL is how long a host's robots.txt is cached.
	RobotsTTL time.Duration
	// Resolve looks up the addresses of a host; nil uses the system
	// resolver. Tests use it to make names resolve to chosen addresses.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)

	// guard adds options to the SSRF guard (tests open a port or a prefix).
	guard []ssrf.Option
	// roots, when set, are the certificates TLS trusts (tests' servers).
	roots *x509.CertPool
	// robotsTimeout bounds one read of a host's robots.txt; zero is half
	// of Timeout, so that a page waiting for it gets its verdict and has
	// time left for itself. Tests shorten it.
	robotsTimeout time.Duration
}

func (o *FetchOptions) defaults() {
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.TLSTimeout <= 0 {
		o.TLSTimeout = DefaultTLSTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultFetchTimeout
	}
	if o.RobotsTTL <= 0 {
		o.RobotsTTL = DefaultRobotsTTL
	}
	if o.robotsTimeout <= 0 {
		o.robotsTimeout = o.Timeout / 2
	}
	if o.Resolve == nil {
		o.Resolve = egress.SystemResolver
	}
}

// FetchError is a page that could not be fetched. Reason is short and safe
// to show to clients; it is what a failed page's record says.
type FetchError struct {
	Reason string
	Err    error
}

// Error returns the reason and the cause.
func (e *FetchError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

// Unwrap returns the cause.
func (e *FetchError) Unwrap() error { return e.Err }

// Errors a fetch can end with, wrapped in a *FetchError.
var (
	ErrProhibitedAddress = errors.New("address not allowed")
	ErrTooLarge          = errors.New("page too large")
	ErrNotHTML           = errors.New("not an HTML page")
	ErrRobots            = errors.New("robots.txt disallows fetching")
	ErrRedirects         = errors.New("too many redirects")
	ErrRedirectScheme    = errors.New("redirect to a scheme other than http or https")
	ErrRedirectHost      = errors.New("redirect to a host name IDNA refuses")
	ErrHTTPStatus        = errors.New("unexpected HTTP status")
	ErrTimeout           = errors.New("fetch timed out")
	ErrOffSite           = errors.New("off the site's domains")
	ErrHostNotFound      = errors.New("host not found")
	// ErrHostUnreachable comes with ErrRobots: a host that took no
	// connection for its robots.txt is, as RFC 9309 says, not fetched.
	ErrHostUnreachable = errors.New("host unreachable")
	// ErrRobotsUnavailable comes with ErrRobots where no rule said so:
	// robots.txt answered a 5xx, was cut short, or its host took the
	// connection and then failed or did not answer in time; RFC 9309
	// reads that as disallowing everything until it is read again.
	ErrRobotsUnavailable = errors.New("no rules read: a 5xx, a body cut short, or a connection that failed or did not answer in time")
)

// HostFilter says whether a fetch may go to host (lower case, no port):
// the page's own and every redirect's. Nil allows every host.
type HostFilter func(host string) bool

// hostsKey carries a fetch's HostFilter to checkRedirect, which the
// shared client calls with the request's context.
type hostsKey struct{}

// Document is a fetched page, its body decoded to UTF-8.
type Document struct {
	// URL is where the page was found, after redirects.
	URL  string
	HTML string
}

// Fetcher fetches pages for analysis, safely: every connection, redirects
// included, goes through the SSRF guard on the resolved address; redirects,
// time and body size are capped; only HTML is accepted; robots.txt is
// honoured. It is safe for concurrent use.
type Fetcher struct {
	o      FetchOptions
	client *http.Client
	tr     *http.Transport

	mu     sync.Mutex
	robots map[string]*robotsEntry
	now    func() time.Time

	// hostCtx is what a robots.txt read runs under: the host's, not the
	// page's that started it, so pages waiting for it are not failed by
	// the first one giving up. Close cancels it and waits for the reads.
	hostCtx  context.Context
	stop     context.CancelFunc
	fetching sync.WaitGroup
	closed   bool // under mu: no read starts
}

// errFetcherClosed fails a fetch that would start a robots.txt read after
// Close.
var errFetcherClosed = errors.New("the page fetcher is closed")

// robotsUnread is why a host's robots.txt could not be read, so that
// everything on the host is disallowed for a while (RFC 9309).
type robotsUnread int

const (
	robotsRead        robotsUnread = iota
	robotsUnreachable              // the host took no connection
	robotsServerError              // a 5xx, or a body cut short
	// robotsRefusedHop: the host's robots.txt redirects to an address or
	// a URL the guard refuses. The refusal (e.err) is the host's answer
	// for as long as a robots.txt read, so that its pages do not walk the
	// chain again, each of them up to six requests.
	robotsRefusedHop
)

type robotsEntry struct {
	ready chan struct{}
	data  *robotstxt.RobotsData
	// why robots.txt disallows everything when it could not be read: the
	// host took no connection, which the page's failure says rather than
	// "robots.txt", or it answered with an error.
	why     robotsUnread
	err     error
	expires time.Time
}

// NewFetcher returns a Fetcher. Each request has a connection of its own,
// closed with it; Close the Fetcher once done all the same.
func NewFetcher(o FetchOptions) *Fetcher {
	o.defaults()
	f := &Fetcher{o: o, robots: make(map[string]*robotsEntry), now: time.Now}
	f.hostCtx, f.stop = context.WithCancel(context.Background())
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		// Control runs on the exact address dialed, after resolution, so
		// neither DNS rebinding nor a redirect can reach a refused range.
		d.Control = egress.New(o.guard...).Control
	}
	f.tr = &http.Transport{
		Proxy: nil, // a proxy would hide the target's address from the guard
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return f.dial(ctx, d, network, addr)
		},
		// HTTP/1.1 only, one connection per request: then the cap on what
		// a connection reads (connCap) caps each request, whatever its
		// framing. HTTP/2 would let a server send frames that carry no
		// body (unknown types, padding, pings) without end, and net/http
		// logs a line for each frame of an unknown type.
		Protocols:              http1Only(),
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    o.TLSTimeout,
		ResponseHeaderTimeout:  o.HeaderTimeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		DisableCompression:     true, // we ask for gzip and cap what it decodes to
	}
	if o.roots != nil {
		f.tr.TLSClientConfig = &tls.Config{RootCAs: o.roots}
	}
	f.client = &http.Client{
		Transport:     f.tr,
		Timeout:       o.Timeout,
		CheckRedirect: f.checkRedirect,
	}
	return f
}

// Close ends the robots.txt reads under way and releases what the
// Fetcher's transport holds: with no keep-alive, nothing between requests.
func (f *Fetcher) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.stop()
	f.fetching.Wait()
	f.tr.CloseIdleConnections()
}

func (f *Fetcher) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	c, err := egress.Dial(ctx, d, f.o.Resolve, network, addr)
	if err != nil {
		return nil, err
	}
	return &cappedConn{Conn: c, left: f.connCap()}, nil
}

// maxHeaderBytes caps a response's header, 1xx responses' included.
const maxHeaderBytes = 64 << 10

// connCap is the most one connection, so one request, reads: the body's
// cap, a quarter more for chunk and TLS framing, the header's cap and
// room for the TLS handshake. A page well under the body's cap has room
// to spare; one near it sent in chunks of a few bytes is too large.
func (f *Fetcher) connCap() int64 {
	return f.o.MaxBytes + f.o.MaxBytes/4 + maxHeaderBytes + 64<<10
}

func http1Only() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	return &p
}

// errConnCap is the error of a connection that read past connCap.
var errConnCap = fmt.Errorf("the connection read more than a page may: %w", ErrTooLarge)

// cappedConn is a connection that fails once it has read left bytes.
// The transport reads a connection from one goroutine at a time.
type cappedConn struct {
	net.Conn
	left int64
}

func (c *cappedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errConnCap
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if err := f.checkHop(req, via); err != nil {
		return err
	}
	return f.checkRobots(req.Context(), req.URL)
}

// checkHop refuses a page's redirect past the cap, to another scheme, to
// credentials or off the fetch's HostFilter.
func (f *Fetcher) checkHop(req *http.Request, via []*http.Request) error {
	if len(via) > f.o.MaxRedirects {
		return ErrRedirects
	}
	if err := checkScheme(req.URL); err != nil {
		return err
	}
	if err := inALabels(req.URL); err != nil {
		return err
	}
	// Checked before robots.txt, so a host off the site is not contacted.
	if hosts, _ := req.Context().Value(hostsKey{}).(HostFilter); hosts != nil && !hosts(hostOf(req.URL)) {
		return &FetchError{Reason: "redirected off the site's domains", Err: ErrOffSite}
	}
	return nil
}

// robotsMaxRedirects is how many redirects of robots.txt are followed in
// a row: RFC 9309 (2.3.1.2) asks for at least five, across authorities.
const robotsMaxRedirects = 5

// errRobotsRedirects ends a robots.txt fetch that redirected more than
// robotsMaxRedirects times: no robots.txt was reached.
var errRobotsRedirects = errors.New("robots.txt redirected more than five times")

// checkRobotsHop refuses a robots.txt redirect past robotsMaxRedirects,
// to another scheme or to credentials. Unlike a page's, it may leave the
// site's domains (RFC 9309 has crawlers follow example.com's robots.txt
// to www.example.com or to a CDN); its connection passes the same guard.
func checkRobotsHop(req *http.Request, via []*http.Request) error {
	if len(via) > robotsMaxRedirects {
		return errRobotsRedirects
	}
	if err := checkScheme(req.URL); err != nil {
		return err
	}
	return inALabels(req.URL)
}

// checkScheme refuses a redirect to a scheme other than http and https,
// or one that carries credentials.
func checkScheme(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" || u.User != nil {
		return ErrRedirectScheme
	}
	return nil
}

// inALabels writes the internationalised host of a redirect's URL u in
// A-labels, as hostOf reads it, so that the host the hop is checked and
// its robots.txt cached under is the one it asks for: net/http would dial
// "BÜCHER.example" as bücher.example but name it xn--BCHER-2pa.example in
// the Host header, another name. A host IDNA refuses is refused.
func inALabels(u *url.URL) error {
	h := strings.ToLower(u.Hostname())
	a, ok := asciiHost(h)
	switch {
	case !ok:
		return ErrRedirectHost
	case a == h:
		return nil
	case u.Port() != "":
		u.Host = net.JoinHostPort(a, u.Port())
	default:
		u.Host = a
	}
	return nil
}

// hostOf returns u's host name as HostFilter takes it: an
// internationalised name in A-labels when IDNA accepts it.
func hostOf(u *url.URL) string {
	h, _ := asciiHost(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."))
	return h
}

// Fetch gets the page at pageURL (a canonical URL) and returns its HTML as
// UTF-8. The page's host and every redirect's must pass hosts, when not
// nil. Every failure is a *FetchError.
func (f *Fetcher) Fetch(ctx context.Context, pageURL string, hosts HostFilter) (*Document, error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	u, err := url.Parse(pageURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, &FetchError{Reason: "invalid page URL", Err: err}
	}
	if hosts != nil {
		if !hosts(hostOf(u)) {
			return nil, &FetchError{Reason: "page is not on the site's domains", Err: ErrOffSite}
		}
		ctx = context.WithValue(ctx, hostsKey{}, hosts)
	}
	if err := f.checkRobots(ctx, u); err != nil {
		return nil, classify(ctx, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pageURL, nil)
	if err != nil {
		return nil, &FetchError{Reason: "invalid page URL", Err: err}
	}
	f.header(req)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &FetchError{Reason: "HTTP status " + strconv.Itoa(resp.StatusCode), Err: ErrHTTPStatus}
	}
	// A type the server declares is judged before the body is read, so
	// a file that is no page is not downloaded.
	ctype := resp.Header.Get("Content-Type")
	if ctype != "" {
		if err := checkHTML(ctype); err != nil {
			return nil, err
		}
	}
	body, err := f.readBody(resp, f.o.MaxBytes)
	if err != nil {
		return nil, classify(ctx, err)
	}
	if ctype == "" {
		ctype = http.DetectContentType(body)
		if err := checkHTML(ctype); err != nil {
			return nil, err
		}
	}
	return &Document{URL: resp.Request.URL.String(), HTML: decodeHTML(body, ctype)}, nil
}

// maxTypeBytes bounds the media type a failure's reason names: the server
// chooses it, and the reason is stored and shown to clients.
const maxTypeBytes = 64

// checkHTML returns ErrNotHTML unless ctype is HTML or XHTML.
func checkHTML(ctype string) error {
	mt, _, _ := mime.ParseMediaType(ctype)
	if mt == "text/html" || mt == "application/xhtml+xml" {
		return nil
	}
	if mt == "" || len(mt) > maxTypeBytes {
		mt = "unknown"
	}
	return &FetchError{Reason: "not HTML (" + mt + ")", Err: ErrNotHTML}
}

func (f *Fetcher) header(req *http.Request) {
	req.Header.Set("User-Agent", f.o.UserAgent)
	req.Header.Set("Accept-Encoding", "gzip")
}

// readBody reads at most max bytes of the body, both as sent and once
// decoded; more is ErrTooLarge, returned with what was decoded up to the
// cap (robots.txt is read that far). The cap on the decoded bytes stops a
// small gzip bomb from expanding past it; the cap on the bytes sent stops
// a body that decodes to next to nothing (endless empty gzip members),
// which would otherwise be downloaded until the timeout.
func (f *Fetcher) readBody(resp *http.Response, max int64) ([]byte, error) {
	sent := &io.LimitedReader{R: resp.Body, N: max + 1}
	var r io.Reader = sent
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(sent)
		if err != nil {
			return nil, fmt.Errorf("bad gzip body: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, &FetchError{Reason: "unsupported content encoding", Err: ErrNotHTML}
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, max+1))
	switch {
	case n > max:
		return buf.Bytes()[:max], ErrTooLarge
	case sent.N <= 0:
		// Cut off as sent: the decoder's error is the cut's.
		return buf.Bytes(), ErrTooLarge
	case err != nil:
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeHTML converts body to UTF-8 from the charset the header, a BOM or a
// <meta> names; without any, or when a <meta> names Latin-1 or windows-1252,
// a body that is valid UTF-8 stays as is, and anything else is read as
// windows-1252 (a superset of Latin-1), as browsers do.
func decodeHTML(body []byte, ctype string) string {
	enc, name, certain := charset.DetermineEncoding(body, ctype)
	// Without a byte order mark or a charset in Content-Type, the guess
	// looks only at the first 1,024 bytes and defaults to windows-1252: a
	// UTF-8 page whose head is ASCII would come out as mojibake. Latin-1
	// text is almost never valid UTF-8, so a body that is stays UTF-8; a
	// <meta> naming any other charset (Shift_JIS, ISO-2022-JP) is obeyed.
	if !certain && name == "windows-1252" && utf8.Valid(body) {
		name = "utf-8"
	}
	if name != "utf-8" && enc != nil {
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			body = out
		}
	}
	s := string(body)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// classify turns a fetch error into a *FetchError with a client-safe reason.
func classify(ctx context.Context, err error) error {
	var fe *FetchError
	switch {
	case errors.As(err, &fe):
		return fe
	case egress.Refused(err):
		return &FetchError{Reason: "address not allowed", Err: errors.Join(ErrProhibitedAddress, err)}
	case errors.Is(err, ErrHostUnreachable):
		return &FetchError{Reason: "host unreachable", Err: err}
	case errors.Is(err, ErrRobotsUnavailable):
		return &FetchError{Reason: "robots.txt unavailable", Err: err}
	case errors.Is(err, ErrRobots):
		return &FetchError{Reason: "robots.txt disallows fetching", Err: err}
	case errors.Is(err, ErrRedirects):
		return &FetchError{Reason: "too many redirects", Err: err}
	case errors.Is(err, ErrRedirectScheme), errors.Is(err, ErrRedirectHost):
		return &FetchError{Reason: "redirect to a disallowed URL", Err: err}
	case errors.Is(err, ErrTooLarge):
		return &FetchError{Reason: "page too large", Err: err}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &FetchError{Reason: "fetch timed out", Err: errors.Join(ErrTimeout, err)}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &FetchError{Reason: "fetch timed out", Err: errors.Join(ErrTimeout, err)}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &FetchError{Reason: "host not found", Err: errors.Join(ErrHostNotFound, err)}
	}
	return &FetchError{Reason: "fetch failed", Err: err}
}

// checkRobots returns ErrRobots when the host's robots.txt disallows u for
// us, and the guard's error when robots.txt may not be fetched at all.
func (f *Fetcher) checkRobots(ctx context.Context, u *url.URL) error {
	// Written back through url.URL, so an IPv6 zone keeps its escape.
	key := strings.ToLower((&url.URL{Scheme: u.Scheme, Host: u.Host}).String())
	f.mu.Lock()
	e := f.robots[key]
	if e != nil {
		select {
		case <-e.ready:
			if f.now().After(e.expires) {
				e = nil
			}
		default:
		}
	}
	if e == nil {
		if f.closed {
			f.mu.Unlock()
			return errFetcherClosed
		}
		if len(f.robots) >= maxRobotsHosts {
			f.evictRobots()
		}
		e = &robotsEntry{ready: make(chan struct{})}
		f.robots[key] = e
		f.fetching.Add(1)
		go f.readRobots(e, key)
	}
	f.mu.Unlock()
	// Each page waits as long as its own fetch may; the read goes on
	// for the others.
	select {
	case <-e.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if e.err != nil {
		return e.err
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if !e.data.TestAgent(p, robotsAgent) {
		switch e.why {
		case robotsUnreachable:
			return errors.Join(ErrHostUnreachable, ErrRobots)
		case robotsServerError:
			return errors.Join(ErrRobotsUnavailable, ErrRobots)
		}
		return ErrRobots
	}
	return nil
}

// readRobots reads origin's robots.txt into e under its own timeout, as
// the host's read rather than any one page's, and closes e.ready.
func (f *Fetcher) readRobots(e *robotsEntry, origin string) {
	defer f.fetching.Done()
	// In a goroutine of its own, a panic (in the parser of what the host
	// sent) would end the process: it fails the pages waiting instead,
	// uncached, as a page's own analysis panicking fails that page.
	defer func() {
		if r := recover(); r != nil {
			e.data, e.why, e.expires = nil, robotsRead, time.Time{}
			e.err = &FetchError{Reason: "robots.txt could not be read", Err: fmt.Errorf("reading robots.txt panicked: %v", r)}
			close(e.ready)
		}
	}()
	ctx, cancel := context.WithTimeout(f.hostCtx, f.o.robotsTimeout)
	defer cancel()
	e.data, e.why, e.err = f.fetchRobots(ctx, origin)
	e.expires = f.now().Add(f.o.RobotsTTL)
	switch {
	case e.why == robotsRefusedHop:
	case e.err != nil:
		// The page's own address refused (no request was sent) or a
		// read ended by Close is not cached.
		e.expires = time.Time{}
	case e.why != robotsRead:
		e.expires = f.now().Add(min(unreachableRobotsTTL, f.o.RobotsTTL))
	}
	close(e.ready)
}

// evictRobots drops expired entries, or all finished ones when none are.
func (f *Fetcher) evictRobots() {
	now := f.now()
	n := len(f.robots)
	for k, e := range f.robots {
		select {
		case <-e.ready:
			if now.After(e.expires) {
				delete(f.robots, k)
			}
		default:
		}
	}
	if len(f.robots) < n {
		return
	}
	for k, e := range f.robots {
		select {
		case <-e.ready:
			delete(f.robots, k)
		default:
		}
	}
}

// fetchRobots gets origin's robots.txt. As RFC 9309 says, a 4xx allows
// everything, and so does a chain of more than five redirects; a 5xx or an
// unreachable host disallows everything (why says which). An address the
// guard refuses, on the first request or a redirect, is an error, so the
// page fails for that reason; on a redirect, why is robotsRefusedHop.
func (f *Fetcher) fetchRobots(ctx context.Context, origin string) (data *robotstxt.RobotsData, why robotsUnread, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return nil, robotsRead, err
	}
	f.header(req)
	// Robots redirects go through the same guarded transport as a page,
	// under the fetch's timeouts, but without robots checks of their own.
	redirected := false
	c := *f.client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		redirected = true
		return checkRobotsHop(req, via)
	}
	resp, err := c.Do(req)
	if errors.Is(err, errRobotsRedirects) {
		// No robots.txt reached within five redirects is robots.txt
		// unavailable, as a 4xx: allow all.
		data, err := robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
		return data, robotsRead, err
	}
	if err != nil {
		// A refused address or scheme is the page's failure, not read as
		// robots.txt disallowing everything as an unreachable host is;
		// so is the page's own host unknown, but not a redirect's, and a
		// read ended by Close. One past its own timeout is a host that
		// did not answer.
		ce := classify(ctx, err)
		if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ce, ErrHostNotFound) && !redirected {
			return nil, robotsRead, ce
		}
		if errors.Is(ce, ErrProhibitedAddress) || errors.Is(ce, ErrRedirectScheme) || errors.Is(ce, ErrRedirectHost) {
			if redirected {
				return nil, robotsRefusedHop, ce
			}
			return nil, robotsRead, ce
		}
		// Only a page's host that took no connection is unreachable; one
		// that did and then failed (TLS, a timeout, headers past the cap)
		// or redirected to a host that fails is in error, said as
		// robots.txt.
		why := robotsServerError
		if op := (*net.OpError)(nil); !redirected && errors.As(err, &op) && op.Op == "dial" {
			why = robotsUnreachable
		}
		data, err := robotstxt.FromStatusAndBytes(http.StatusServiceUnavailable, nil)
		return data, why, err
	}
	defer resp.Body.Close()
	body, err := f.readBody(resp, maxRobotsBytes)
	// A body cut short by the connection's cap has no rules to read: in
	// error, not a robots.txt allowing everything.
	if err != nil && (!errors.Is(err, ErrTooLarge) || body == nil) {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, robotsRead, classify(ctx, err)
		}
		data, err := robotstxt.FromStatusAndBytes(http.StatusServiceUnavailable, nil)
		return data, robotsServerError, err
	}
	data, err = robotstxt.FromStatusAndBytes(resp.StatusCode, body)
	if err != nil {
		// An unparsable robots.txt is read as allowing everything.
		data, err = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
	}
	if resp.StatusCode >= 500 {
		return data, robotsServerError, err
	}
	return data, robotsRead, err
}
