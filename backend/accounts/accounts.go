// Package accounts knows who may read which report, and what each
// advertiser may spend a day. A partner (an api_key of the partners file)
// reads its own sites' traffic; an advertiser (of the advertisers file,
// by the id the catalog gives it) reads its own ads'. Each has a secret
// report token, given in the files as the token or as its SHA-256.
package accounts

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"
	// The zones of the advertisers' budgets, on a host without a zone
	// database too.
	_ "time/tzdata"

	"github.com/adlink/adlink/backend/partners"
)

// Kind is whose an account is.
type Kind string

// The kinds of account. The operator reads everyone's reports; it has
// no token, only the data directory (adlink report).
const (
	Partner    Kind = "partner"
	Advertiser Kind = "advertiser"
	Operator   Kind = "operator"
)

// Account is who a report token belongs to: a partner by its api_key, or
// an advertiser by its id.
type Account struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"`
}

// Pacing is how an advertiser's daily budget is spent.
type Pacing string

// The pacings: as fast as readers click (the default), or spread evenly
// over the advertiser's day.
const (
	ASAP Pacing = "asap"
	Even Pacing = "even"
)

// AdvertiserAccount is one entry of the advertisers file.
type AdvertiserAccount struct {
	// ID is the advertiser as the catalog names it ("handy-bestkauf.de").
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// ReportToken is the secret that reads the advertiser's reports;
	// ReportTokenSHA256 may stand for it (hex), so the file need not hold
	// the secret.
	ReportToken       string `json:"report_token,omitempty"`
	ReportTokenSHA256 string `json:"report_token_sha256,omitempty"`
	// DailyBudget is what the advertiser's billable clicks may cost per
	// day in Timezone, a decimal ("25.00") in Currency; empty is no budget.
	DailyBudget string `json:"daily_budget,omitempty"`
	Currency    string `json:"currency,omitempty"`
	// Pacing is asap (default) or even.
	Pacing Pacing `json:"pacing,omitempty"`
	// Timezone is the IANA time zone ("America/Los_Angeles") whose
	// calendar days the budget counts; empty is UTC.
	Timezone string `json:"timezone,omitempty"`
	// ClickIDParam, when set, is the query parameter of the landing URL
	// that carries the id of the click that led there.
	ClickIDParam string `json:"click_id_param,omitempty"`
}

// Budget is an advertiser's daily budget.
type Budget struct {
	// DailyMicros is the budget in millionths of Currency; 0 is none.
	DailyMicros int64
	Currency    string
	Pacing      Pacing
	// Zone is the IANA time zone of the budget's days; "" is UTC. Its
	// location is clicks.Zone's.
	Zone string
}

// LoadAdvertisers reads the advertisers of a JSON file,
// {"advertisers":[...]}; unknown fields are errors.
func LoadAdvertisers(path string) ([]AdvertiserAccount, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseAdvertisers(path, b)
}

// ParseAdvertisers reads the advertisers of the JSON b,
// {"advertisers":[...]}, of the file path, which its errors name; unknown
// fields are errors, and so is a file without the list ({}, null): read
// as none, it would lift every budget.
func ParseAdvertisers(path string, b []byte) ([]AdvertiserAccount, error) {
	var file struct {
		Advertisers *[]AdvertiserAccount `json:"advertisers"`
	}
	if err := partners.DecodeFile(b, &file, `{"advertisers":[...]}`); err != nil {
		return nil, fmt.Errorf("advertisers file %s: %w", path, err)
	}
	if file.Advertisers == nil {
		return nil, fmt.Errorf(`advertisers file %s: no "advertisers" list; want {"advertisers":[...]}`, path)
	}
	return *file.Advertisers, nil
}

// Book holds the accounts' token hashes and the advertisers' budgets;
// safe for concurrent use once made.
type Book struct {
	tokens  []tokenHash
	names   map[Account]string
	budgets map[string]Budget
	params  map[string]string
}

type tokenHash struct {
	sum [sha256.Size]byte
	acc Account
}

// MinTokenBytes is the shortest report token a file may give.
const MinTokenBytes = 16

// New checks the partners' and advertisers' accounts and returns their
// book. Every problem is reported together: an empty or repeated id, a
// token shorter than MinTokenBytes, a token given twice (to one account or
// two), a token hash that is not 64 hex digits, a bad budget or pacing.
// An account without a token reads no report.
func New(ps []partners.Partner, ads []AdvertiserAccount) (*Book, error) {
	b := &Book{names: map[Account]string{}, budgets: map[string]Budget{}, params: map[string]string{}}
	var problems []error
	seen := map[[sha256.Size]byte]bool{}
	addToken := func(acc Account, token, hash string) {
		var sum [sha256.Size]byte
		switch {
		case token != "" && hash != "":
			problems = append(problems, fmt.Errorf("%s %q: give report_token or report_token_sha256, not both", acc.Kind, acc.ID))
			return
		case token != "":
			if len(token) < MinTokenBytes {
				problems = append(problems, fmt.Errorf("%s %q: report_token of %d bytes; want at least %d", acc.Kind, acc.ID, len(token), MinTokenBytes))
				return
			}
			if !sendable(token) {
				problems = append(problems, fmt.Errorf("%s %q: report_token has white space at an end (a file's newline?) or a control character, which no Authorization header carries", acc.Kind, acc.ID))
				return
			}
			sum = sha256.Sum256([]byte(token))
		case hash != "":
			h, err := hex.DecodeString(hash)
			if err != nil || len(h) != sha256.Size {
				problems = append(problems, fmt.Errorf("%s %q: report_token_sha256 must be 64 hex digits", acc.Kind, acc.ID))
				return
			}
			copy(sum[:], h)
		default:
			return
		}
		if seen[sum] {
			problems = append(problems, fmt.Errorf("%s %q: its report token is another account's too", acc.Kind, acc.ID))
			return
		}
		seen[sum] = true
		b.tokens = append(b.tokens, tokenHash{sum: sum, acc: acc})
	}
	for _, p := range ps {
		acc := Account{Kind: Partner, ID: p.APIKey}
		b.names[acc] = p.Name
		addToken(acc, p.ReportToken, p.ReportTokenSHA256)
	}
	for i, a := range ads {
		if a.ID == "" {
			problems = append(problems, fmt.Errorf("advertiser %d: id is empty", i))
			continue
		}
		acc := Account{Kind: Advertiser, ID: strings.ToLower(a.ID)}
		if _, dup := b.names[acc]; dup {
			problems = append(problems, fmt.Errorf("advertiser %q twice", a.ID))
			continue
		}
		b.names[acc] = a.Name
		addToken(acc, a.ReportToken, a.ReportTokenSHA256)
		if a.ClickIDParam != "" {
			if !paramName(a.ClickIDParam) {
				problems = append(problems, fmt.Errorf("advertiser %q: click_id_param %q: want a query parameter name of at most %d letters, digits, _ and -", a.ID, a.ClickIDParam, MaxClickIDParam))
			} else {
				b.params[acc.ID] = a.ClickIDParam
			}
		}
		budget, bad := parseBudget(a)
		for _, err := range bad {
			problems = append(problems, fmt.Errorf("advertiser %q: %w", a.ID, err))
		}
		if len(bad) > 0 {
			continue
		}
		if budget.DailyMicros > 0 {
			b.budgets[acc.ID] = budget
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return b, nil
}

// MaxClickIDParam is the longest click_id_param.
const MaxClickIDParam = 32

// paramName reports whether s is a plain query parameter name: at most
// MaxClickIDParam ASCII letters, digits, _ and -, which need no escaping.
func paramName(s string) bool {
	if s == "" || len(s) > MaxClickIDParam {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// sendable reports whether token can be what a request's "Authorization:
// Bearer" header carries: the header trims white space at its ends, and
// holds no control character. A token that is not would never
// authenticate.
func sendable(token string) bool {
	if strings.TrimSpace(token) != token {
		return false
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// parseBudget reads an advertiser's budget fields, and reports each bad
// one: the pacing, the time zone, the budget and its currency.
func parseBudget(a AdvertiserAccount) (Budget, []error) {
	bg := Budget{Currency: strings.ToUpper(strings.TrimSpace(a.Currency)), Pacing: a.Pacing}
	var problems []error
	if z, err := zoneOf(a.Timezone); err != nil {
		problems = append(problems, err)
	} else {
		bg.Zone = z
	}
	switch bg.Pacing {
	case "":
		bg.Pacing = ASAP
	case ASAP, Even:
	default:
		problems = append(problems, fmt.Errorf("pacing %q: want asap or even", a.Pacing))
	}
	if strings.TrimSpace(a.DailyBudget) != "" {
		m, err := ParseMicros(a.DailyBudget)
		if err != nil || m <= 0 {
			problems = append(problems, fmt.Errorf("daily_budget %q: want a positive decimal of at most 12 digits before the point and 6 after, such as 25.00", a.DailyBudget))
		}
		if len(bg.Currency) != 3 || strings.Trim(bg.Currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			problems = append(problems, fmt.Errorf("currency %q: a daily budget needs a 3-letter ISO 4217 currency such as EUR", a.Currency))
		}
		bg.DailyMicros = m
	}
	if len(problems) > 0 {
		return Budget{}, problems
	}
	return bg, nil
}

// zoneOf reads a timezone field as Budget.Zone: "" for UTC, else the
// IANA name time.LoadLocation knows.
func zoneOf(name string) (string, error) {
	if name == "" || name == "UTC" {
		return "", nil
	}
	// "Local" would be the host's zone, which differs between replicas.
	if _, err := time.LoadLocation(name); err != nil || name == "Local" {
		return "", fmt.Errorf("timezone %q: want an IANA time zone such as America/Los_Angeles", name)
	}
	return name, nil
}

// ParseMicros reads a non-negative decimal of at most six decimals
// ("25", "25.5", "0.000001") as millionths.
func ParseMicros(s string) (int64, error) {
	s = strings.TrimSpace(s)
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || len(whole) > 12 || len(frac) > 6 || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, fmt.Errorf("%q is no decimal of at most 6 places", s)
	}
	var n int64
	for _, c := range whole + frac + strings.Repeat("0", 6-len(frac)) {
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// Authenticate returns the account whose report token token is. It hashes
// token and compares the hash with every account's in constant time, so
// the time taken says nothing of which, or how much of one, matched.
func (b *Book) Authenticate(token string) (Account, bool) {
	sum := sha256.Sum256([]byte(token))
	var found Account
	ok := 0
	for i := range b.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], b.tokens[i].sum[:])
		if eq == 1 {
			found = b.tokens[i].acc
		}
		ok |= eq
	}
	return found, ok == 1 && token != ""
}

// Budget returns the daily budget of the advertiser id (as the catalog
// names it), if it has one.
func (b *Book) Budget(id string) (Budget, bool) {
	bg, ok := b.budgets[strings.ToLower(id)]
	return bg, ok
}

// Budgets returns every advertiser's daily budget, by id (lower case).
func (b *Book) Budgets() map[string]Budget { return maps.Clone(b.budgets) }

// ClickIDParam is the query parameter the advertiser id (as the catalog
// names it) wants its landing URLs to carry the click's id in, or "".
func (b *Book) ClickIDParam(id string) string { return b.params[strings.ToLower(id)] }

// Name is the account's name, or "".
func (b *Book) Name(acc Account) string { return b.names[acc] }

// Demo returns the demo's advertisers (-demo): two of the demo catalog's
// with public report tokens, one with a daily budget spent as readers
// click, one spread over the day.
func Demo() []AdvertiserAccount {
	return []AdvertiserAccount{
		{ID: "handy-bestkauf.de", Name: "handy-bestkauf.de", ReportToken: "demo-advertiser-report",
			DailyBudget: "25.00", Currency: "EUR"},
		{ID: "amazon.de", Name: "Amazon.de", ReportToken: "demo-amazon-de-report",
			DailyBudget: "100.00", Currency: "EUR", Pacing: Even},
	}
}
