// Package config is the adlink server's configuration: a plain struct with
// defaults, filled from ADLINK_* environment variables and then command-line
// flags (a flag wins over the environment), and validated once at start-up
// with every problem reported together.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Config is everything the server needs to start.
type Config struct {
	// Addr is the listen address (-addr, ADLINK_ADDR).
	Addr string
	// DataDir holds the embedded state, one bbolt file (-data, ADLINK_DATA_DIR).
	DataDir string
	// RedirectURL is the seed's {redirect_url}, the base of every ad link,
	// without a trailing slash (-redirect-url, ADLINK_REDIRECT_URL). Load
	// defaults it to "http://" + Addr, with localhost for a wildcard host.
	RedirectURL string
	// Catalogs are feed files to serve (-catalog, repeatable;
	// ADLINK_CATALOG, comma-separated). None means the embedded demo catalog.
	Catalogs []string
	// PartnersFile is an optional JSON file of partners (-partners,
	// ADLINK_PARTNERS). The demo partner is always there unless the file
	// redefines its key.
	PartnersFile string
	// FetchAllowPrivate lets the page fetcher reach loopback and private
	// addresses; only the demo and the tests set it (-fetch-allow-private,
	// ADLINK_FETCH_ALLOW_PRIVATE).
	FetchAllowPrivate bool
	// TrustedProxies are the peers whose X-Forwarded-For and country header
	// are believed (-trusted-proxies, ADLINK_TRUSTED_PROXIES, comma-separated
	// CIDRs).
	TrustedProxies []netip.Prefix
	// CountryHeader is the request header a trusted proxy or CDN puts the
	// client's ISO 3166 country in, read for loc=use_geo (-country-header,
	// ADLINK_COUNTRY_HEADER).
	CountryHeader string
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Addr:          "localhost:8080",
		DataDir:       ".data",
		CountryHeader: "CF-IPCountry",
		TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("127.0.0.1/32"),
			netip.MustParsePrefix("::1/128"),
		},
	}
}

// Load starts from Default, applies the ADLINK_* variables getenv returns,
// then the flags in args, and validates the result. Every problem is in the
// returned error, one per line. Usage goes to out on -h.
func Load(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c := Default()
	var problems []error
	bad := func(format string, a ...any) { problems = append(problems, fmt.Errorf(format, a...)) }

	proxies := "127.0.0.1/32,::1/128"
	if v := getenv("ADLINK_ADDR"); v != "" {
		c.Addr = v
	}
	if v := getenv("ADLINK_DATA_DIR"); v != "" {
		c.DataDir = v
	}
	c.RedirectURL = getenv("ADLINK_REDIRECT_URL")
	c.Catalogs = splitList(getenv("ADLINK_CATALOG"))
	c.PartnersFile = getenv("ADLINK_PARTNERS")
	if v := getenv("ADLINK_FETCH_ALLOW_PRIVATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("ADLINK_FETCH_ALLOW_PRIVATE=%q: want true or false", v)
		}
		c.FetchAllowPrivate = b
	}
	if v := getenv("ADLINK_TRUSTED_PROXIES"); v != "" {
		proxies = v
	}
	if v := getenv("ADLINK_COUNTRY_HEADER"); v != "" {
		c.CountryHeader = v
	}

	fs := flag.NewFlagSet("adlink", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen `address` (ADLINK_ADDR)")
	fs.StringVar(&c.DataDir, "data", c.DataDir, "state `directory`, holds adlink.db (ADLINK_DATA_DIR)")
	fs.StringVar(&c.RedirectURL, "redirect-url", c.RedirectURL, "base `URL` of ad links; default http://<addr> (ADLINK_REDIRECT_URL)")
	fs.Var(&listFlag{list: &c.Catalogs}, "catalog", "catalog feed `file`, repeatable; none serves the embedded demo (ADLINK_CATALOG, comma-separated)")
	fs.StringVar(&c.PartnersFile, "partners", c.PartnersFile, "partners JSON `file`; the demo partner is always there (ADLINK_PARTNERS)")
	fs.BoolVar(&c.FetchAllowPrivate, "fetch-allow-private", c.FetchAllowPrivate, "let the page fetcher reach loopback and private addresses (ADLINK_FETCH_ALLOW_PRIVATE)")
	fs.StringVar(&proxies, "trusted-proxies", proxies, "comma-separated `CIDRs` whose X-Forwarded-For and country header are trusted (ADLINK_TRUSTED_PROXIES)")
	fs.StringVar(&c.CountryHeader, "country-header", c.CountryHeader, "request `header` with the client's country, from a trusted proxy (ADLINK_COUNTRY_HEADER)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		bad("unexpected arguments: %q", fs.Args())
	}

	c.TrustedProxies = nil
	for _, s := range splitList(proxies) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			bad("trusted proxy %q: want a CIDR such as 10.0.0.0/8", s)
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}
	if c.RedirectURL == "" {
		c.RedirectURL = "http://" + publicAddr(c.Addr)
	}
	c.RedirectURL = strings.TrimRight(c.RedirectURL, "/")
	problems = append(problems, c.Validate())
	if err := errors.Join(problems...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports every problem of c together, or nil.
func (c *Config) Validate() error {
	var problems []error
	bad := func(format string, a ...any) { problems = append(problems, fmt.Errorf(format, a...)) }
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("addr %q: want host:port", c.Addr)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		bad("data directory is empty")
	}
	u, err := url.Parse(c.RedirectURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		bad("redirect-url %q: want an absolute http or https URL", c.RedirectURL)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		bad("redirect-url %q: want no query, fragment or user info", c.RedirectURL)
	}
	for _, f := range c.Catalogs {
		if strings.TrimSpace(f) == "" {
			bad("catalog file name is empty")
		}
	}
	if strings.TrimSpace(c.CountryHeader) == "" {
		bad("country-header is empty")
	}
	return errors.Join(problems...)
}

// Trusted reports whether a peer address is one of the trusted proxies.
func (c *Config) Trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range c.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// publicAddr is addr as a client can reach it: a wildcard listen host
// (":8080", "0.0.0.0:8080", "[::]:8080") becomes localhost.
func publicAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // Validate reports it
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// listFlag is a repeatable flag; its first use replaces what the
// environment set.
type listFlag struct {
	list *[]string
	set  bool
}

func (l *listFlag) String() string {
	if l.list == nil {
		return ""
	}
	return strings.Join(*l.list, ",")
}

func (l *listFlag) Set(s string) error {
	if !l.set {
		*l.list, l.set = nil, true
	}
	*l.list = append(*l.list, s)
	return nil
}
