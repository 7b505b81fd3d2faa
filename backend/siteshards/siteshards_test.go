package siteshards_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/market"
	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/backend/siteshards"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// clock is a test's clock: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is a generated catalog's German market.
type fixture struct {
	ads []match.Ad
	mi  *market.Set
	de  *match.Index
}

var de = match.Market{Country: "de", Lang: "de"}

func newFixture(t testing.TB, n int) *fixture {
	t.Helper()
	ads := testcatalog.Generate(n, 5)
	mi, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	ix := mi.For("de", "de")
	if ix == nil {
		t.Fatal("no de-DE market")
	}
	return &fixture{ads: ads, mi: mi, de: ix}
}

func (f *fixture) request(version, site string) siteshards.Request {
	return siteshards.Request{Version: version, Index: f.de, MarketBytes: 1 << 40, Site: site, Country: "de", Lang: "de"}
}

// page is an analysed page of a site about one category: the titles of
// some of its ads, as a review would name them.
type page struct {
	url         string
	title, text string
}

// categoryPages are pages about the categories of the German market that
// hold the fewest ads of the highest bids (so that no head has them by
// chance): n pages, one category each, in turn.
func (f *fixture) categoryPages(t testing.TB, site string, cats []string, n int) []page {
	t.Helper()
	var out []page
	for k := range n {
		cat := cats[k%len(cats)]
		var titles []string
		for i := 0; i < f.de.Len() && len(titles) < 3; i++ {
			if a := f.de.Ad(i); a.Category == cat {
				titles = append(titles, a.Title)
			}
		}
		out = append(out, page{url: fmt.Sprintf("https://%s/p/%d", site, k), title: cat,
			text: "Im Test: " + strings.Join(titles, ". ") + "."})
	}
	return out
}

// lowBidCategories are categories of the German market whose best bid is
// among the lowest: a head by bid leaves them out.
func (f *fixture) lowBidCategories(n int) []string {
	best := map[string]int64{}
	for i := range f.de.Len() {
		a := f.de.Ad(i)
		if a.Category != "" {
			best[a.Category] = max(best[a.Category], a.BidMicros)
		}
	}
	cats := make([]string, 0, len(best))
	for c := range best {
		cats = append(cats, c)
	}
	slices.SortFunc(cats, func(a, b string) int {
		if c := cmp.Compare(best[a], best[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return cats[:min(n, len(cats))]
}

func observe(svc *siteshards.Service, f *fixture, site string, pages []page) {
	for _, p := range pages {
		svc.Observe(site, p.url, f.de, match.Query{Page: true, Title: p.title, Text: p.text, Country: "de"})
	}
}

// settle asks for a site's shard until what the asking queued is built.
func settle(t testing.TB, svc *siteshards.Service, r siteshards.Request) *siteshards.Shard {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		svc.Pick(ctx, r)
		if err := svc.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sh := svc.Pick(ctx, r)
	if sh == nil {
		t.Fatal("no shard")
	}
	return sh
}

// ids opens a shard as a page does, every fragment loaded, and returns its
// ads' ids.
func ids(t testing.TB, sh *siteshards.Shard) []string {
	t.Helper()
	ix, err := match.Open(sh.Blob.Bytes(shards.Identity))
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range sh.Fragments {
		if err := ix.LoadFragment(k, f.Bytes(shards.Identity)); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]string, ix.Len())
	for i := range out {
		out[i] = ix.Ad(i).ID
	}
	return out
}

func TestBudgetHoldsForALargeCatalog(t *testing.T) {
	f := newFixture(t, 20_000)
	const budget = 60_000
	svc := siteshards.New(siteshards.Options{Budget: budget, BuildRate: 1000, HeadWait: time.Hour})
	defer svc.Close()
	site := "s"
	head := settle(t, svc, f.request("v1", "new")) // before any page: by bid
	observe(svc, f, site, f.categoryPages(t, site, f.lowBidCategories(4), 8))
	sh := settle(t, svc, f.request("v1", site))
	for _, x := range []*siteshards.Shard{head, sh} {
		n := x.Blob.Size(shards.Zstd)
		for _, fr := range x.Fragments {
			n += fr.Size(shards.Zstd)
		}
		if n > budget || n != x.Bytes {
			t.Errorf("shard of %d ads: %d bytes with zstd (says %d); budget %d", x.Ads, n, x.Bytes, budget)
		}
		if got := len(ids(t, x)); got != x.Ads || got < 100 || got >= f.de.Len() {
			t.Errorf("shard holds %d ads, says %d, of the market's %d", got, x.Ads, f.de.Len())
		}
		// Well used: within 10% of the budget.
		if n < budget*9/10 {
			t.Errorf("shard of %d bytes leaves more than a tenth of the budget %d unused", n, budget)
		}
	}
	if head.Blob.SHA256 == sh.Blob.SHA256 {
		t.Error("the site's shard is the market's head")
	}
}

func TestNewSiteGetsTheHead(t *testing.T) {
	f := newFixture(t, 4000)
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000})
	defer svc.Close()
	// No page analysed anywhere: the ads by bid, then the catalog's order.
	head := svc.Pick(context.Background(), f.request("v1", "new"))
	if head == nil || !head.Head {
		t.Fatalf("a new site's shard: %+v; want the head", head)
	}
	order := make([]int, f.de.Len())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(f.de.Ad(b).BidMicros, f.de.Ad(a).BidMicros) })
	var want []string
	for _, i := range order[:head.Ads] {
		want = append(want, f.de.Ad(i).ID)
	}
	slices.Sort(want)
	got := ids(t, head)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("head without analyses: %d ads, not the %d of the highest bids", len(got), len(want))
	}

	// Once pages of the market are analysed, a new catalog's head holds
	// the ads of their criteria, though their bids are low.
	svc2 := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000})
	defer svc2.Close()
	cats := f.lowBidCategories(2)
	observe(svc2, f, "other", f.categoryPages(t, "other", cats, 4))
	head2 := svc2.Pick(context.Background(), f.request("v1", "new"))
	if head2 == nil || !head2.Head {
		t.Fatalf("a new site's shard: %+v; want the head", head2)
	}
	in := map[string]bool{}
	for _, id := range ids(t, head2) {
		in[id] = true
	}
	for i := range f.de.Len() {
		if a := f.de.Ad(i); a.Category == cats[0] && !in[a.ID] && slices.Contains(want, a.ID) {
			t.Errorf("ad %s of the market's analysed category %q is not in its head", a.ID, cats[0])
		}
	}
	found := false
	for i := range f.de.Len() {
		if a := f.de.Ad(i); a.Category == cats[0] && in[a.ID] && !slices.Contains(want, a.ID) {
			found = true
		}
	}
	if !found {
		t.Errorf("the head holds no ad of the analysed category %q beyond the bids' head", cats[0])
	}
}

func TestSiteShardFollowsItsPagesThenStays(t *testing.T) {
	f := newFixture(t, 4000)
	clk := &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Now: clk.now, Debounce: time.Minute})
	defer svc.Close()
	r := f.request("v1", "s")
	head := settle(t, svc, r)
	if !head.Head {
		t.Fatal("a site with no analysed page does not get the head")
	}
	cats := f.lowBidCategories(3)
	pages := f.categoryPages(t, "s", cats, 6)
	observe(svc, f, "s", pages)
	first := settle(t, svc, r)
	if first.Head || first.Blob.SHA256 == head.Blob.SHA256 {
		t.Fatal("the site's shard did not change once its pages were analysed")
	}
	// It holds the ads its pages matched.
	got := map[string]bool{}
	for _, id := range ids(t, first) {
		got[id] = true
	}
	for _, p := range pages {
		q := match.Query{Page: true, Title: p.title, Text: p.text, Country: "de", Size: 3}
		for _, h := range f.de.Match(&q) {
			if id := f.de.Ad(h.Ad).ID; !got[id] {
				t.Errorf("page %s: ad %s, top 3 on the server, is not in the site's shard", p.url, id)
			}
		}
	}
	// Nothing changes: the same shard, however often asked, even once
	// the same pages are seen again, and once time passes.
	observe(svc, f, "s", pages)
	for range 3 {
		clk.add(time.Hour)
		if again := settle(t, svc, r); again.Blob.SHA256 != first.Blob.SHA256 {
			t.Fatalf("the site's shard changed from %s to %s with nothing new", first.Blob.SHA256, again.Blob.SHA256)
		}
	}
	if b := svc.Stats().Builds; b != 1 {
		t.Errorf("%d builds of one site's shard; want 1", b)
	}
	// Pages on another subject change its top set: a new shard, once the
	// debounce has passed.
	observe(svc, f, "s", f.categoryPages(t, "s2", f.lowBidCategories(8)[5:], 40))
	clk.add(2 * time.Minute)
	if next := settle(t, svc, r); next.Blob.SHA256 == first.Blob.SHA256 {
		t.Error("the site's shard did not follow its new pages")
	}
}

func TestEqualProfilesShareAShard(t *testing.T) {
	f := newFixture(t, 4000)
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000})
	defer svc.Close()
	cats := f.lowBidCategories(3)
	pages := f.categoryPages(t, "x", cats, 6)
	observe(svc, f, "a", pages)
	observe(svc, f, "b", pages)
	a := settle(t, svc, f.request("v1", "a"))
	b := settle(t, svc, f.request("v1", "b"))
	if a.Blob.SHA256 != b.Blob.SHA256 || a != b {
		t.Errorf("two sites with the same pages got shards %s and %s", a.Blob.SHA256, b.Blob.SHA256)
	}
	if st := svc.Stats(); st.Builds != 1 {
		t.Errorf("%d site shards built for two equal profiles; want 1", st.Builds)
	}
	if svc.Shard(context.Background(), a.Blob.SHA256) != a {
		t.Error("the shared shard is not served by its address")
	}
}

func TestCatalogRefreshRebuilds(t *testing.T) {
	f := newFixture(t, 4000)
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000})
	defer svc.Close()
	cats := f.lowBidCategories(3)
	pages := f.categoryPages(t, "s", cats, 6)
	observe(svc, f, "s", pages)
	old := settle(t, svc, f.request("v1", "s"))

	// The next catalog has a new ad of the site's first category, with the
	// highest bid, and a changed title on another.
	ads := slices.Clone(f.ads)
	var proto match.Ad
	for _, a := range ads {
		if a.Category == cats[0] && slices.Contains(a.Markets, de) {
			proto = a
			break
		}
	}
	proto.ID, proto.GTIN, proto.BidMicros = "NEW.1.AD", "", 3_000_000
	proto.Title = "Neu: " + proto.Title
	ads = append(ads, proto)
	mi, err := market.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	f2 := &fixture{ads: ads, mi: mi, de: mi.For("de", "de")}
	next := settle(t, svc, f2.request("v2", "s"))
	if next.Head || next.Blob.SHA256 == old.Blob.SHA256 {
		t.Fatal("the site's shard was not rebuilt for the new catalog")
	}
	if !slices.Contains(ids(t, next), "NEW.1.AD") {
		t.Error("the rebuilt shard lacks the new catalog's ad of the site's category")
	}
	// The old catalog's shard is still served to pages that hold its
	// manifest, while the cache keeps it.
	if svc.Shard(context.Background(), old.Blob.SHA256) == nil {
		t.Error("the old catalog's site shard is gone at once")
	}
}

// TestFloodIsBounded: a site's key is public, and any page of its domains
// can be analysed. Junk pages by the thousand, and sites by the hundred,
// cost a bounded number of builds, shards, bytes and profiles.
func TestFloodIsBounded(t *testing.T) {
	f := newFixture(t, 4000)
	clk := &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	const burst, maxShards, maxSites, window = 3, 4, 50, 16
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, Now: clk.now, Debounce: time.Hour,
		BuildRate: 1e-9, BuildBurst: burst, MaxShards: maxShards, MaxSites: maxSites, PagesPerSite: window})
	defer svc.Close()
	ctx := context.Background()
	cats := f.lowBidCategories(60)
	// One site, a thousand pages each on another subject, asking for its
	// manifest after each: one build within the debounce.
	r := f.request("v1", "junk")
	settle(t, svc, r) // the head
	for k := range 1000 {
		observe(svc, f, "junk", f.categoryPages(t, fmt.Sprintf("junk%d", k), []string{cats[k%len(cats)]}, 1))
		svc.Pick(ctx, r)
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if b := svc.Stats().Builds; b != 1 {
		t.Errorf("a flood of one site's pages built %d shards within the debounce; want 1", b)
	}
	// Two hundred sites, each on its own subject: the build rate's burst,
	// then nothing until it refills; the rest get the head.
	for k := range 200 {
		site := fmt.Sprintf("site%d", k)
		observe(svc, f, site, f.categoryPages(t, site, []string{cats[k%len(cats)], cats[(k/len(cats)+k+1)%len(cats)]}, 2))
		if sh := svc.Pick(ctx, f.request("v1", site)); sh == nil {
			t.Fatalf("site %d got no shard", k)
		}
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := svc.Stats()
	if st.Builds > burst {
		t.Errorf("%d site shards built for a flood of sites; the rate allows %d", st.Builds, burst)
	}
	if st.Refused == 0 {
		t.Error("no build was refused")
	}
	if st.Shards > maxShards {
		t.Errorf("%d shards kept; at most %d", st.Shards, maxShards)
	}
	if st.Sites > maxSites {
		t.Errorf("%d site profiles kept; at most %d", st.Sites, maxSites)
	}
	if st.Bytes <= 0 || st.Bytes > int64(maxShards)*3*20_000*8 {
		t.Errorf("%d bytes of shards kept", st.Bytes)
	}
}

// TestCacheBoundsBytes: the least recently used shard goes when the bytes
// are over.
func TestCacheBoundsBytes(t *testing.T) {
	f := newFixture(t, 4000)
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000, BuildRate: 1000, MaxBytes: 150_000})
	defer svc.Close()
	cats := f.lowBidCategories(40)
	settle(t, svc, f.request("v1", "new")) // the head, before any page
	var built []*siteshards.Shard
	for k := range 6 {
		site := fmt.Sprintf("s%d", k)
		observe(svc, f, site, f.categoryPages(t, site, []string{cats[(2*k)%len(cats)], cats[(2*k+1)%len(cats)]}, 4))
		built = append(built, settle(t, svc, f.request("v1", site)))
	}
	st := svc.Stats()
	if st.Bytes > 150_000 {
		t.Errorf("%d bytes kept; at most 150000", st.Bytes)
	}
	if built[0].Head {
		t.Fatal("the first site got the head")
	}
	if svc.Shard(context.Background(), built[0].Blob.SHA256) != nil {
		t.Error("the least recently used shard is still kept over the bytes")
	}
	if svc.Shard(context.Background(), built[5].Blob.SHA256) == nil {
		t.Error("the shard built last is gone")
	}
}

// TestSiteShardIsAnOrdinaryShard: the page's matcher on a site shard
// answers as the server would from the same ads.
func TestSiteShardIsAnOrdinaryShard(t *testing.T) {
	f := newFixture(t, 4000)
	svc := siteshards.New(siteshards.Options{HeadWait: time.Hour, Budget: 20_000})
	defer svc.Close()
	pages := f.categoryPages(t, "s", f.lowBidCategories(3), 6)
	observe(svc, f, "s", pages)
	sh := settle(t, svc, f.request("v1", "s"))
	page, err := match.Open(sh.Blob.Bytes(shards.Identity))
	if err != nil {
		t.Fatal(err)
	}
	o := match.LinkOptions{}
	matched := 0
	for _, p := range pages {
		q := match.Query{Page: true, Title: p.title, Text: p.text, Country: "de"}
		want := sh.Index.AppendResponse(nil, sh.Index.Match(&q), &o)
		hits := page.Match(&q)
		for _, k := range page.Missing(hits) {
			if err := page.LoadFragment(k, sh.Fragments[k].Bytes(shards.Identity)); err != nil {
				t.Fatal(err)
			}
		}
		if got := page.AppendResponse(nil, hits, &o); string(got) != string(want) {
			t.Errorf("page %s: shard %s\nserver %s", p.url, got, want)
		}
		if len(hits) > 0 {
			matched++
		}
	}
	if matched == 0 {
		t.Error("no page matched: the test tests nothing")
	}
}

func TestOffAndSmallMarkets(t *testing.T) {
	f := newFixture(t, 400)
	ctx := context.Background()
	off := siteshards.New(siteshards.Options{Budget: -1})
	defer off.Close()
	if sh := off.Pick(ctx, f.request("v1", "s")); sh != nil {
		t.Error("site shards that are off gave a shard")
	}
	svc := siteshards.New(siteshards.Options{})
	defer svc.Close()
	r := f.request("v1", "s")
	r.MarketBytes = siteshards.DefaultBudget
	if sh := svc.Pick(ctx, r); sh != nil {
		t.Error("a market whose own shard fits the budget got a site shard")
	}
	var none *siteshards.Service
	if none.Pick(ctx, f.request("v1", "s")) != nil || none.Shard(context.Background(), "x") != nil {
		t.Error("a nil service gave a shard")
	}
	none.Observe("s", "https://s/p", f.de, match.Query{Page: true, Text: "x"})
}

// TestProfilesKeptAcrossRestarts: a server that stops and starts again
// gives a site the shard its profile chose before, not the head.
func TestProfilesKeptAcrossRestarts(t *testing.T) {
	f := newFixture(t, 4000)
	file := filepath.Join(t.TempDir(), siteshards.ProfilesFile)
	o := siteshards.Options{HeadWait: time.Hour, Budget: 20_000, File: file}
	svc := siteshards.New(o)
	settle(t, svc, f.request("v1", "new")) // the head, before any page
	observe(svc, f, "s", f.categoryPages(t, "s", f.lowBidCategories(3), 6))
	before := settle(t, svc, f.request("v1", "s"))
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	// The head is built first again, from the kept profiles.
	again := siteshards.New(o)
	defer again.Close()
	after := settle(t, again, f.request("v1", "s"))
	if after.Head || after.Blob.SHA256 != before.Blob.SHA256 {
		t.Errorf("after a restart the site got %s (head %v), before %s", after.Blob.SHA256, after.Head, before.Blob.SHA256)
	}

	// A file that does not parse: the profiles start empty.
	if err := os.WriteFile(file, []byte(`[{"site":`), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := siteshards.New(o)
	defer broken.Close()
	if st := broken.Stats(); st.Sites != 0 {
		t.Errorf("%d profiles read from a broken file", st.Sites)
	}
}

// TestProfilesKeptAcrossCrashes: while serving, the profiles are written
// every SaveEvery once pages taught something, so a server that dies
// without stopping gives a site the shard its profile chose; with nothing
// new learnt, nothing is written.
func TestProfilesKeptAcrossCrashes(t *testing.T) {
	f := newFixture(t, 4000)
	file := filepath.Join(t.TempDir(), siteshards.ProfilesFile)
	o := siteshards.Options{HeadWait: time.Hour, Budget: 20_000, File: file, SaveEvery: 20 * time.Millisecond}
	svc := siteshards.New(o)
	defer svc.Close() // only once the test is over: the "crashed" server's file is read before
	settle(t, svc, f.request("v1", "new"))
	time.Sleep(100 * time.Millisecond)
	if st := svc.Stats(); st.Saves != 0 {
		t.Errorf("%d saves with nothing learnt", st.Saves)
	}
	observe(svc, f, "s", f.categoryPages(t, "s", f.lowBidCategories(3), 6))
	before := settle(t, svc, f.request("v1", "s"))
	for deadline := time.Now().Add(10 * time.Second); svc.Stats().Saves == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the profiles were not written in 10 s")
		}
	}
	saves := svc.Stats().Saves
	time.Sleep(100 * time.Millisecond)
	if st := svc.Stats(); st.Saves != saves {
		t.Errorf("%d saves, then %d with nothing new learnt", saves, st.Saves)
	}

	again := siteshards.New(o)
	defer again.Close()
	after := settle(t, again, f.request("v1", "s"))
	if after.Head || after.Blob.SHA256 != before.Blob.SHA256 {
		t.Errorf("after a crash the site got %s (head %v), before %s", after.Blob.SHA256, after.Head, before.Blob.SHA256)
	}
}
