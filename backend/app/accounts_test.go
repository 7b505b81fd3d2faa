package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/internal/testredis"
	"github.com/adlink/adlink/match"
)

// accountsServer is a server on loopback, its public and admin listeners
// each an HTTP server, whose partners and advertisers files the test
// rewrites on disk.
type accountsServer struct {
	*App
	pub, admin            *httptest.Server
	partners, advertisers string
	feed                  string // "" for the demo catalog
	tick                  chan time.Time
	refreshed             chan api.Reload
	cfg                   config.Config
	now                   func() time.Time // nil for time.Now
	log                   *slog.Logger     // nil discards the logs
}

// startAccounts serves the demo catalog to the partners and advertisers
// of the files partners and advertisers (none, when ""); the demo's
// accounts are not there.
func startAccounts(t *testing.T, partners, advertisers string) *accountsServer {
	t.Helper()
	return startAccountsFeed(t, partners, advertisers, nil)
}

// startAccountsFeed is startAccounts serving the catalog of a feed file
// of ads (the demo catalog when nil), which the test rewrites on disk.
func startAccountsFeed(t *testing.T, partners, advertisers string, ads []match.Ad) *accountsServer {
	t.Helper()
	return startAccountsWith(t, partners, advertisers, ads, nil)
}

// startAccountsWith is startAccountsFeed with set, when not nil, changing
// the configuration.
func startAccountsWith(t *testing.T, partners, advertisers string, ads []match.Ad, set func(*config.Config)) *accountsServer {
	t.Helper()
	return startAccountsAt(t, partners, advertisers, ads, set, nil)
}

// startAccountsAt is startAccountsWith stamping clicks with the clock
// now, when not nil.
func startAccountsAt(t *testing.T, partners, advertisers string, ads []match.Ad, set func(*config.Config), now func() time.Time) *accountsServer {
	t.Helper()
	dir := t.TempDir()
	s := &accountsServer{partners: filepath.Join(dir, "partners.json"), tick: make(chan time.Time),
		refreshed: make(chan api.Reload, 16), now: now}
	writeFile(t, s.partners, []byte(partners))
	cfg := testConfig(t)
	cfg.Demo = false
	cfg.PartnersFile = s.partners
	if advertisers != "" {
		s.advertisers = filepath.Join(dir, "advertisers.json")
		writeFile(t, s.advertisers, []byte(advertisers))
		cfg.AdvertisersFile = s.advertisers
	}
	if ads != nil {
		s.feed = filepath.Join(dir, "feed.jsonl")
		writeFile(t, s.feed, feed(t, ads))
		cfg.Catalogs = []string{s.feed}
	}
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e6, 1e6, 1e6, 1e6
	if set != nil {
		set(&cfg)
	}
	s.cfg = cfg
	s.start(t)
	t.Cleanup(func() {
		s.pub.Close()
		s.admin.Close()
		s.App.Close()
	})
	return s
}

// start starts the server of s.cfg and its listeners.
func (s *accountsServer) start(t *testing.T) {
	t.Helper()
	a, err := New(s.cfg, Options{Refresh: s.tick, OnRefresh: func(r api.Reload) { s.refreshed <- r }, Now: s.now, Logger: s.log})
	if err != nil {
		t.Fatal(err)
	}
	s.App = a
	s.pub, s.admin = httptest.NewServer(a.Handler), httptest.NewServer(a.Admin)
}

// restart stops the server and starts it again on the same data
// directory and files.
func (s *accountsServer) restart(t *testing.T) {
	t.Helper()
	s.pub.Close()
	s.admin.Close()
	if err := s.App.Close(); err != nil {
		t.Fatal(err)
	}
	s.start(t)
}

// reload asks POST /admin/reload and returns its status and answer.
func (s *accountsServer) reload(t *testing.T) (int, api.Reload) {
	t.Helper()
	res, err := http.Post(s.admin.URL+"/admin/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r api.Reload
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	// The refresh told OnRefresh too; forget it.
	<-s.refreshed
	return res.StatusCode, r
}

// refresh runs the scheduled refresh (-catalog-refresh) once and returns
// how it ended.
func (s *accountsServer) refresh(t *testing.T) api.Reload {
	t.Helper()
	s.tick <- time.Now()
	select {
	case r := <-s.refreshed:
		return r
	case <-time.After(time.Minute):
		t.Fatal("no refresh")
		return api.Reload{}
	}
}

// get asks the public listener for path with the header h and returns
// the status and body.
func (s *accountsServer) get(t *testing.T, path string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.pub.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultTransport.RoundTrip(req) // a redirect is the answer, not followed
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusFound {
		return res.StatusCode, res.Header.Get("X-Adlink-Click")
	}
	return res.StatusCode, string(b)
}

// search asks for ads for "lg handy" in Germany with key and site, and
// returns the status and the click URLs (paths) of advertiser's ads.
func (s *accountsServer) search(t *testing.T, key, site, advertiser string) (int, []string) {
	t.Helper()
	status, body := s.get(t, "/v2/search/link?q=lg+handy&loc=de&api_key="+key+"&site_id="+site, nil)
	if status != http.StatusOK {
		return status, nil
	}
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("search: %v %.200s", err, body)
	}
	var links []string
	for _, l := range resp.Link {
		if strings.Contains(l.Ad, "adId="+advertiser+"&") {
			links = append(links, l.Ad[strings.Index(l.Ad, "/v1/redirect?"):])
		}
	}
	return status, links
}

// links are n click URLs of advertiser's ad, from n searches.
func (s *accountsServer) links(t *testing.T, key, site, advertiser string, n int) []string {
	t.Helper()
	var links []string
	for range n {
		status, l := s.search(t, key, site, advertiser)
		if status != http.StatusOK || len(l) == 0 {
			t.Fatalf("search: %d, %d links of %s", status, len(l), advertiser)
		}
		links = append(links, l[0])
	}
	return links
}

// click follows the click URL u as a person's browser on network n
// (behind the trusted loopback proxy), and returns the click as recorded.
func (s *accountsServer) click(t *testing.T, u string, n int) clicks.Click {
	t.Helper()
	h := http.Header{}
	h.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	h.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", n))
	clicks.Navigation.Header(h)
	status, id := s.get(t, u, h)
	if status != http.StatusFound || id == "" {
		t.Fatalf("click %d: %d %q, want a 302 with the click's id", n, status, id)
	}
	var found clicks.Click
	if err := s.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.ID == id {
			found = c
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if found.ID == "" {
		t.Fatalf("click %s is not in the click log", id)
	}
	return found
}

// beacon is the impression beacon of a page of host on key's site that
// shows the ad of the click URL link.
func beacon(key, site, host, link string) string {
	_, ad, _ := strings.Cut(link, "?")
	return "/v1/impression?api_key=" + key + "&site_id=" + site + "&url=" + url.QueryEscape("https://"+host+"/a") +
		"&ad=" + url.QueryEscape(ad)
}

const (
	onePartner  = `{"partners":[{"api_key":"key-one","sites":[{"id":"site-one","domains":["one.example"]}]}]}`
	twoPartners = `{"partners":[
		{"api_key":"key-one","sites":[{"id":"site-one","domains":["one.example"]}]},
		{"api_key":"key-two","report_token":"key-two-report-token-0123","sites":[
			{"id":"site-two","domains":["two.example"]},{"id":"site-three","domains":["three.example"]}]}]}`
)

// TestReloadPartners: a partner added to the file on disk asks for ads,
// pages, shards and beacons and its clicks bill once POST /admin/reload
// rereads it; a reload that finds the file as it was changes nothing. A
// site removed answers 403, a key removed 401, and its report token 401.
func TestReloadPartners(t *testing.T) {
	s := startAccounts(t, onePartner, "")
	if status, _ := s.search(t, "key-two", "site-two", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Fatalf("an unknown key: %d, want 401", status)
	}
	version := s.Catalog().Version

	writeFile(t, s.partners, []byte(twoPartners))
	status, r := s.reload(t)
	if status != http.StatusOK || r.Result != "unchanged" || r.Accounts != "swapped" || r.Version != version {
		t.Fatalf("reload with a partner added: %d %+v, want swapped accounts and the same catalog", status, r)
	}
	status, links := s.search(t, "key-two", "site-two", "handy-bestkauf.de")
	if status != http.StatusOK || len(links) == 0 {
		t.Fatalf("the new partner's search: %d, %d links", status, len(links))
	}
	for path, want := range map[string]int{
		"/v2/page/link?url=https%3A%2F%2Ftwo.example%2Fa&api_key=key-two&site_id=site-two": http.StatusAccepted,
		"/v2/shards?loc=de&lang=de&api_key=key-two&site_id=site-two":                       http.StatusOK,
	} {
		if got, body := s.get(t, path, nil); got != want {
			t.Errorf("%s: %d, want %d: %.200s", path, got, want, body)
		}
	}
	if status, body := s.get(t, beacon("key-two", "site-two", "two.example", links[0]), nil); status != http.StatusOK || !strings.Contains(body, `"ct":["`) {
		t.Errorf("the new partner's beacon: %d %.200s", status, body)
	}
	if c := s.click(t, links[0], 1); !c.Billable || c.APIKey != "key-two" {
		t.Errorf("the new partner's click: billable %v, reason %q", c.Billable, c.Reason)
	}
	report := http.Header{"Authorization": {"Bearer key-two-report-token-0123"}}
	if status, body := s.get(t, "/v2/report", report); status != http.StatusOK {
		t.Errorf("the new partner's report: %d %.200s", status, body)
	}
	if status, r := s.reload(t); status != http.StatusOK || r.Result != "unchanged" || r.Accounts != "" {
		t.Errorf("reload with nothing changed: %d %+v", status, r)
	}

	// key-one revoked, key-two's site-three and report token gone: by the
	// scheduled refresh this time.
	_, old := s.search(t, "key-one", "site-one", "handy-bestkauf.de")
	if len(old) == 0 {
		t.Fatal("key-one has no link to click")
	}
	writeFile(t, s.partners, []byte(`{"partners":[
		{"api_key":"key-two","sites":[{"id":"site-two","domains":["two.example"]}]}]}`))
	if r := s.refresh(t); r.Result != "unchanged" || r.Accounts != "swapped" {
		t.Fatalf("refresh with a partner removed: %+v", r)
	}
	if status, _ := s.search(t, "key-one", "site-one", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("a revoked key: %d, want 401", status)
	}
	if status, _ := s.search(t, "key-two", "site-three", "handy-bestkauf.de"); status != http.StatusForbidden {
		t.Errorf("a removed site: %d, want 403", status)
	}
	if status, _ := s.get(t, "/v2/shards?loc=de&lang=de&api_key=key-one&site_id=site-one", nil); status != http.StatusUnauthorized {
		t.Errorf("a revoked key's shards: %d, want 401", status)
	}
	if status, _ := s.get(t, "/v2/report", report); status != http.StatusUnauthorized {
		t.Errorf("a removed report token: %d, want 401", status)
	}
	if status, body := s.get(t, beacon("key-one", "site-one", "one.example", old[0]), nil); status != http.StatusUnauthorized {
		t.Errorf("a revoked key's beacon: %d %.200s, want 401", status, body)
	}
	if status, _ := s.get(t, "/v2/page/link?url=https%3A%2F%2Fthree.example%2Fa&api_key=key-two&site_id=site-three", nil); status != http.StatusForbidden {
		t.Errorf("a removed site's page: %d, want 403", status)
	}
	if status, _ := s.search(t, "key-two", "site-two", "handy-bestkauf.de"); status != http.StatusOK {
		t.Errorf("the partner kept: %d", status)
	}
}

// TestReloadRevokedKeyDoesNotBill: a click URL signed for a key before
// it was revoked (leaked with the key, say) still lands, as any click
// for a key that is no partner's does, and bills nothing.
func TestReloadRevokedKeyDoesNotBill(t *testing.T) {
	s := startAccounts(t, twoPartners, "")
	links := s.links(t, "key-one", "site-one", "handy-bestkauf.de", 3)
	if c := s.click(t, links[0], 1); !c.Billable {
		t.Fatalf("before the revocation: not billable (%s), want billable", c.Reason)
	}
	writeFile(t, s.partners, []byte(`{"partners":[
		{"api_key":"key-two","sites":[{"id":"site-two","domains":["two.example"]}]}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Accounts != "swapped" {
		t.Fatalf("reload: %d %+v", status, r)
	}
	for n, l := range links[1:] {
		if c := s.click(t, l, 10+n); c.Billable || c.Reason != clicks.ReasonPartner {
			t.Errorf("a revoked key's signed link: billable %v, reason %q; want %q", c.Billable, c.Reason, clicks.ReasonPartner)
		}
	}
}

// TestReloadRefusesBadPartners: a partners file that is no JSON, or gives
// one key twice, or an advertisers file whose budget is in a currency the
// catalog does not bid in, is refused naming the file and what is wrong;
// the partners and budgets served stay, and the next good file is served.
func TestReloadRefusesBadPartners(t *testing.T) {
	s := startAccounts(t, twoPartners, `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"100.00","currency":"EUR"}]}`)
	served := s.Catalog()
	for _, c := range []struct {
		name, file, content string
		status              int
		result, want        string
	}{
		{"bad JSON", s.partners, `{"partners":[{"api_key":"key-one",`, http.StatusBadGateway, "failed", "partners file " + s.partners},
		{"no partners", s.partners, `{"partners":[]}`, http.StatusConflict, "refused", "partners file " + s.partners + ": no partners"},
		{"duplicate key", s.partners, `{"partners":[
			{"api_key":"key-one","sites":[{"id":"site-one","domains":["one.example"]}]},
			{"api_key":"key-one","sites":[{"id":"site-two","domains":["two.example"]}]}]}`,
			http.StatusConflict, "refused", "partners file " + s.partners + `: partner 1: api_key "key-one" twice`},
		{"a domain IDNA refuses", s.partners, `{"partners":[
			{"api_key":"key-one","sites":[{"id":"site-one","domains":["one.example","a_ä.example"]}]}]}`,
			http.StatusConflict, "refused", "partners file " + s.partners + `: partner "key-one" site "site-one": domain "a_ä.example"`},
		{"a token with its file's newline", s.partners, `{"partners":[
			{"api_key":"key-one","report_token":"partner-report-token-1\n","sites":[{"id":"site-one","domains":["one.example"]}]}]}`,
			http.StatusConflict, "refused", "partners file " + s.partners + `: partner "key-one": report_token has white space at an end`},
		{"a URL for a domain", s.partners, `{"partners":[
			{"api_key":"key-one","sites":[{"id":"site-one","domains":["https://one.example/"]}]}]}`,
			http.StatusConflict, "refused", "partners file " + s.partners + `: partner "key-one" site "site-one": domain "https://one.example/": not a host name`},
		{"an unknown time zone", s.advertisers, `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"100.00","currency":"EUR","timezone":"Europe/Atlantis"}]}`,
			http.StatusConflict, "refused", "advertisers file " + s.advertisers + `: advertiser "handy-bestkauf.de": timezone "Europe/Atlantis"`},
		{"budget in USD", s.advertisers, `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"100.00","currency":"USD"}]}`,
			http.StatusConflict, "refused", "advertisers file " + s.advertisers + `: budgets: advertiser "handy-bestkauf.de" has a daily budget in USD`},
	} {
		good := map[string]string{s.partners: twoPartners,
			s.advertisers: `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"100.00","currency":"EUR"}]}`}
		for path, content := range good {
			writeFile(t, path, []byte(content))
		}
		writeFile(t, c.file, []byte(c.content))
		status, r := s.reload(t)
		if status != c.status || r.Result != "unchanged" || r.Accounts != c.result || !strings.Contains(r.AccountsError, c.want) {
			t.Errorf("%s: %d %+v, want %d, the accounts %s with %q", c.name, status, r, c.status, c.result, c.want)
		}
		if got := s.Catalog(); got != served {
			t.Errorf("%s: the catalog and accounts served changed", c.name)
		}
		if st := readyz(t, s.App); st.LastRefresh == nil || st.LastRefresh.Accounts != c.result {
			t.Errorf("%s: /readyz %+v", c.name, st.LastRefresh)
		}
		for _, key := range []string{"key-one", "key-two"} {
			site := map[string]string{"key-one": "site-one", "key-two": "site-two"}[key]
			if status, _ := s.search(t, key, site, "handy-bestkauf.de"); status != http.StatusOK {
				t.Errorf("%s: %s: %d, want the partners served to stay", c.name, key, status)
			}
		}
		if b, ok := s.Catalog().Accounts.Budget("handy-bestkauf.de"); !ok || b.Currency != "EUR" {
			t.Errorf("%s: the budget served is %+v, want the EUR one", c.name, b)
		}
	}
	// Fixed, the files are served.
	writeFile(t, s.partners, []byte(onePartner))
	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"50.00","currency":"EUR"}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Accounts != "swapped" {
		t.Errorf("the fixed files: %d %+v", status, r)
	}
	if status, _ := s.search(t, "key-two", "site-two", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("key-two after the fixed file: %d, want 401", status)
	}
}

// TestReloadBudgets: an advertiser whose daily budget is spent shows no
// ads and bills no click; raised by a reload, its ads come back and its
// clicks bill at once, the day's spend counting against the new budget;
// lowered below the spend, they go again; removed, they come back.
func TestReloadBudgets(t *testing.T) {
	budget := func(daily string) string {
		return `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"` + daily + `","currency":"EUR"}]}`
	}
	s := startAccounts(t, onePartner, budget("0.01"))
	const adv = "handy-bestkauf.de"
	links := s.links(t, "key-one", "site-one", adv, 3)
	first := s.click(t, links[0], 1)
	if !first.Billable || first.BidMicros < 10_000 {
		t.Fatalf("the first click: billable %v (%s), bid %d; want it to spend the budget", first.Billable, first.Reason, first.BidMicros)
	}
	if _, l := s.search(t, "key-one", "site-one", adv); len(l) != 0 {
		t.Fatalf("a spent budget: %d ads of %s, want none", len(l), adv)
	}
	if c := s.click(t, links[1], 2); c.Billable || c.Reason != clicks.ReasonOverBudget {
		t.Fatalf("a click over the budget: billable %v, reason %q", c.Billable, c.Reason)
	}

	// Room: ads back, clicks bill, and the spend so far counts.
	room := fmt.Sprintf("%d.%06d", (first.BidMicros*2)/1e6, (first.BidMicros*2)%1e6)
	writeFile(t, s.advertisers, []byte(budget(room)))
	if r := s.refresh(t); r.Result != "unchanged" || r.Accounts != "swapped" {
		t.Fatalf("refresh with the budget raised to %s: %+v", room, r)
	}
	if _, l := s.search(t, "key-one", "site-one", adv); len(l) == 0 {
		t.Error("a budget with room: no ads")
	}
	// Lowered below the day's spend (one bid of at least 0.01): the ads
	// go again; raised again, they are back.
	for _, c := range []struct {
		daily string
		ads   bool
	}{{"0.01", false}, {room, true}} {
		writeFile(t, s.advertisers, []byte(budget(c.daily)))
		if r := s.refresh(t); r.Result != "unchanged" || r.Accounts != "swapped" {
			t.Fatalf("refresh with the budget at %s: %+v", c.daily, r)
		}
		if _, l := s.search(t, "key-one", "site-one", adv); (len(l) > 0) != c.ads {
			t.Errorf("the budget at %s, %d spent: %d ads, want some: %v", c.daily, first.BidMicros, len(l), c.ads)
		}
	}
	if c := s.click(t, links[2], 3); !c.Billable {
		t.Errorf("a click under the raised budget: not billable (%s)", c.Reason)
	}
	// 2 bids spent of a budget of 2 bids: spent again.
	if _, l := s.search(t, "key-one", "site-one", adv); len(l) != 0 {
		t.Errorf("the raised budget spent: %d ads, want none", len(l))
	}

	// No budget: nothing holds the ads back.
	writeFile(t, s.advertisers, []byte(`{"advertisers":[{"id":"handy-bestkauf.de"}]}`))
	if status, r := s.reload(t); status != http.StatusOK || r.Accounts != "swapped" {
		t.Fatalf("reload without the budget: %d %+v", status, r)
	}
	_, l := s.search(t, "key-one", "site-one", adv)
	if len(l) == 0 {
		t.Fatal("a removed budget: no ads")
	}
	if c := s.click(t, l[0], 4); !c.Billable {
		t.Errorf("a click without a budget: not billable (%s)", c.Reason)
	}
}

// TestReloadAccountsOnAnnouncement: on Postgres, a catalog swapped on one
// replica makes the other refresh, and that one reads its own partners
// file again with its catalog.
func TestReloadAccountsOnAnnouncement(t *testing.T) {
	pgURL := testpg.New(t)
	ads := currencyAds()
	a := startMember(t, "", pgURL, ads, "A")
	b, cfg := startPartnersMember(t, "", pgURL, ads)
	const search = "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=key-two&site_id=site-two"
	if status, _ := get(t, b.Handler, search); status != http.StatusUnauthorized {
		t.Fatalf("B, before: %d, want 401", status)
	}

	writeFile(t, cfg.PartnersFile, []byte(twoPartners))
	changed := ads[1:]
	write(t, []*member{a, b}, changed)
	if r := a.Reload(context.Background(), false); r.Result != resultSwapped {
		t.Fatalf("A: %+v", r)
	}
	r := b.serving(t, a.Catalog().Version)
	if status, body := get(t, b.Handler, search); status != http.StatusOK {
		t.Errorf("B, after A's announcement (%+v): %d %.200s, want key-two served", r, status, body)
	}
}

// TestReloadRaisedBudgetOnRedis: on Redis, an advertiser whose budget one
// replica's click spent is stopped on the other by its flag; that other
// replica, its budget raised by a reload, shows its ads and bills its
// clicks again: the flag was raised against the smaller budget.
func TestReloadRaisedBudgetOnRedis(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	pgURL := testpg.New(t)
	budget := func(daily string) string {
		return `{"advertisers":[{"id":"shop.example","daily_budget":"` + daily + `","currency":"EUR"}]}`
	}
	ms := []*member{startMemberWith(t, srv.URL(), pgURL, currencyAds(), "A", budget("0.20")),
		startMemberWith(t, srv.URL(), pgURL, currencyAds(), "B", budget("0.20"))}
	a, b := ms[0], ms[1]
	const search = "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=demo&site_id=demo"
	shop := func(h http.Handler) []string {
		t.Helper()
		status, body := get(t, h, search)
		var resp struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
			t.Fatalf("search: %d %v %.200s", status, err, body)
		}
		var links []string
		for _, l := range resp.Link {
			if strings.Contains(l.Ad, "adId=SHOP.") {
				links = append(links, l.Ad[strings.Index(l.Ad, "/v1/redirect?"):])
			}
		}
		return links
	}
	links := shop(a.Handler)
	if len(links) == 0 {
		t.Fatal("no ad of shop.example")
	}
	id := clickFrom(t, a.Handler, links[0], 1)
	if got := recorded(t, pgURL)[id]; len(got) != 1 || got[0] != "billable" {
		t.Fatalf("the click that spends the budget: %v", got)
	}
	sync := func(m *member) {
		t.Helper()
		if err := m.live.accounts().gate.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	sync(b)
	if l := shop(b.Handler); len(l) != 0 {
		t.Fatalf("B, after A's flag: %d ads of shop.example, want none", len(l))
	}

	writeFile(t, b.App.live.cfg.AdvertisersFile, []byte(budget("1.00")))
	if r := b.Reload(t.Context(), false); r.Accounts != resultSwapped {
		t.Fatalf("B's reload: %+v", r)
	}
	sync(b)
	l := shop(b.Handler)
	if len(l) == 0 {
		t.Fatal("B, its budget raised: no ads of shop.example")
	}
	id = clickFrom(t, b.Handler, l[0], 2)
	if got := recorded(t, pgURL)[id]; len(got) != 1 || got[0] != "billable" {
		t.Errorf("a click on B under its raised budget: %v", got)
	}
	sync(a)
	if l := shop(a.Handler); len(l) != 0 {
		t.Errorf("A, its budget still spent: %d ads of shop.example, want none", len(l))
	}
}

// TestReloadRevokesWhileTheCatalogCannot: a key removed from the
// partners file is revoked by the next reload even when the catalog's
// refresh fails (its feed is down) or is refused (it lost too many ads);
// the answer says both.
func TestReloadRevokesWhileTheCatalogCannot(t *testing.T) {
	ads := currencyAds()
	s := startAccountsFeed(t, twoPartners, "", ads)
	search := func(key, site string) string {
		return "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=" + key + "&site_id=" + site
	}
	version := s.Catalog().Version

	writeFile(t, s.feed, []byte("{not a feed"))
	writeFile(t, s.partners, []byte(`{"partners":[
		{"api_key":"key-two","sites":[{"id":"site-two","domains":["two.example"]}]}]}`))
	status, r := s.reload(t)
	if status != http.StatusBadGateway || r.Result != "failed" || r.Accounts != "swapped" || r.Version != version {
		t.Fatalf("a feed down, a key removed: %d %+v, want failed with the accounts swapped", status, r)
	}
	if status, _ := s.get(t, search("key-one", "site-one"), nil); status != http.StatusUnauthorized {
		t.Errorf("the key removed while the feed is down: %d, want 401", status)
	}
	if status, _ := s.get(t, search("key-two", "site-two"), nil); status != http.StatusOK {
		t.Errorf("the key kept: %d, want 200", status)
	}

	// The feed back with most of its ads gone: refused, and the partner
	// added is served all the same.
	writeFile(t, s.feed, feed(t, ads[:1]))
	writeFile(t, s.partners, []byte(twoPartners))
	status, r = s.reload(t)
	if status != http.StatusConflict || r.Result != "refused" || r.Accounts != "swapped" || r.Version != version {
		t.Fatalf("a refused catalog, a key added: %d %+v, want refused with the accounts swapped", status, r)
	}
	if status, _ := s.get(t, search("key-one", "site-one"), nil); status != http.StatusOK {
		t.Errorf("the key added while the catalog is refused: %d, want 200", status)
	}
}

// TestReloadSwapsTheCatalogPastBadPartners: a partners file with a typo
// keeps the partners served, and stops no catalog update: the catalog
// changed is swapped in, and the answer names the file's problem.
func TestReloadSwapsTheCatalogPastBadPartners(t *testing.T) {
	ads := currencyAds()
	s := startAccountsFeed(t, twoPartners, "", ads)
	version := s.Catalog().Version
	for _, c := range []struct{ name, partners, accounts, want string }{
		{"bad JSON", `{"partners":[{"api_key":"key-one",`, "failed", "partners file " + s.partners},
		{"duplicate key", `{"partners":[
			{"api_key":"key-one","sites":[{"id":"site-one","domains":["one.example"]}]},
			{"api_key":"key-one","sites":[{"id":"site-two","domains":["two.example"]}]}]}`, "refused", `api_key "key-one" twice`},
	} {
		ads = append(ads[:len(ads):len(ads)], match.Ad{ID: "SHOP.2." + c.accounts, Kind: match.KindProduct, Title: "Kaffeemühle neu",
			Keywords: []string{"kaffeemühle"}, Landing: "https://shop.example/p/new", Advertiser: "shop.example",
			Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: 200_000})
		writeFile(t, s.feed, feed(t, ads))
		writeFile(t, s.partners, []byte(c.partners))
		status, r := s.reload(t)
		if r.Result != "swapped" || r.Version == version || r.Ads != len(ads) || r.Accounts != c.accounts ||
			!strings.Contains(r.AccountsError, c.want) {
			t.Errorf("%s: %d %+v, want the catalog swapped and the accounts %s with %q", c.name, status, r, c.accounts, c.want)
		}
		if st := readyz(t, s.App); st.Version != r.Version || st.LastRefresh == nil || st.LastRefresh.Accounts != c.accounts {
			t.Errorf("%s: /readyz %+v", c.name, st)
		}
		version = r.Version
		for _, key := range []string{"key-one", "key-two"} {
			site := map[string]string{"key-one": "site-one", "key-two": "site-two"}[key]
			if status, _ := s.get(t, "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key="+key+"&site_id="+site, nil); status != http.StatusOK {
				t.Errorf("%s: %s: %d, want the partners served to stay", c.name, key, status)
			}
		}
	}
}

// TestReloadAccountsAloneAnnounceNothing: a replica whose catalog is
// behind the one the replicas agreed on, whose partners file alone
// changes, swaps its partners and announces no catalog: it has no new
// one, and its old one would take the others back.
func TestReloadAccountsAloneAnnounceNothing(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ads := currencyAds()
	a := startMember(t, srv.URL(), "", ads, "A")
	b, cfg := startPartnersMember(t, srv.URL(), "", ads)
	old := b.Catalog().Version
	for deadline := time.Now().Add(30 * time.Second); b.live.replicas.agreed() != old; { // B listens
		if time.Now().After(deadline) {
			t.Fatal("B never heard the catalog recorded")
		}
		select {
		case <-b.refreshed:
		case <-time.After(50 * time.Millisecond):
		}
	}

	// A swaps a catalog B's feed does not give: B, told, stays behind.
	writeFile(t, a.feed, feed(t, ads[1:]))
	if r := a.Reload(t.Context(), false); r.Result != resultSwapped {
		t.Fatalf("A: %+v", r)
	}
	agreed := a.Catalog().Version
	select {
	case r := <-b.refreshed: // on A's word
		if r.Version != old || !b.live.stats().Behind {
			t.Fatalf("B, told of A's catalog: %+v, want its own served and behind", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("B never heard of A's catalog")
	}
	sent := b.live.stats().Announcements["sent"]
	swaps := b.live.stats().Refreshes[resultSwapped]

	writeFile(t, cfg.PartnersFile, []byte(twoPartners))
	r := b.Reload(t.Context(), false)
	<-b.refreshed
	if r.Result != resultUnchanged || r.Accounts != resultSwapped || r.Version != old {
		t.Fatalf("B's reload of its partners alone: %+v, want the catalog unchanged and the accounts swapped", r)
	}
	st := b.live.stats()
	if st.Announcements["sent"] != sent {
		t.Errorf("B announced %d catalogs for its partners alone, want none", st.Announcements["sent"]-sent)
	}
	if st.Refreshes[resultSwapped] != swaps {
		t.Errorf("B counted %d catalog swaps for its partners alone, want none", st.Refreshes[resultSwapped]-swaps)
	}
	if v := b.live.replicas.agreed(); v != agreed {
		t.Errorf("the agreed catalog after B's reload: %s, want A's %s", v, agreed)
	}
	if status, _ := get(t, b.Handler, "/v2/search/link?q=kaffeem%C3%BChle&loc=de&api_key=key-two&site_id=site-two"); status != http.StatusOK {
		t.Errorf("B's partner added: %d, want 200", status)
	}
}

// TestReloadRevokesWithoutTheSpend: with Postgres down, the day's spend
// cannot be read for a changed budget; the reload swaps the partners all
// the same (a key removed is revoked), keeps the budget gate served and
// says so, and the next reload with Postgres back builds the new gate.
func TestReloadRevokesWithoutTheSpend(t *testing.T) {
	pg := testpg.Start(t)
	budget := func(daily string) string {
		return `{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"` + daily + `","currency":"EUR"}]}`
	}
	s := startAccountsWith(t, twoPartners, budget("100.00"), nil, func(cfg *config.Config) { cfg.PostgresURL = pg.URL() })
	gate := s.Catalog().Budget
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.partners, []byte(onePartner))
	writeFile(t, s.advertisers, []byte(budget("50.00")))
	status, r := s.reload(t)
	if status != http.StatusOK || r.Accounts != "swapped" || !strings.Contains(r.AccountsError, "budget gate served stays") {
		t.Fatalf("reload with Postgres down: %d %+v, want the accounts swapped, the gate kept and said so", status, r)
	}
	if status, _ := s.search(t, "key-two", "site-two", "handy-bestkauf.de"); status != http.StatusUnauthorized {
		t.Errorf("a key removed while Postgres is down: %d, want 401", status)
	}
	if b, _ := s.Catalog().Accounts.Budget("handy-bestkauf.de"); b.DailyMicros != 50_000_000 || s.Catalog().Budget != gate {
		t.Errorf("with Postgres down: budget %+v, gate kept %v; want the new budget and the old gate", b, s.Catalog().Budget == gate)
	}
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		status, r = s.reload(t)
		if r.AccountsError == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status != http.StatusOK || r.Accounts != "swapped" || r.AccountsError != "" || s.Catalog().Budget == gate {
		t.Errorf("reload with Postgres back: %d %+v, want a new gate", status, r)
	}
	if _, r := s.reload(t); r.Accounts != "" {
		t.Errorf("a reload after: %+v, want the accounts as served", r)
	}
}

// startPartnersMember starts replica B of ads on the Redis or Postgres at
// redisURL or pgURL, refreshed by hand, with a partners file of its own
// (onePartner, at cfg.PartnersFile) and the click keys startMember's
// replicas share.
func startPartnersMember(t *testing.T, redisURL, pgURL string, ads []match.Ad) (*member, config.Config) {
	t.Helper()
	b := &member{name: "B", tick: make(chan time.Time), refreshed: make(chan api.Reload, 64)}
	b.feed = filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, b.feed, feed(t, ads))
	cfg := testConfig(t)
	cfg.Catalogs, cfg.RedisURL, cfg.PostgresURL = []string{b.feed}, redisURL, pgURL
	cfg.PartnersFile = filepath.Join(t.TempDir(), "partners.json")
	writeFile(t, cfg.PartnersFile, []byte(onePartner))
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	var err error
	if b.App, err = New(cfg, Options{Refresh: b.tick, OnRefresh: func(r api.Reload) { b.refreshed <- r }}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, cfg
}
