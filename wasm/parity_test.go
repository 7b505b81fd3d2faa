package main

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/partners"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/store"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

const redirectURL = "http://localhost:8080"

// shard is one encoded index, opened natively and loaded into an instance.
type shard struct {
	bytes  []byte
	frags  [][]byte
	native *match.Index
	in     *instance
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
		return &shard{bytes: b, frags: frags, native: ix, in: newInstance(t, b, frags...)}
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

// request is one generated (query, options) pair, held apart from any
// parser so that it checks the module's parsing too.
type request struct {
	page                 bool
	q, title             string
	loc, lang            string
	op, dist             string
	adTypes              []string
	size, distinct       int
	fields               []string
	logoDim, ykTag       string
	explicitOp, locUpper bool
}

func (r *request) values() url.Values {
	v := url.Values{"api_key": {"demo"}, "site_id": {"demo"}}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	if r.page {
		set("text", r.q)
		set("title", r.title)
	} else {
		v.Set("q", r.q)
	}
	loc := r.loc
	if r.locUpper {
		loc = strings.ToUpper(loc)
	}
	set("loc", loc)
	set("lang", r.lang)
	if r.explicitOp || r.op == "and" {
		set("q_operator", r.op)
	}
	set("ctx.dist", r.dist)
	set("ad_type", strings.Join(r.adTypes, ","))
	if r.size > 0 {
		v.Set("size", strconv.Itoa(r.size))
	}
	if r.distinct > 0 {
		v.Set("distinct_advertiser", strconv.Itoa(r.distinct))
	}
	set("fields", strings.Join(r.fields, ","))
	set("logo.dim", r.logoDim)
	set("yk_tag", r.ykTag)
	return v
}

// guest is the module's request: the endpoint's query plus redirect_url.
func (r *request) guest() string {
	v := r.values()
	v.Set("redirect_url", redirectURL)
	return v.Encode()
}

// native is the server's reading of the same request.
func (r *request) native() (match.Query, *contract.Links) {
	q := match.Query{Text: r.q, Title: r.title, Page: r.page, Country: r.loc, Lang: r.lang,
		Size: r.size, DistinctAdvertiser: r.distinct}
	o := &contract.Links{Base: redirectURL, Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo", YkTag: r.ykTag, LogoDim: r.logoDim}
	if r.page {
		o.Type = contract.TypePage
	}
	if !r.page {
		q.Text = strings.TrimSpace(q.Text)
		if q.Size == 0 {
			q.Size = match.DefaultSize
		}
		if q.DistinctAdvertiser == 0 {
			q.DistinctAdvertiser = match.DefaultDistinctAdvertiser
		}
		switch r.dist {
		case "low":
			q.Dist = match.DistLow
		case "none":
			q.Dist = match.DistNone
		}
		if r.op == "and" {
			q.Operator, q.Dist = match.OpAnd, match.DistNone
		}
	}
	for _, k := range r.adTypes {
		kind, _ := match.ParseKind(k)
		q.Kinds = q.Kinds.Add(kind)
	}
	for _, f := range r.fields {
		v, _ := match.ParseField(f)
		o.Fields |= v
	}
	return q, o
}

// want is the native answer on the shard the server would pick.
func (c *corpus) want(r *request) ([]byte, *shard) {
	s := c.pick(r.loc, r.lang)
	q, l := r.native()
	o := l.Options()
	return s.native.AppendResponse(nil, s.native.Match(&q), &o), s
}

// generate makes n requests over the catalog's own words, so most of them
// match something, with every option drawn at random.
func generate(ads []match.Ad, n int, seed uint64, page bool) []request {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var words []string
	for _, a := range ads {
		words = append(words, strings.Fields(a.Title)...)
		words = append(words, a.Keywords...)
		words = append(words, a.Manufacturer, a.Model, a.Category)
	}
	words = slices.DeleteFunc(words, func(s string) bool { return s == "" })
	words = append(words, "günstig", "kaufen", "the", "test", "Ärger", "ÜBER", "cheap")
	var markets []match.Market
	for _, a := range ads {
		markets = append(markets, a.Markets...)
	}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	phrase := func(n int) string {
		var b []string
		for range n {
			b = append(b, pick(words))
		}
		return strings.Join(b, " ")
	}
	fieldNames := contract.SearchFieldNames
	if page {
		fieldNames = contract.PageFieldNames
	}
	out := make([]request, n)
	for i := range out {
		r := &out[i]
		r.page = page
		if page {
			r.title = phrase(rng.IntN(4))
			r.q = phrase(20 + rng.IntN(200))
		} else {
			r.q = phrase(1 + rng.IntN(4))
		}
		if len(markets) > 0 && rng.IntN(4) > 0 {
			m := markets[rng.IntN(len(markets))]
			r.loc, r.lang = m.Country, m.Lang
			if rng.IntN(5) == 0 {
				r.lang = ""
			}
			r.locUpper = rng.IntN(6) == 0
		}
		if !page {
			r.dist = []string{"", "high", "low", "none"}[rng.IntN(4)]
			if rng.IntN(4) == 0 {
				r.op, r.explicitOp = []string{"or", "and"}[rng.IntN(2)], true
				if r.op == "and" && r.dist != "none" {
					r.dist = ""
				}
			}
			if rng.IntN(2) == 0 {
				r.size = 1 + rng.IntN(match.MaxSize)
			}
			if rng.IntN(3) == 0 {
				r.distinct = 1 + rng.IntN(match.MaxDistinctAdvertiser)
			}
			if rng.IntN(5) == 0 {
				r.ykTag = "tag_" + strconv.Itoa(rng.IntN(1000)) + ":x-1"
			}
		}
		kinds := contract.SearchKindNames
		if page {
			kinds = contract.PageKindNames
		}
		for _, k := range kinds {
			if rng.IntN(4) == 0 {
				r.adTypes = append(r.adTypes, k)
			}
		}
		for _, f := range fieldNames {
			if rng.IntN(3) == 0 {
				r.fields = append(r.fields, f)
			}
		}
		if rng.IntN(4) == 0 {
			r.logoDim = pick(match.LogoDims)
		}
	}
	return out
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
func checkParity(t *testing.T, c *corpus, reqs []request) {
	t.Helper()
	ctx := context.Background()
	matched := 0
	for i := range reqs {
		r := &reqs[i]
		want, s := c.want(r)
		call := s.in.searchJSON
		if r.page {
			call = s.in.pageJSON
		}
		got, err := call(ctx, r.guest())
		if err != nil {
			t.Fatalf("%s: %v", r.guest(), err)
		}
		if string(got) != string(want) {
			t.Fatalf("request %s\nmodule: %s\nnative: %s", r.guest(), got, want)
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
const icecatDir = "../../shared/data/catalog/icecat"

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
			t.Run("search", func(t *testing.T) { checkParity(t, c, generate(ads, 1000, 1, false)) })
			t.Run("page", func(t *testing.T) { checkParity(t, c, generate(ads, cat.pages, 2, true)) })
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
		t.Skip("skipping the Icecat catalog in -short mode and under the race detector; go test ./wasm runs it")
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
		got, err := s.in.pageJSON(ctx, v.Encode())
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
	srv := httptest.NewServer(newBackend(t, c.indexes))
	defer srv.Close()
	ctx := context.Background()
	var reqs []url.Values
	for _, v := range testdataRequests(t) {
		if !v.Has("text") {
			reqs = append(reqs, v)
		}
	}
	for _, r := range generate(ads, 40, 3, false) {
		reqs = append(reqs, r.values())
	}
	// Error bodies quoting a client's value: characters JSON escapes and
	// JavaScript does not allow raw (U+2028, U+2029), HTML's <>&, a
	// control byte.
	for _, bad := range []url.Values{
		{"q": {"handy"}, "lang": {"x\u2028"}}, {"q": {"handy"}, "loc": {"d\u2029"}},
		{"q": {"handy"}, "logo.dim": {"<b>&amp;"}}, {"q": {"handy"}, "fields": {"price,\x01x\u2028y"}},
		{"q": {"handy"}, "ad_type": {"ü\u2028"}},
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
		got, err := s.in.searchJSON(ctx, v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(body) {
			t.Errorf("%s\nmodule: %s\nserver: %s", v.Encode(), got, body)
		}
	}
	// Query strings net/url refuses: the module refuses them alike.
	for _, raw := range []string{"q=%zz", "q=handy%", "q=%4", "%g1=x&q=%zz", "q=a;b", "q=%zz&yk_tag=a;b"} {
		raw += "&api_key=demo&site_id=demo"
		body := get(t, srv.URL+"/v2/search/link?"+raw, http.StatusBadRequest)
		got, err := c.pick("", "").in.searchJSON(ctx, raw+"&redirect_url="+url.QueryEscape(redirectURL))
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

// newBackend is the real API handler over the corpus's indexes.
func newBackend(t testing.TB, ix market.Indexes) http.Handler {
	t.Helper()
	cfg := config.Default()
	cfg.RedirectURL = redirectURL
	reg, err := partners.NewStatic([]partners.Partner{partners.Demo()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cl, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewServer(api.Deps{Config: cfg, Indexes: ix, Partners: reg, Clicks: cl})
}
