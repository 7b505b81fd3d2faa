package parity

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/internal/wasmhost"
	"github.com/adlink/adlink/match"
)

const redirectURL = "http://localhost:8080"

// shard is one encoded index, opened natively and loaded into an instance.
type shard struct {
	bytes  []byte
	frags  [][]byte
	native *match.Index
	in     *wasmhost.Instance
}

// corpus is a catalog cut the way the server cuts it: the whole index and
// one per market, each encoded as the page receives it.
type corpus struct {
	ads     []match.Ad
	indexes *market.Set
	all     *shard
	markets map[match.Market]*shard
}

func newCorpus(t testing.TB, ads []match.Ad) *corpus {
	t.Helper()
	mi, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	c := &corpus{ads: ads, indexes: mi, markets: map[match.Market]*shard{}}
	// The module loads the shard the server serves pages, whole or in
	// fragments (shards.PageShard); the native answer is the server's own
	// index's.
	open := func(ix *match.Index) *shard {
		b, frags := shards.PageShard(ix)
		return &shard{bytes: b, frags: frags, native: ix, in: wasmhost.NewInstance(t, b, frags...)}
	}
	c.all = open(mi.All())
	for _, m := range mi.All().ShardMarkets() {
		c.markets[m] = open(mi.For(m.Country, m.Lang))
	}
	return c
}

// pick chooses the shard as the server chooses its index.
func (c *corpus) pick(country, lang string) *shard {
	if m, ok := c.all.native.ShardMarket(country, lang); ok && c.markets[m] != nil {
		return c.markets[m]
	}
	return c.all
}

// native is the server's reading of a generated request.
func native(r *testcatalog.Request) (match.Query, *contract.Links) {
	q := match.Query{Text: r.Q, Title: r.Title, Page: r.Page, Country: r.Loc, Lang: r.Lang,
		Size: r.Size, DistinctAdvertiser: r.Distinct}
	o := &contract.Links{Base: redirectURL, Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo", YkTag: r.YkTag, LogoDim: r.LogoDim}
	if r.Page {
		o.Type = contract.TypePage
	}
	if !r.Page {
		q.Text = strings.TrimSpace(q.Text)
		if q.Size == 0 {
			q.Size = match.DefaultSize
		}
		if q.DistinctAdvertiser == 0 {
			q.DistinctAdvertiser = match.DefaultDistinctAdvertiser
		}
		switch r.Dist {
		case "low":
			q.Dist = match.DistLow
		case "none":
			q.Dist = match.DistNone
		}
		if r.Op == "and" {
			q.Operator, q.Dist = match.OpAnd, match.DistNone
		}
	}
	for _, k := range r.AdTypes {
		kind, _ := match.ParseKind(k)
		q.Kinds = q.Kinds.Add(kind)
	}
	for _, f := range r.Fields {
		v, _ := match.ParseField(f)
		o.Fields |= v
	}
	return q, o
}

// want is the native answer on the shard the server would pick.
func (c *corpus) want(r *testcatalog.Request) ([]byte, *shard) {
	s := c.pick(r.Loc, r.Lang)
	q, l := native(r)
	o := l.Options()
	return s.native.AppendResponse(nil, s.native.Match(&q), &o), s
}

func demoAds(t testing.TB) []match.Ad {
	t.Helper()
	ads, err := catalog.Demo(catalog.Options{BaseURL: redirectURL})
	if err != nil {
		t.Fatal(err)
	}
	return ads
}

// checkParity compares the module's answer to the native one.
func checkParity(t *testing.T, c *corpus, reqs []testcatalog.Request) {
	t.Helper()
	ctx := context.Background()
	matched := 0
	for i := range reqs {
		r := &reqs[i]
		want, s := c.want(r)
		call := s.in.SearchJSON
		if r.Page {
			call = s.in.PageJSON
		}
		got, err := call(ctx, r.Guest(redirectURL))
		if err != nil {
			t.Fatalf("%s: %v", r.Guest(redirectURL), err)
		}
		if string(got) != string(want) {
			t.Fatalf("request %s\nmodule: %s\nnative: %s", r.Guest(redirectURL), got, want)
		}
		if !strings.HasPrefix(string(want), `{"link":[]`) {
			matched++
		}
	}
	t.Logf("%d requests equal byte for byte, %d with ads", len(reqs), matched)
	if matched == 0 && len(reqs) > 0 {
		t.Errorf("no request matched anything: the generator tests nothing")
	}
}

// icecatDir holds the real Icecat products, outside the repository.
const icecatDir = "../../../shared/data/catalog/icecat"

func TestParityGenerated(t *testing.T) {
	for _, cat := range []struct {
		name  string
		ads   func(testing.TB) []match.Ad
		pages int
		// cut: the whole catalog's shard goes to pages in fragments.
		cut bool
	}{
		{"demo", demoAds, 200, false},
		// The demo's German ads also in Switzerland, in German or French:
		// a country with two languages, whose shard answers loc alone.
		{"demo-ch", swissAds, 100, false},
		{"generated", func(testing.TB) []match.Ad { return testcatalog.Generate(3000, 7) }, 200, true},
		// Page texts over 19,000 products take 0.3 s each in the module.
		{"icecat", icecatAds, 40, true},
	} {
		t.Run(cat.name, func(t *testing.T) {
			ads := cat.ads(t)
			c := newCorpus(t, ads)
			if cut := len(c.all.frags) > 0; cut != cat.cut {
				t.Fatalf("the whole catalog's shard in %d fragments; want cut %v", len(c.all.frags), cat.cut)
			}
			t.Run("search", func(t *testing.T) { checkParity(t, c, testcatalog.Requests(ads, 1000, 1, false)) })
			t.Run("page", func(t *testing.T) { checkParity(t, c, testcatalog.Requests(ads, cat.pages, 2, true)) })
		})
	}
}

func swissAds(t testing.TB) []match.Ad {
	ads := demoAds(t)
	de := match.Market{Country: "de", Lang: "de"}
	for i := range ads {
		if slices.Contains(ads[i].Markets, de) {
			ads[i].Markets = append(slices.Clone(ads[i].Markets), match.Market{Country: "ch", Lang: []string{"de", "fr"}[i%2]})
		}
	}
	return ads
}

func icecatAds(t testing.TB) []match.Ad {
	if _, err := os.Stat(icecatDir); err != nil {
		t.Skip("skipping: no Icecat catalog at " + icecatDir + " (see ../shared/data/README.md)")
	}
	if testing.Short() || raceEnabled {
		t.Skip("skipping the Icecat catalog in -short mode and under the race detector; go test ./internal/parity runs it")
	}
	ads, err := testcatalog.Icecat(icecatDir)
	if err != nil {
		t.Fatal(err)
	}
	return ads
}

// TestParityTestdata runs every request and page of testdata/ on the demo
// catalog.
func TestParityTestdata(t *testing.T) {
	ads := demoAds(t)
	c := newCorpus(t, ads)
	reqs := testdataRequests(t)
	ctx := context.Background()
	for _, r := range reqs {
		page := r.Has("text")
		v := url.Values{"api_key": {"demo"}, "site_id": {"demo"}, "redirect_url": {redirectURL}}
		for k, vs := range r {
			v[k] = vs
		}
		s := c.pick(strings.ToLower(r.Get("loc")), strings.ToLower(r.Get("lang")))
		var q match.Query
		l := &contract.Links{Base: redirectURL, APIKey: "demo", SiteID: "demo"}
		if page {
			q = match.Query{Page: true, Title: r.Get("title"), Text: r.Get("text"),
				Country: strings.ToLower(r.Get("loc")), Lang: strings.ToLower(r.Get("lang"))}
			l.Type = contract.TypePage
		} else {
			// Search lines are checked against the server in TestParityHTTP.
			continue
		}
		o := l.Options()
		want := s.native.AppendResponse(nil, s.native.Match(&q), &o)
		got, err := s.in.PageJSON(ctx, v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("page %q\nmodule: %s\nnative: %s", r.Get("title"), got, want)
		}
	}
}

// testdataRequests reads testdata/search.txt (one query string per line)
// and testdata/pages/*.txt (a title line, then the page's text).
func testdataRequests(t testing.TB) []url.Values {
	t.Helper()
	var out []url.Values
	f, err := os.Open("testdata/search.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		v, err := url.ParseQuery(line)
		if err != nil {
			t.Fatalf("testdata/search.txt: %q: %v", line, err)
		}
		out = append(out, v)
	}
	pages, _ := filepath.Glob("testdata/pages/*.txt")
	if len(pages) == 0 {
		t.Fatal("no testdata/pages/*.txt")
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		title, text, _ := strings.Cut(string(b), "\n")
		out = append(out, url.Values{"title": {title}, "text": {text}, "loc": {"de"}, "lang": {"de"}})
	}
	return out
}

// TestParityHTTP asks the backend's /v2/search/link the testdata queries
// and a sample of generated ones, and the module the same: equal bytes.
func TestParityHTTP(t *testing.T) {
	ads := demoAds(t)
	c := newCorpus(t, ads)
	srv := httptest.NewServer(newBackend(t, ads))
	defer srv.Close()
	ctx := context.Background()
	var reqs []url.Values
	for _, v := range testdataRequests(t) {
		if !v.Has("text") {
			reqs = append(reqs, v)
		}
	}
	for _, r := range testcatalog.Requests(ads, 40, 3, false) {
		reqs = append(reqs, r.Values())
	}
	// Error bodies quoting a client's value: characters JSON escapes and
	// JavaScript does not allow raw (U+2028, U+2029), HTML's <>&, a
	// control byte.
	for _, bad := range []url.Values{
		{"q": {"handy"}, "lang": {"x\u2028"}}, {"q": {"handy"}, "loc": {"d\u2029"}},
		{"q": {"handy"}, "logo.dim": {"<b>&amp;"}}, {"q": {"handy"}, "fields": {"price,\x01x\u2028y"}},
		{"q": {"handy"}, "ad_type": {"ü\u2028"}},
		// Two letters that name no country; leading zeros, however many.
		{"q": {"handy"}, "loc": {"xx"}}, {"q": {"handy"}, "size": {"0000000002"}, "distinct_advertiser": {"000000000001"}},
		{"q": {"handy"}, "size": {"000000000000000000000000051"}},
	} {
		bad.Set("redirect_url", "http://localhost:8080")
		reqs = append(reqs, bad)
	}
	for _, v := range reqs {
		v.Set("api_key", "demo")
		v.Set("site_id", "demo")
		resp, err := http.Get(srv.URL + "/v2/search/link?" + v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", v.Encode(), resp.StatusCode, body)
		}
		s := c.pick(strings.ToLower(v.Get("loc")), strings.ToLower(v.Get("lang")))
		v.Set("redirect_url", redirectURL)
		got, err := s.in.SearchJSON(ctx, v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != unsigned(body) {
			t.Errorf("%s\nmodule: %s\nserver: %s", v.Encode(), got, body)
		}
	}
	// Query strings net/url refuses: the module refuses them alike.
	for _, raw := range []string{"q=%zz", "q=handy%", "q=%4", "%g1=x&q=%zz", "q=a;b", "q=%zz&yk_tag=a;b"} {
		raw += "&api_key=demo&site_id=demo"
		body := get(t, srv.URL+"/v2/search/link?"+raw, http.StatusBadRequest)
		got, err := c.pick("", "").in.SearchJSON(ctx, raw+"&redirect_url="+url.QueryEscape(redirectURL))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(body) || !strings.Contains(string(got), "malformed") {
			t.Errorf("%s\nmodule: %s\nserver: %s", raw, got, body)
		}
	}
}

// get returns the body of a GET of u, which must answer status.
func get(t *testing.T, u string, status int) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s: %d %s", u, resp.StatusCode, body)
	}
	return body
}

// signature is the decision id, exp and sig the server adds to each click
// URL it makes; the module has no key and leaves them out.
var signature = regexp.MustCompile(`\\u0026d=[A-Za-z0-9_-]+\\u0026exp=[0-9]+\\u0026sig=[A-Za-z0-9._-]+`)

// unsigned is a server answer without its click URLs' signatures, as the
// module writes it.
func unsigned(body []byte) string { return signature.ReplaceAllString(string(body), "") }

// TestParityTrustRules: pages and searches that the rules on numbers and on
// a language without a country decide answer alike in the module and
// natively: model numbers beside their brand and alone, numbers inside
// dates, times and prices, and a language alone that names one market,
// several or none.
func TestParityTrustRules(t *testing.T) {
	c := newCorpus(t, demoAds(t))
	texts := []string{
		"Das OnePlus 12 und das Fairphone 5 im Test; das Xiaomi 14 auch.",
		"Am 12.5.2024 um 12:46 kostete es £12.6m, Update 5.3, UTC+12, 1,5 Jahre, Praze 5 und 14 Tage.",
		"OnePlus 12.5 oder Fairphone 5:30 Uhr, Xiaomi 14% mehr, Apple iPhone 15 Pro und Samsung Galaxy S24.",
	}
	var reqs []testcatalog.Request
	for _, text := range texts {
		for _, m := range [][2]string{{"de", ""}, {"", "de"}, {"", "en"}, {"", "cs"}, {"", ""}, {"gb", "en"}} {
			reqs = append(reqs,
				testcatalog.Request{Page: true, Q: text, Title: "Handys 2024", Loc: m[0], Lang: m[1], Fields: []string{"price"}},
				testcatalog.Request{Q: text[:min(len(text), 60)], Loc: m[0], Lang: m[1], Dist: "low"})
		}
	}
	checkParity(t, c, reqs)
}
