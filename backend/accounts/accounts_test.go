package accounts

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/partners"
)

func TestAuthenticate(t *testing.T) {
	sum := sha256.Sum256([]byte("an advertiser's secret"))
	b, err := New([]partners.Partner{partners.Demo(), {APIKey: "k2", ReportTokenSHA256: strings.Repeat("ab", 32)}},
		[]AdvertiserAccount{{ID: "Shop.example", ReportTokenSHA256: hex.EncodeToString(sum[:]), DailyBudget: "25.5", Currency: "eur"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		token string
		want  Account
		ok    bool
	}{
		{partners.DemoReportToken, Account{Partner, "demo"}, true},
		{"an advertiser's secret", Account{Advertiser, "shop.example"}, true},
		{"", Account{}, false},
		{"demo-partner-repor", Account{}, false},
		{partners.DemoReportToken + " ", Account{}, false},
		{strings.Repeat("ab", 32), Account{}, false}, // the hash is no token
	} {
		got, ok := b.Authenticate(tt.token)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Authenticate(%q) = %v %v, want %v %v", tt.token, got, ok, tt.want, tt.ok)
		}
	}
	if bg, ok := b.Budget("SHOP.example"); !ok || bg.DailyMicros != 25_500_000 || bg.Currency != "EUR" || bg.Pacing != ASAP {
		t.Errorf("budget %+v %v", bg, ok)
	}
	if _, ok := b.Budget("other.example"); ok {
		t.Error("an advertiser without an account has a budget")
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	_, err := New([]partners.Partner{{APIKey: "a", ReportToken: "short"}, {APIKey: "b", ReportToken: "same token, twice!"}},
		[]AdvertiserAccount{
			{ID: "x.example", ReportToken: "same token, twice!"},
			{ID: ""},
			{ID: "y.example", ReportTokenSHA256: "zz"},
			{ID: "z.example", DailyBudget: "12,50", Currency: "EUR"},
			{ID: "w.example", DailyBudget: "10", Currency: "euro"},
			{ID: "v.example", DailyBudget: "10", Currency: "EUR", Pacing: "fast"},
			{ID: "t.example", DailyBudget: "abc", Currency: "euro", Pacing: "slow"},
			{ID: "u.example", ReportToken: "a long enough token", ReportTokenSHA256: strings.Repeat("0", 64)},
			{ID: "X.example"},
			{ID: "s.example", DailyBudget: "10", Currency: "EUR", Timezone: "Mars/Olympus_Mons"},
			{ID: "r.example", DailyBudget: "10", Currency: "EUR", Timezone: "Local"},
			{ID: "q.example", DailyBudget: "10", Currency: "EUR", Timezone: "../../etc/passwd"},
		})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`partner "a": report_token of 5 bytes`, `advertiser "x.example": its report token is another account's`,
		"advertiser 1: id is empty", `"y.example": report_token_sha256 must be 64 hex digits`, `daily_budget "12,50"`,
		`currency "euro"`, `pacing "fast"`, "not both", `advertiser "X.example" twice`,
		// One advertiser's bad fields are each reported, not the first alone.
		`advertiser "t.example": pacing "slow"`, `advertiser "t.example": daily_budget "abc"`, `advertiser "t.example": currency "euro"`,
		`advertiser "s.example": timezone "Mars/Olympus_Mons"`, `advertiser "r.example": timezone "Local"`,
		`advertiser "q.example": timezone "../../etc/passwd"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestLoadAdvertisers(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a.json")
	os.WriteFile(good, []byte(`{"advertisers":[{"id":"handy-bestkauf.de","name":"Handy","report_token":"0123456789abcdef","daily_budget":"25.00","currency":"EUR","pacing":"even"}]}`), 0o600)
	ads, err := LoadAdvertisers(good)
	if err != nil || len(ads) != 1 || ads[0].Pacing != Even || ads[0].DailyBudget != "25.00" {
		t.Fatalf("%+v %v", ads, err)
	}
	bad := filepath.Join(dir, "b.json")
	os.WriteFile(bad, []byte(`{"advertisers":[{"id":"x","budget":"1"}]}`), 0o600)
	if _, err := LoadAdvertisers(bad); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("an unknown field: %v", err)
	}
}

// TestParseAdvertisersRefusesAllButOneObject: an empty advertisers file,
// one with more after its object, or one without the list, is refused
// naming the file, not read as no advertisers (every budget gone) or as
// its first object.
func TestParseAdvertisersRefusesAllButOneObject(t *testing.T) {
	const one = `{"advertisers":[{"id":"a.example","daily_budget":"25.00","currency":"EUR"}]}`
	for b, want := range map[string]string{
		"":                     `advertisers file a.json: empty; want {"advertisers":[...]}`,
		"\n\n":                 `advertisers file a.json: empty; want {"advertisers":[...]}`,
		one + one:              `advertisers file a.json: more after the object that ends at byte 76; want one {"advertisers":[...]}`,
		one + "\n]}\n":         `advertisers file a.json: more after the object that ends at byte 76; want one {"advertisers":[...]}`,
		"null":                 `advertisers file a.json: no "advertisers" list; want {"advertisers":[...]}`,
		` {} `:                 `advertisers file a.json: no "advertisers" list; want {"advertisers":[...]}`,
		`{"advertisers":null}`: `advertisers file a.json: no "advertisers" list; want {"advertisers":[...]}`,
	} {
		if ads, err := ParseAdvertisers("a.json", []byte(b)); err == nil || err.Error() != want {
			t.Errorf("ParseAdvertisers(%q) = %v, %v; want %q", b, ads, err, want)
		}
	}
	if ads, err := ParseAdvertisers("a.json", []byte(`{"advertisers":[]}`)); err != nil || len(ads) != 0 {
		t.Errorf("an empty list: %v %v, want none, no error", ads, err)
	}
}

func TestParseMicros(t *testing.T) {
	for s, want := range map[string]int64{"25": 25_000_000, "0.45": 450_000, "0.000001": 1, " 1.5 ": 1_500_000} {
		if got, err := ParseMicros(s); err != nil || got != want {
			t.Errorf("ParseMicros(%q) = %d %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1.0000001", "1,5", "1e3", ".5", "1.", "9999999999999"} {
		if _, err := ParseMicros(s); err == nil {
			t.Errorf("ParseMicros(%q) accepted", s)
		}
	}
}

// FuzzParseAdvertisers: whatever an advertisers file holds,
// ParseAdvertisers and New never panic, an error names the file, and a
// book made has a positive budget in a 3-letter currency for each budget.
func FuzzParseAdvertisers(f *testing.F) {
	f.Add([]byte(`{"advertisers":[{"id":"a.example","daily_budget":"25.00","currency":"EUR","pacing":"even"}]}`))
	f.Add([]byte(`{"advertisers":[{"id":"a.example"},{"id":"A.example"}]}`))
	f.Add([]byte(`{"advertisers":[{"id":"a.example","daily_budget":"abc"`))
	f.Add([]byte(""))
	f.Add([]byte(`{"advertisers":[]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ads, err := ParseAdvertisers("a.json", b)
		if err != nil {
			if !strings.Contains(err.Error(), "advertisers file a.json") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if _, err := ParseAdvertisers("a.json", append(b[:len(b):len(b)], "{}"...)); err == nil {
			t.Fatalf("%q and an object after it parsed, want one object only", b)
		}
		book, err := New(nil, ads)
		if err != nil {
			return
		}
		for id, bg := range book.Budgets() {
			if bg.DailyMicros <= 0 || len(bg.Currency) != 3 {
				t.Fatalf("advertiser %q: budget %+v", id, bg)
			}
		}
	})
}

// TestNewRefusesTokensNoRequestSends: a report token with white space at
// an end (the newline of a file it was read from) or a control character
// never authenticates, since a request's Authorization header cannot
// carry it: the file is refused, naming the account.
func TestNewRefusesTokensNoRequestSends(t *testing.T) {
	_, err := New([]partners.Partner{{APIKey: "a", ReportToken: "a long enough token\n"}},
		[]AdvertiserAccount{{ID: "x.example", ReportToken: " a long enough token 2"}, {ID: "y.example", ReportToken: "a long\x00enough token 3"},
			{ID: "z.example", ReportToken: "a long enough token, inner spaces kept"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`partner "a": report_token`, `advertiser "x.example": report_token`, `advertiser "y.example": report_token`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "z.example") {
		t.Errorf("error names a good token's account:\n%v", err)
	}
}

// TestClickIDParam: a plain parameter name is kept for its advertiser
// (by the id in any case); anything else is refused naming the advertiser.
func TestClickIDParam(t *testing.T) {
	b, err := New(nil, []AdvertiserAccount{{ID: "Shop.example", ClickIDParam: "adlink_click"}, {ID: "other.example"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.ClickIDParam("shop.example"); got != "adlink_click" {
		t.Errorf("shop.example's param %q, want adlink_click", got)
	}
	if got := b.ClickIDParam("other.example"); got != "" {
		t.Errorf("other.example's param %q, want none", got)
	}
	for _, bad := range []string{"a=b", "a&b", "a b", "click#", "ä", "x%20", strings.Repeat("a", 33)} {
		_, err := New(nil, []AdvertiserAccount{{ID: "bad.example", ClickIDParam: bad}})
		if err == nil || !strings.Contains(err.Error(), `advertiser "bad.example": click_id_param`) {
			t.Errorf("click_id_param %q: %v, want it refused naming the advertiser", bad, err)
		}
	}
	if _, err := New(nil, []AdvertiserAccount{{ID: "ok.example", ClickIDParam: strings.Repeat("a-_0", 8)}}); err != nil {
		t.Errorf("a name of 32: %v", err)
	}
}

// An advertiser's budget counts the days of its timezone, UTC when it
// gives none.
func TestBudgetZone(t *testing.T) {
	b, err := New(nil, []AdvertiserAccount{
		{ID: "la.example", DailyBudget: "10", Currency: "USD", Timezone: "America/Los_Angeles"},
		{ID: "utc.example", DailyBudget: "10", Currency: "EUR", Timezone: "UTC"},
		{ID: "none.example", DailyBudget: "10", Currency: "EUR"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"la.example": "America/Los_Angeles", "utc.example": "", "none.example": ""} {
		if bg, ok := b.Budget(id); !ok || bg.Zone != want {
			t.Errorf("%s: budget %+v, want the zone %q", id, bg, want)
		}
	}
}
