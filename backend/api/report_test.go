package api

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-json"
	bolt "go.etcd.io/bbolt"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/store"
)

// reportEnv is a server whose clicks and impressions go to a real bbolt
// ledger, with report tokens for the demo partner, the k2 partner and one
// advertiser.
type reportEnv struct {
	*signedEnv
	log  *clicks.Log
	imps *clicks.BoltImpressions
	db   *bolt.DB
}

const advertiserToken = "an advertiser's report token"

func newReportEnv(t testing.TB) *reportEnv { return newReportEnvWith(t, nil) }

// newReportEnvWith is newReportEnv whose server's Deps change first
// changes, when not nil.
func newReportEnvWith(t testing.TB, change func(*Deps)) *reportEnv {
	t.Helper()
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	log, err := clicks.New(db)
	must(err)
	ledger, err := clicks.NewLedger(db)
	must(err)
	imps, err := clicks.NewImpressions(db)
	must(err)
	rollups, err := clicks.NewRollups(db)
	must(err)
	windows, err := clicks.NewWindows(db)
	must(err)
	decisions, err := clicks.NewDecisions(db)
	must(err)
	tags, err := clicks.NewTags(db)
	must(err)
	ps := []partners.Partner{partners.Demo(), {APIKey: "k2", ReportToken: "the k2 partner's token",
		Sites: []partners.Site{{ID: "blog", Domains: []string{"blog.example"}}}}}
	book, err := accounts.New(ps, []accounts.AdvertiserAccount{{ID: "handy-bestkauf.de", ReportToken: advertiserToken}})
	must(err)
	ix, err := market.Build(fixture())
	must(err)
	env := &reportEnv{signedEnv: &signedEnv{now: testClock, imps: imps}, log: log, imps: imps, db: db}
	env.keys = testKeysFor(t)
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst, cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9, 1e9, 1e9
	deps := Deps{Config: cfg, Indexes: ix, Partners: testPartners(t), ClickKeys: env.keys,
		Windows: windows, Decisions: decisions, Ledger: ledger, Impressions: imps, Accounts: book, Rollups: rollups,
		Tags: tags, Clicks: log, ClickLog: log, Now: func() time.Time {
			env.mu.Lock()
			defer env.mu.Unlock()
			return env.now
		}}
	if change != nil {
		change(&deps)
	}
	env.handler = NewServer(deps)
	return env
}

// report asks for a report with token (none when "") and returns the
// answer.
func (env *reportEnv) report(t testing.TB, token, query string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v2/report?"+query, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Origin", "https://elsewhere.example")
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	res := rec.Result()
	return res, readBody(t, res)
}

// traffic makes clicks of every kind over two days: billable ones,
// repeats, bots and no-intent clicks, on several ads, and impressions.
func (env *reportEnv) traffic(t testing.TB) {
	t.Helper()
	for day := range 2 {
		links := distinctAds(append(env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&size=20&yk_tag=t:"+strconv.Itoa(day)),
			env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo")...))
		for i, l := range links {
			ip := "2001:db8:" + strconv.Itoa(day*100+i) + "::1"
			readBody(t, env.do(t, l, ip, browserUA))                                    // billable
			readBody(t, env.do(t, l, ip, browserUA))                                    // repeat
			readBody(t, env.do(t, l, ip, "curl/8.0"))                                   // bot
			readBody(t, env.doWith(t, l, ip, browserUA, http.Header{"X-Other": {"1"}})) // no intent
			env.beacon(t, ip, browserUA, l, l)
		}
		env.advance(24 * time.Hour)
	}
	env.take()
}

// TestReportEqualsTheClickLog: whatever the grouping, a report's rows
// add up to the click log and the impression log, to the micro.
func TestReportEqualsTheClickLog(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	var want clicks.Measures
	env.log.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		m := clicks.Measures{Clicks: 1, SpendMicros: c.Spend()}
		if c.Billable {
			m.Billable = 1
		} else {
			m.Unbilled[indexOf(clicks.Reasons, c.Reason)] = 1
		}
		want.Add(&m)
		return nil
	})
	want.Impressions = int64(len(env.impressions(t)))
	if want.Billable == 0 || want.Impressions == 0 || want.SpendMicros == 0 {
		t.Fatalf("the traffic made %+v", want)
	}
	q := "from=2026-11-22&to=2026-11-23&group_by="
	for _, groups := range []string{"", "day", "day,site_id", "ad", "hour,criterion", "yk_tag,country,context", "advertiser,ad"} {
		res, body := env.report(t, partners.DemoReportToken, q+groups)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("group_by=%s: %d %s", groups, res.StatusCode, body)
		}
		var got struct {
			Columns []string
			Rows    []map[string]any
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		var sum clicks.Measures
		spend := 0.0
		for _, r := range got.Rows {
			sum.Impressions += int64(r["impressions"].(float64))
			sum.Clicks += int64(r["clicks"].(float64))
			sum.Billable += int64(r["billable_clicks"].(float64))
			for i, reason := range clicks.Reasons {
				sum.Unbilled[i] += int64(r["unbilled_"+reason].(float64))
			}
			s, _ := strconv.ParseFloat(r["spend"].(string), 64)
			spend += s
			if r["currency"] != "EUR" {
				t.Errorf("group_by=%s: row in %v", groups, r["currency"])
			}
		}
		sum.SpendMicros = want.SpendMicros
		if sum != want || int64(spend*1e6+0.5) != want.SpendMicros {
			t.Errorf("group_by=%s: rows add up to %+v spend %.6f, the logs to %+v", groups, sum, spend, want)
		}
		if len(got.Columns) != len(strings.Split(groups, ","))+len(clicks.Reasons)+6-map[bool]int{true: 1}[groups == ""] {
			t.Errorf("group_by=%s: columns %q", groups, got.Columns)
		}
		// The CSV has the same rows.
		res, body = env.report(t, partners.DemoReportToken, q+groups+"&format=csv")
		recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
		if err != nil || res.StatusCode != 200 || len(recs) != len(got.Rows)+1 || strings.Join(recs[0], ",") != strings.Join(got.Columns, ",") {
			t.Errorf("group_by=%s csv: %d %v\n%s", groups, res.StatusCode, err, body)
		}
		if cd := res.Header.Get("Content-Disposition"); cd != `attachment; filename="adlink-report-2026-11-22-2026-11-23.csv"` {
			t.Errorf("Content-Disposition %q", cd)
		}
	}
	// One day only.
	_, body := env.report(t, partners.DemoReportToken, "from=2026-11-23&to=2026-11-23&group_by=day")
	if !strings.Contains(string(body), `"day":"2026-11-23"`) || strings.Contains(string(body), "2026-11-22\",") {
		t.Errorf("a report of 2026-11-23: %s", body)
	}
}

func indexOf(ss []string, s string) int {
	for i, v := range ss {
		if v == s {
			return i
		}
	}
	return -1
}

// Each account sees its own traffic only; no token, a wrong one, or one in
// the URL sees nothing.
func TestReportAuthorization(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	q := "from=2026-11-22&to=2026-11-23&group_by=advertiser"
	for _, tt := range []struct{ name, token, query string }{
		{"no token", "", q},
		{"a wrong token", "not anyone's token at all", q},
		{"a token in the URL", "", q + "&token=" + url.QueryEscape(partners.DemoReportToken)},
		{"a partner's api_key", "demo", q},
	} {
		res, body := env.report(t, tt.token, tt.query)
		var e struct{ Error struct{ Code string } }
		json.Unmarshal(body, &e)
		if res.StatusCode != http.StatusUnauthorized || e.Error.Code != CodeUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %s", tt.name, res.StatusCode, body)
		}
	}
	// An advertiser with no account (one removed from the advertisers file
	// among them) keeps its history in its partners' reports.
	_, body := env.report(t, partners.DemoReportToken, q)
	if strings.Count(string(body), `"advertiser":`) < 2 {
		t.Errorf("the partner's report by advertiser: %s", body)
	}
	res, body := env.report(t, "the k2 partner's token", q)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"rows":[]`) {
		t.Errorf("another partner's report shows the demo's traffic: %s", body)
	}
	res, body = env.report(t, advertiserToken, q)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"advertiser":"handy-bestkauf.de"`) || strings.Count(string(body), `"advertiser":`) != 1 {
		t.Errorf("the advertiser's report: %s", body)
	}
	if res.Header.Get("Access-Control-Allow-Origin") != "" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("a report readable by other origins or cached: %v", res.Header)
	}
}

// The account is the token's alone: a partner's token with another
// account's key, site or advertiser in the query, or a second
// Authorization header with another's token, reads its own numbers.
func TestReportAccountIsTheTokens(t *testing.T) {
	env := newReportEnv(t)
	env.traffic(t)
	q := "from=2026-11-22&to=2026-11-23&group_by=advertiser"
	for _, extra := range []string{"api_key=demo", "api_key=demo&site_id=demo", "advertiser=handy-bestkauf.de",
		"account=demo", "partner=demo", "kind=operator"} {
		res, body := env.report(t, "the k2 partner's token", q+"&"+extra)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"account":{"kind":"partner","id":"k2"}`) ||
			!strings.Contains(string(body), `"rows":[]`) {
			t.Errorf("k2's token with %s: %d %s", extra, res.StatusCode, body)
		}
		res, body = env.report(t, advertiserToken, q+"&"+extra+"&advertiser=amazon.de")
		if res.StatusCode != http.StatusOK || strings.Count(string(body), `"advertiser":`) != 1 ||
			!strings.Contains(string(body), `"advertiser":"handy-bestkauf.de"`) {
			t.Errorf("the advertiser's token with %s: %d %s", extra, res.StatusCode, body)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/v2/report?"+q, nil)
	req.Header.Add("Authorization", "Bearer the k2 partner's token")
	req.Header.Add("Authorization", "Bearer "+partners.DemoReportToken)
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	if body := rec.Body.String(); rec.Code == http.StatusOK && !strings.Contains(body, `"rows":[]`) {
		t.Errorf("k2's token, then the demo's in a second header: %d %s", rec.Code, body)
	}
}

func TestReportBadInput(t *testing.T) {
	env := newReportEnv(t)
	for _, tt := range []struct{ query, param string }{
		{"from=2026-11-24&to=2026-11-01", "from"},
		{"from=2025-01-01&to=2026-11-01", "from"},
		{"from=24.11.2026", "from"},
		{"to=2026-2-1", "to"},
		{"to=2026-02-30", "to"},
		{"group_by=day,nope", "group_by"},
		{"group_by=day,day", "group_by"},
		{"format=xml", "format"},
	} {
		res, body := env.report(t, partners.DemoReportToken, tt.query)
		var e struct{ Error struct{ Param string } }
		json.Unmarshal(body, &e)
		if res.StatusCode != 400 || e.Error.Param != tt.param {
			t.Errorf("%s: %d param %q, want 400 %q: %s", tt.query, res.StatusCode, e.Error.Param, tt.param, body)
		}
	}
	res, body := env.report(t, partners.DemoReportToken, "")
	if res.StatusCode != 200 || !strings.Contains(string(body), `"from":"2026-10-24","to":"2026-11-22"`) {
		t.Errorf("the default range: %d %s", res.StatusCode, body)
	}
}

// TestReportRefusesRepeatedParameters: a parameter given twice is a 400
// naming it, as on every other endpoint, not a report of the first value
// alone (group_by=day&group_by=site_id grouped by day only).
func TestReportRefusesRepeatedParameters(t *testing.T) {
	env := newReportEnv(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	for _, tt := range []struct{ query, param string }{
		{"group_by=day&group_by=site_id", "group_by"},
		{"from=2026-11-01&from=2026-11-20&to=2026-11-22", "from"},
		{"to=2026-11-22&to=2026-11-21", "to"},
		{"format=json&format=csv", "format"},
		{"group_by=day&group_by=day&format=xml", "group_by"},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/report?"+tt.query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, res)
		res.Body.Close()
		var e struct {
			Error struct{ Param, Message string }
		}
		json.Unmarshal(body, &e)
		if res.StatusCode != http.StatusBadRequest || e.Error.Param != tt.param || !strings.Contains(e.Error.Message, tt.param+" is given 2 times") {
			t.Errorf("%s: %d %s, want 400 naming %s given twice", tt.query, res.StatusCode, body, tt.param)
		}
	}
}

// TestReportHugeGroupList: a group_by of thousands of bad groups is a 400
// naming its first, not an answer of megabytes with a message for each.
func TestReportHugeGroupList(t *testing.T) {
	env := newReportEnv(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/report?group_by=day,"+strings.Repeat("x,", 20000), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+partners.DemoReportToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, res)
	res.Body.Close()
	var e struct {
		Error struct{ Param, Message string }
	}
	json.Unmarshal(body, &e)
	if res.StatusCode != http.StatusBadRequest || e.Error.Param != "group_by" || strings.Count(e.Error.Message, `not "x"`) != 1 || len(body) > 1<<10 {
		t.Errorf("%s, %d bytes: %.300s; want a 400 naming group_by's first bad group", res.Status, len(body), body)
	}
}

// What a click URL's client writes freely (its criterion, yk_tag, key and
// site) reaches no report unless a signature or click token proves adlink
// made it: 40 forged, unsigned or unknown-partner clicks, each with a
// criterion and yk_tag of its own (formulas among them), add one row to
// the report by criterion, under no criterion, and none to any partner's
// by yk_tag. A signed click's criterion and yk_tag are reported.
func TestReportKeepsNoUnprovenText(t *testing.T) {
	env := newReportEnv(t)
	links := env.links(t, "q=handy&loc=de&api_key=demo&site_id=demo&yk_tag=campaign-7")
	l := links[0]
	for i := range 40 {
		u := setParam(setParam(l, "criterionId", fmt.Sprintf(`=HYPERLINK("https://evil.example/%d","x")`, i)), "yk_tag", fmt.Sprint("junk-", i))
		switch i % 4 {
		case 1:
			u = setParam(setParam(u, "sig", "-"), "exp", "-")
		case 2:
			u = setParam(setParam(setParam(u, "api_key", fmt.Sprint("nokey-", i)), "sig", "-"), "exp", "-")
		case 3:
			u = setParam(u, "site_id", fmt.Sprint("nosite-", i))
		}
		readBody(t, env.do(t, u, fmt.Sprintf("198.51.100.%d", 10+i), browserUA))
	}
	readBody(t, env.do(t, l, "198.51.100.3", browserUA))
	_, body := env.report(t, partners.DemoReportToken, "from=2026-11-22&to=2026-11-22&group_by=criterion&format=csv")
	recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%v %s", err, body)
	}
	if strings.Contains(string(body), "HYPERLINK") || strings.Contains(string(body), "junk-") {
		t.Errorf("a forged click's text is in the report:\n%s", body)
	}
	if len(recs) != 3 {
		t.Errorf("the report by criterion has %d rows, want 2: the signed click's criterion and none\n%s", len(recs)-1, body)
	}
	_, body = env.report(t, partners.DemoReportToken, "from=2026-11-22&to=2026-11-22&group_by=yk_tag")
	if !strings.Contains(string(body), `"yk_tag":"campaign-7"`) || strings.Contains(string(body), "junk-") {
		t.Errorf("the report by yk_tag: %s, want campaign-7 and no junk", body)
	}
}

// One client network cannot ask for reports without end, with a token or
// guessing one.
func TestReportRateLimited(t *testing.T) {
	env := newReportEnv(t)
	limited := 0
	for i := range reportLimit.Burst + 10 {
		token := partners.DemoReportToken
		if i%2 == 1 {
			token = "a guess at someone's token"
		}
		res, body := env.report(t, token, "group_by=hour")
		if res.StatusCode == http.StatusTooManyRequests {
			limited++
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if after := res.Header.Get("Retry-After"); after == "" || strconv.Itoa(e.Error.RetryAfter) != after || e.Error.Limit != "report" {
				t.Fatalf("a 429 with Retry-After %q: %s, want retry_after the same and limit report", after, body)
			}
		}
	}
	if limited == 0 {
		t.Errorf("%d report requests from one address: none refused", reportLimit.Burst+10)
	}
}

// A page-made link's criterion is no text of its client's choosing: 30
// links of one ad, each spelling its criterion another way (case,
// punctuation, spaces, soft hyphens, a plural), each beaconed and clicked
// by a reader, add one row to the partner's report by criterion, the
// criterion as the ad's criteria spell it, with every impression and
// click of them.
func TestReportOneRowForEverySpellingOfACriterion(t *testing.T) {
	env := newReportEnv(t)
	var page string
	for _, l := range env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo") {
		if queryOf(t, l).Get("adId") == "handy-bestkauf.de" {
			page = l
		}
	}
	if page == "" {
		t.Fatal("no page-made link of handy-bestkauf.de")
	}
	seps := []string{" ", "-", "  ", " ... ", "--", ", ", "\t", " / "}
	const n = 30
	spellings := map[string]bool{}
	for i := range n {
		var b strings.Builder
		for j, r := range "lg handy" {
			switch {
			case r == ' ':
				b.WriteString(seps[i%len(seps)])
			case i>>j&1 == 1:
				b.WriteString(strings.ToUpper(string(r)))
			default:
				b.WriteRune(r)
			}
			if i%5 == 1 && j == 4 {
				b.WriteString("\u00ad")
			}
		}
		if i%7 == 3 {
			b.WriteString("s")
		}
		spellings[b.String()] = true
	}
	if len(spellings) != n {
		t.Fatalf("%d spellings, want %d", len(spellings), n)
	}
	i := 0
	for s := range spellings {
		l := setParam(page, "criterionId", s)
		ip := fmt.Sprintf("198.51.%d.10", 70+i) // a /24 each: 30 readers of one /24 pass its cap on the ad
		i++
		status, ct := env.beacon(t, ip, browserUA, l)
		if status != http.StatusOK || ct[0] == "" {
			t.Fatalf("%q: beacon %d %q", s, status, ct)
		}
		env.advance(time.Second)
		readBody(t, env.do(t, l+"&ct="+url.QueryEscape(ct[0]), ip, browserUA))
	}
	clicked := 0
	if err := env.log.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		clicked++
		if !c.Billable {
			t.Errorf("a reader's click: %q, want billable", c.Reason)
		}
		return nil
	}); err != nil || clicked != n {
		t.Fatalf("%d clicks recorded (%v), want %d", clicked, err, n)
	}
	_, body := env.report(t, partners.DemoReportToken, "from=2026-11-22&to=2026-11-22&group_by=criterion")
	var report struct{ Rows []map[string]any }
	if err := json.Unmarshal(body, &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Rows) != 1 {
		t.Fatalf("the report by criterion has %d rows, want 1\n%s", len(report.Rows), body)
	}
	if r := report.Rows[0]; r["criterion"] != "lg handy" || r["clicks"] != float64(n) || r["impressions"] != float64(n) {
		t.Errorf("the report's row: %v, want lg handy, %d clicks and impressions", r, n)
	}
}

// Neither the order nor the choice of an ad's criteria a page-made link
// names is the client's to make report rows of: links of one ad, each
// naming two or three of its criteria in every order, each beaconed and
// clicked by a reader, add to the partner's report by criterion no more
// rows than the ad has criteria, each one of them as the ad writes it,
// with every impression and click of them.
func TestReportRowsOfPageLinksBoundedByTheAdsCriteria(t *testing.T) {
	env := newReportEnv(t)
	const id = "AMAZON.1.B00JVL2X1I"
	var page string
	for _, l := range env.inPageLinks(t, "q=nokia+lumia+630+handy&loc=de&api_key=demo&site_id=demo") {
		if queryOf(t, l).Get("adId") == id {
			page = l
		}
	}
	if page == "" {
		t.Fatal("no page-made link of " + id)
	}
	ad := fixtureAd(t, id)
	criteria := append(slices.Clone(ad.Keywords), ad.Model, ad.Manufacturer) // its category is a keyword too
	var texts []string
	for a := range criteria {
		for b := range criteria {
			if a != b {
				texts = append(texts, criteria[a]+" "+criteria[b])
			}
		}
	}
	texts = append(texts, criteria[2]+" "+criteria[0]+" "+criteria[3], criteria[3]+" "+criteria[2]+" "+criteria[1],
		criteria[3]+" "+criteria[1]+" "+criteria[2]+" "+criteria[0])
	for i, s := range texts {
		l := setParam(page, "criterionId", s)
		ip := fmt.Sprintf("2001:db8:%x::1", 0x200+i) // a /48 each
		status, ct := env.beacon(t, ip, browserUA, l)
		if status != http.StatusOK || ct[0] == "" {
			t.Fatalf("%q: beacon %d %q", s, status, ct)
		}
		env.advance(time.Second)
		readBody(t, env.do(t, l+"&ct="+url.QueryEscape(ct[0]), ip, browserUA))
	}
	_, body := env.report(t, partners.DemoReportToken, "from=2026-11-22&to=2026-11-22&group_by=criterion")
	var report struct {
		Rows []struct {
			Criterion   string
			Impressions int
			Billable    int `json:"billable_clicks"`
		}
	}
	if err := json.Unmarshal(body, &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Rows) > len(criteria) {
		t.Errorf("%d links make %d rows, want at most the ad's %d criteria\n%s", len(texts), len(report.Rows), len(criteria), body)
	}
	billed, shown := 0, 0
	for _, r := range report.Rows {
		if !slices.Contains(criteria, r.Criterion) {
			t.Errorf("a row of criterion %q, none of the ad's %q", r.Criterion, criteria)
		}
		billed, shown = billed+r.Billable, shown+r.Impressions
	}
	if billed != len(texts) || shown != len(texts) {
		t.Errorf("the rows count %d billable clicks and %d impressions, want %d of each\n%s", billed, shown, len(texts), body)
	}
}

// A page-made link's yk_tag is its client's to vary: a client that
// beacons and clicks links of one site with more new yk_tags a day than
// -site-daily-tags adds no more rows than that to the partner's report by
// yk_tag, the tags past it counted under none, while a tag admitted
// before keeps its row and links the server signed keep theirs.
func TestReportRowsOfPageLinksYkTagsBounded(t *testing.T) {
	env := newReportEnv(t)
	limit := config.Default().SiteDailyTags
	var page string
	for _, l := range env.inPageLinks(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo") {
		if queryOf(t, l).Get("adId") == "handy-bestkauf.de" {
			page = l
		}
	}
	if page == "" {
		t.Fatal("no page-made link of handy-bestkauf.de")
	}
	n := limit + 10
	show := func(i int, tag string) {
		t.Helper()
		l := setParam(page, "yk_tag", tag)
		ip := fmt.Sprintf("2001:db8:%x::1", 0x100+i) // a /48 each
		status, ct := env.beacon(t, ip, browserUA, l)
		if status != http.StatusOK || ct[0] == "" {
			t.Fatalf("%q: beacon %d %q", tag, status, ct)
		}
		env.advance(time.Second)
		readBody(t, env.do(t, l+"&ct="+url.QueryEscape(ct[0]), ip, browserUA))
	}
	for i := range n {
		show(i, "t"+strconv.Itoa(i))
	}
	show(n, "t0")
	for k := range 3 {
		for _, l := range env.links(t, "q=lg+handy&loc=de&api_key=demo&site_id=demo&yk_tag=signed-"+strconv.Itoa(k)) {
			readBody(t, env.do(t, l, fmt.Sprintf("2001:db8:a:%x::1", k), browserUA))
		}
	}
	_, body := env.report(t, partners.DemoReportToken, "from=2026-11-22&to=2026-11-22&group_by=yk_tag")
	var report struct {
		Rows []struct {
			YkTag       string `json:"yk_tag"`
			Impressions int
			Clicks      int
		}
	}
	if err := json.Unmarshal(body, &report); err != nil {
		t.Fatal(err)
	}
	tags, signed, untagged := 0, 0, 0
	for _, r := range report.Rows {
		switch {
		case strings.HasPrefix(r.YkTag, "signed-"):
			signed++
		case r.YkTag == "":
			untagged += r.Impressions
		default:
			tags++
			if want := 1 + btoi(r.YkTag == "t0"); r.Impressions != want || r.Clicks != want {
				t.Errorf("the row of %q: %d impressions, %d clicks, want %d of each", r.YkTag, r.Impressions, r.Clicks, want)
			}
		}
	}
	if tags != limit || untagged != n-limit || signed != 3 {
		t.Errorf("%d page-made yk_tags make %d rows and %d impressions under none, signed links %d rows; want %d, %d and 3\n%s",
			n, tags, untagged, signed, limit, n-limit, body)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
