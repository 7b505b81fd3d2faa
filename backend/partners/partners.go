// Package partners knows the API keys adlink accepts and the sites each key
// may serve ads on.
//
// The Registry interface is all the handlers use, so a registry kept in Redis
// or a database can replace the static one without touching them.
package partners

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-json"
	"golang.org/x/net/idna"
)

// ErrUnknownKey means no partner has the API key (the API answers 401).
var ErrUnknownKey = errors.New("unknown api_key")

// ErrForeignSite means the key's partner has no site with the site id (the
// API answers 403).
var ErrForeignSite = errors.New("site_id does not belong to the api_key")

// Registry resolves a request's api_key and site_id.
type Registry interface {
	// Site returns the site siteID of the partner with apiKey, ErrUnknownKey
	// when no partner has the key, or ErrForeignSite when the partner has
	// no such site.
	Site(ctx context.Context, apiKey, siteID string) (Site, error)
}

// Partner is one publisher account: an API key and the sites it serves.
type Partner struct {
	APIKey string `json:"api_key"`
	Name   string `json:"name,omitempty"`
	Sites  []Site `json:"sites"`
	// Limits are the partner's own rate limits; those left zero (all, for
	// the demo partner) are the server's defaults.
	Limits Limits `json:"limits,omitzero"`
	// ReportToken is the secret that reads the partner's reports;
	// ReportTokenSHA256 (hex) may stand for it, so the file need not hold
	// the secret (backend/accounts).
	ReportToken       string `json:"report_token,omitempty"`
	ReportTokenSHA256 string `json:"report_token_sha256,omitempty"`
}

// Limits are a partner's rate limits. Each zero field means the server's
// configured default.
type Limits struct {
	// RequestsPerSecond is the sustained rate of /v2 requests with the
	// partner's api_key; Burst is how many may come at once.
	RequestsPerSecond float64 `json:"requests_per_second,omitempty"`
	Burst             int     `json:"burst,omitempty"`
	// PagesPerSecond is the sustained rate at which each of the partner's
	// sites may queue unseen pages for analysis; PageBurst is how many at
	// once.
	PagesPerSecond float64 `json:"pages_per_second,omitempty"`
	PageBurst      int     `json:"page_burst,omitempty"`
}

// Or returns l with each zero field taken from def.
func (l Limits) Or(def Limits) Limits {
	if l.RequestsPerSecond == 0 {
		l.RequestsPerSecond = def.RequestsPerSecond
	}
	if l.Burst == 0 {
		l.Burst = def.Burst
	}
	if l.PagesPerSecond == 0 {
		l.PagesPerSecond = def.PagesPerSecond
	}
	if l.PageBurst == 0 {
		l.PageBurst = def.PageBurst
	}
	return l
}

// LimitSource is a Registry that also knows each partner's rate limits, as
// Static does.
type LimitSource interface {
	// Limits returns the limits of the partner with apiKey (zero fields
	// for the server's defaults), or ErrUnknownKey.
	Limits(ctx context.Context, apiKey string) (Limits, error)
}

// Site is a publisher's site and the host names its pages live on.
type Site struct {
	ID string `json:"id"`
	// Domains are host names; a page is the site's when its host is one of
	// them or below one of them.
	Domains []string `json:"domains"`
}

// HasHost reports whether host (no port, any case) is one of the site's
// domains or a subdomain of one.
func (s Site) HasHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, d := range s.Domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// Demo is the partner "make run" and the README use: api_key=demo,
// site_id=demo, pages on localhost and 127.0.0.1. The server has it only
// when asked to (-demo).
func Demo() Partner {
	return Partner{
		APIKey:      "demo",
		Name:        "adlink demo",
		Sites:       []Site{{ID: "demo", Domains: []string{"localhost", "127.0.0.1"}}},
		ReportToken: DemoReportToken,
	}
}

// DemoReportToken reads the demo partner's reports. It is public, as the
// demo partner is.
const DemoReportToken = "demo-partner-report"

// Static is a Registry held in memory, safe for concurrent use.
type Static struct {
	byKey  map[string]map[string]Site
	limits map[string]Limits
}

var (
	_ Registry    = (*Static)(nil)
	_ LimitSource = (*Static)(nil)
)

// NewStatic checks ps (keys and site ids non-empty and unique, at least one
// domain per site, no negative limit) and returns a registry of them.
func NewStatic(ps []Partner) (*Static, error) {
	s := &Static{byKey: make(map[string]map[string]Site, len(ps)), limits: make(map[string]Limits, len(ps))}
	var problems []error
	for i, p := range ps {
		if p.APIKey == "" {
			problems = append(problems, fmt.Errorf("partner %d: api_key is empty", i))
			continue
		}
		if _, dup := s.byKey[p.APIKey]; dup {
			problems = append(problems, fmt.Errorf("partner %d: api_key %q twice", i, p.APIKey))
			continue
		}
		if l := p.Limits; l.RequestsPerSecond < 0 || l.Burst < 0 || l.PagesPerSecond < 0 || l.PageBurst < 0 {
			problems = append(problems, fmt.Errorf("partner %q: limits must not be negative", p.APIKey))
		}
		s.limits[p.APIKey] = p.Limits
		sites := make(map[string]Site, len(p.Sites))
		for j, site := range p.Sites {
			if site.ID == "" {
				problems = append(problems, fmt.Errorf("partner %q site %d: id is empty", p.APIKey, j))
				continue
			}
			if _, dup := sites[site.ID]; dup {
				problems = append(problems, fmt.Errorf("partner %q: site %q twice", p.APIKey, site.ID))
				continue
			}
			if len(site.Domains) == 0 {
				problems = append(problems, fmt.Errorf("partner %q site %q: no domains", p.APIKey, site.ID))
			}
			domains := make([]string, len(site.Domains))
			for k, d := range site.Domains {
				domains[k] = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
				if domains[k] == "" {
					problems = append(problems, fmt.Errorf("partner %q site %q: empty domain", p.APIKey, site.ID))
				} else if err := checkIDNA(domains[k]); err != nil {
					problems = append(problems, fmt.Errorf("partner %q site %q: domain %q: %w", p.APIKey, site.ID, d, err))
				}
			}
			sites[site.ID] = Site{ID: site.ID, Domains: domains}
		}
		s.byKey[p.APIKey] = sites
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return s, nil
}

// checkIDNA refuses an internationalised domain that IDNA refuses: pages
// are matched to domains in A-labels (as pages.CheckDomain does), so it
// would never match one. An ASCII domain is matched as it is, so it must
// be what a page URL's host can be (as pages.validHost has it): a URL, a
// port or a wildcard pasted in (https://blog.example/, blog.example:8080,
// *.blog.example) would match no page either.
func checkIDNA(domain string) error {
	for i := 0; i < len(domain); i++ {
		if domain[i] >= utf8.RuneSelf {
			if _, err := idna.Lookup.ToASCII(domain); err != nil {
				return fmt.Errorf("IDNA refuses it, so no page would match it (%v)", err)
			}
			return nil
		}
	}
	if strings.Contains(domain, ":") && net.ParseIP(domain) != nil {
		return nil
	}
	for i := 0; i < len(domain); i++ {
		switch c := domain[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		default:
			return errors.New("not a host name, so no page would match it: give the host alone (blog.example), without scheme, port, path or wildcard; its subdomains match too")
		}
	}
	return nil
}

// Site implements Registry.
func (s *Static) Site(_ context.Context, apiKey, siteID string) (Site, error) {
	sites, ok := s.byKey[apiKey]
	if !ok {
		return Site{}, ErrUnknownKey
	}
	site, ok := sites[siteID]
	if !ok {
		return Site{}, ErrForeignSite
	}
	return site, nil
}

// Limits implements LimitSource.
func (s *Static) Limits(_ context.Context, apiKey string) (Limits, error) {
	l, ok := s.limits[apiKey]
	if !ok {
		return Limits{}, ErrUnknownKey
	}
	return l, nil
}

// WithDemo returns ps and then the Demo partner, or ps alone when one of
// them has the demo's key and so stands in for it. The demo comes last so
// that NewStatic's problems number a file's partners as the file has them.
func WithDemo(ps []Partner) []Partner {
	demo := Demo()
	if slices.ContainsFunc(ps, func(p Partner) bool { return p.APIKey == demo.APIKey }) {
		return ps
	}
	return append(slices.Clip(ps), demo)
}

// Load reads the partners of a JSON file, {"partners":[...]}.
func Load(path string) ([]Partner, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse reads the partners of the JSON b, {"partners":[...]}, of the file
// path, which its errors name; unknown fields are errors, and so is a
// file without the list ({}, null), which is more likely a template's
// missing value than a wish to list none.
func Parse(path string, b []byte) ([]Partner, error) {
	var file struct {
		Partners *[]Partner `json:"partners"`
	}
	if err := DecodeFile(b, &file, `{"partners":[...]}`); err != nil {
		return nil, fmt.Errorf("partners file %s: %w", path, err)
	}
	if file.Partners == nil {
		return nil, fmt.Errorf(`partners file %s: no "partners" list; want {"partners":[...]}`, path)
	}
	return *file.Partners, nil
}

// DecodeFile decodes b, the bytes of an accounts file (partners,
// advertisers) holding one JSON object of the shape want, into v; unknown
// fields are errors. An empty file, or one with more after the object, is
// refused rather than read as none or as its first object: it is most
// likely a file being written or two files run together.
func DecodeFile(b []byte, v any, want string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("empty; want %s", want)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if off := dec.InputOffset(); off < int64(len(b)) && len(bytes.TrimSpace(b[off:])) > 0 {
		return fmt.Errorf("more after the object that ends at byte %d; want one %s", off, want)
	}
	return nil
}
