package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// TestCriterionOfTheCatalogBeforeCountsForAClickToken: a page matched on
// the shards of the catalog before a refresh that changed an ad's
// keywords makes links naming the old ones. For a click token's TTL
// after the refresh, across a later refresh that changes no criterion,
// such a link still gets its token at the beacon, and its click bills,
// its criterion as the ad's criteria before spelled it; after it, it gets
// none. Another ad's criterion, never this ad's, gets none, before or
// after.
func TestCriterionOfTheCatalogBeforeCountsForAClickToken(t *testing.T) {
	ads := testcatalog.Generate(200, 5)
	ad := ads[0]
	if len(ad.Keywords) == 0 {
		t.Fatal("the generated ad has no keywords")
	}
	old := ad.Keywords[0]
	changed := slices.Clone(ads)
	// The ad's text loses the old keyword's words too: a link naming
	// words of the ad's text gets its token under no criterion, as a
	// looser search match names them (TestLooseMatchLinkRecordsNoCriterion).
	changed[0].Keywords = []string{"grünkohlpresse"}
	changed[0].Title, changed[0].Description, changed[0].Manufacturer, changed[0].Model, changed[0].Category =
		"Grünkohlpresse", "", "", "", ""
	repriced := slices.Clone(changed)
	for i := range repriced {
		if repriced[i].Currency != "" {
			repriced[i].PriceCents += 100
		}
	}
	// another is a real criterion of another ad, in each catalog, and
	// never one of ad's.
	var another string
	ixs := make([]*match.Index, 0, 2)
	for _, c := range [][]match.Ad{ads, changed} {
		ix, err := match.Build(c)
		if err != nil {
			t.Fatal(err)
		}
		ixs = append(ixs, ix)
	}
	if ixs[1].HasWords(0, old) {
		t.Fatalf("the changed ad's text still has the words of %q", old)
	}
	for j := 1; j < len(ads) && another == ""; j++ {
		for _, kw := range ads[j].Keywords {
			if ixs[0].IsCriterionOf(j, kw) && ixs[1].IsCriterionOf(j, kw) && !ixs[0].IsCriterionOf(0, kw) && !ixs[1].IsCriterionOf(0, kw) {
				another = kw
				break
			}
		}
	}
	if another == "" {
		t.Fatal("no other ad has a criterion that is not the ad's")
	}

	a, cfg, path, clock, keys := feedApp(t, ads)

	// link is a click URL as the page makes it: the site token, no
	// signature.
	link := func(criterion string) string {
		v := url.Values{"type": {"intext"}, "adId": {ad.ID}, "adType": {ad.Kind.String()}, "api_key": {"demo"},
			"site_id": {"demo"}, "criterionId": {criterion},
			"tok": {keys.Token("demo", "demo", clock.Now().Add(cfg.SiteTokenTTL))}}
		return "/v1/redirect?" + v.Encode()
	}
	const reader = "198.51.100.7:4000"
	tokenOf := func(criterion, page string) string {
		t.Helper()
		return beaconFrom(t, a.Handler, page, link(criterion), reader)
	}
	if tokenOf(old, "http://localhost/a") == "" {
		t.Fatal("the ad's own keyword gets no click token before the refresh")
	}
	if tokenOf(another, "http://localhost/a") != "" {
		t.Fatal("a criterion never the ad's gets a click token")
	}

	writeFile(t, path, feed(t, changed))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("refresh: %+v", r)
	}
	if tokenOf("grünkohlpresse", "http://localhost/b") == "" {
		t.Fatal("the ad's new keyword gets no click token")
	}
	if tokenOf(another, "http://localhost/b") != "" {
		t.Error("a criterion never the ad's gets a click token after the refresh")
	}
	l := link(old)
	ct := tokenOf(old, "http://localhost/c")
	if ct == "" {
		t.Fatal("the keyword of the catalog before gets no click token right after the refresh")
	}
	clock.advance(2 * time.Second) // a reader's reaction, past ClickMinDelay
	req := httptest.NewRequest(http.MethodGet, l+"&ct="+url.QueryEscape(ct), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = reader
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Fatalf("the click: %d %q %s", rec.Code, id, rec.Body)
	}
	var got *clicks.Click
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.ID == id {
			got = &c
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := ixs[0].CanonicalCriterion(0, old); got == nil || !got.Billable || got.Criterion != want || want == "" {
		t.Fatalf("the click of the keyword before: %+v, want billable, criterion %q", got, want)
	}

	// A refresh that only reprices keeps the grace of the one before.
	clock.advance(time.Minute)
	writeFile(t, path, feed(t, repriced))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("the second refresh: %+v", r)
	}
	if tokenOf(old, "http://localhost/e") == "" {
		t.Fatal("the keyword of two catalogs before gets no click token after a refresh that changed no criterion")
	}
	if tokenOf(another, "http://localhost/e") != "" {
		t.Error("another ad's criterion gets a click token after the second refresh")
	}

	// Past the grace, the keyword before is no longer the ad's.
	clock.advance(cfg.ClickTokenTTL)
	if ct := tokenOf(old, "http://localhost/d"); ct != "" {
		t.Error("the keyword of the catalog before gets a click token past the grace")
	}
	if tokenOf("grünkohlpresse", "http://localhost/d") == "" {
		t.Error("the ad's new keyword gets no click token past the grace")
	}
}

// A swap keeps of the catalog before only the ads still served whose
// criteria changed, wherever the feed moved them; not one only repriced,
// nor one removed.
func TestCriteriaBeforeKeepsTheChangedAds(t *testing.T) {
	ads := testcatalog.Generate(60, 3)
	now := slices.Clone(ads)
	now[3].Keywords = []string{"grünkohlpresse"}
	now[20].PriceCents += 100
	now[40].Category = "Neu > " + now[40].Category
	now = slices.Delete(now, 10, 11)
	moved := now[40-1]
	now = slices.Insert(slices.Delete(now, 40-1, 40), 2, moved)
	all, err := match.Build(now)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	b := criteriaBefore(ads, now, all, until, nil)
	if b == nil || !b.Until.Equal(until) {
		t.Fatalf("criteriaBefore: %+v", b)
	}
	for i, want := range map[int]bool{3: true, 40: true, 20: false, 10: false, 0: false, 59: false} {
		if _, got := b.Index.Lookup(ads[i].ID); got != want {
			t.Errorf("ad %d (%s) kept %v, want %v", i, ads[i].ID, got, want)
		}
	}
	if j, ok := b.Index.Lookup(ads[3].ID); !ok || !b.Index.IsCriterionOf(j, ads[3].Keywords[0]) {
		t.Errorf("the changed ad's keyword before is not its criterion in what is kept")
	}
	same := slices.Clone(ads)
	sameIx, err := match.Build(same)
	if err != nil {
		t.Fatal(err)
	}
	if criteriaBefore(ads, same, sameIx, until, nil) != nil {
		t.Error("a swap that changed no criteria keeps ads")
	}
}

// A swap keeps no ad whose title alone changed (its criteria are its
// keywords, brand, model and category: match.SameCriteria), and none at
// all when more ads' criteria changed than the grace bounds allow: it
// says so at warn, with the count.
func TestCriteriaBeforeIsBounded(t *testing.T) {
	ads := testcatalog.Generate(100, 3)
	until := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	build := func(c []match.Ad) *match.Index {
		t.Helper()
		ix, err := match.Build(c)
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	retitled := slices.Clone(ads)
	for i := range retitled {
		retitled[i].Title += " Neu"
	}
	if b := criteriaBefore(ads, retitled, build(retitled), until, nil); b != nil {
		t.Errorf("%d ads retitled: %d kept, want none", len(ads), b.Index.Len())
	}

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	few := slices.Clone(ads)
	for i := range 10 { // graceMaxShare of 100
		few[i].Keywords = []string{"grünkohlpresse"}
	}
	if b := criteriaBefore(ads, few, build(few), until, log); b == nil || b.Index.Len() != 10 {
		t.Errorf("10 of 100 ads' keywords changed: kept %+v, want the 10", b)
	}
	many := slices.Clone(few)
	many[10].Keywords = []string{"grünkohlpresse"}
	if b := criteriaBefore(ads, many, build(many), until, log); b != nil {
		t.Errorf("11 of 100 ads' keywords changed: %d kept, want none past the 10%% bound", b.Index.Len())
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "changed=11") {
		t.Errorf("the refresh past the bound logged %q, want a warning with changed=11", out)
	}
}

// A page-made link of a criterion the catalog before a refresh had, shown
// near the end of the grace, gets a click token that stays valid past it:
// its click, past the grace, across a later refresh that changes no
// criterion, records the criterion its impression did and bills.
func TestClickPastTheGraceRecordsItsImpressionsCriterion(t *testing.T) {
	ads := testcatalog.Generate(200, 5)
	ad := ads[0]
	if len(ad.Keywords) == 0 {
		t.Fatal("the generated ad has no keywords")
	}
	old := strings.ToUpper(ad.Keywords[0])
	changed := slices.Clone(ads)
	changed[0].Keywords = []string{"grünkohlpresse"}
	repriced := slices.Clone(changed)
	for i := range repriced {
		if repriced[i].Currency != "" {
			repriced[i].PriceCents += 100
		}
	}
	before, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	want := before.CanonicalCriterion(0, old)
	if want == "" {
		t.Fatalf("%q is not the ad's criterion", old)
	}
	a, cfg, path, clock, keys := feedApp(t, ads)
	writeFile(t, path, feed(t, changed))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("refresh: %+v", r)
	}
	clock.advance(cfg.ClickTokenTTL - time.Minute)
	v := url.Values{"type": {"intext"}, "adId": {ad.ID}, "adType": {ad.Kind.String()}, "api_key": {"demo"},
		"site_id": {"demo"}, "criterionId": {old}, "tok": {keys.Token("demo", "demo", clock.Now().Add(cfg.SiteTokenTTL))}}
	l := "/v1/redirect?" + v.Encode()
	const reader = "198.51.100.8:4000"
	ct := beaconFrom(t, a.Handler, "http://localhost/a", l, reader)
	if ct == "" {
		t.Fatal("the keyword of the catalog before gets no click token within the grace")
	}
	var shown *clicks.Impression
	if err := a.Impressions.Scan(t.Context(), time.Time{}, time.Time{}, func(m clicks.Impression) error {
		shown = &m
		return nil
	}); err != nil || shown == nil || shown.Criterion != want {
		t.Fatalf("the impression: %+v (%v), want criterion %q", shown, err, want)
	}
	clock.advance(2 * time.Minute)
	writeFile(t, path, feed(t, repriced))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("the second refresh: %+v", r)
	}
	req := httptest.NewRequest(http.MethodGet, l+"&ct="+url.QueryEscape(ct), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = reader
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Fatalf("the click: %d %q %s", rec.Code, id, rec.Body)
	}
	var got *clicks.Click
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.ID == id {
			got = &c
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.Billable || got.Criterion != want {
		t.Fatalf("the click past the grace: %+v, want billable, criterion %q as its impression", got, want)
	}
}

// A page-made link naming two of an ad's keywords, shown before a
// refresh that only reorders them, records under the one the ad listed
// first then, and so does its click after the refresh: a billed click
// counts under its impression's criterion.
func TestClickAfterAReorderOfKeywordsRecordsItsImpressionsCriterion(t *testing.T) {
	ads := testcatalog.Generate(200, 5)
	at := slices.IndexFunc(ads, func(a match.Ad) bool { return len(a.Keywords) >= 2 })
	if at < 0 {
		t.Fatal("no generated ad has two keywords")
	}
	ad := ads[at]
	text := ad.Keywords[1] + " " + ad.Keywords[0]
	reordered := slices.Clone(ads)
	reordered[at].Keywords = slices.Clone(ad.Keywords)
	reordered[at].Keywords[0], reordered[at].Keywords[1] = ad.Keywords[1], ad.Keywords[0]
	before, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	after, err := match.Build(reordered)
	if err != nil {
		t.Fatal(err)
	}
	want := before.CanonicalCriterion(at, text)
	if want == "" || after.CanonicalCriterion(at, text) == want {
		t.Fatalf("%q reads %q before the reorder and %q after it; want two criteria", text, want, after.CanonicalCriterion(at, text))
	}
	a, cfg, path, clock, keys := feedApp(t, ads)
	v := url.Values{"type": {"intext"}, "adId": {ad.ID}, "adType": {ad.Kind.String()}, "api_key": {"demo"},
		"site_id": {"demo"}, "criterionId": {text}, "tok": {keys.Token("demo", "demo", clock.Now().Add(cfg.SiteTokenTTL))}}
	l := "/v1/redirect?" + v.Encode()
	const reader = "198.51.100.9:4000"
	ct := beaconFrom(t, a.Handler, "http://localhost/a", l, reader)
	clock.advance(time.Minute)
	writeFile(t, path, feed(t, reordered))
	if r := a.Reload(context.Background(), false); r.Result != "swapped" {
		t.Fatalf("refresh: %+v", r)
	}
	clock.advance(time.Minute)
	req := httptest.NewRequest(http.MethodGet, l+"&ct="+url.QueryEscape(ct), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.RemoteAddr = reader
	clicks.Navigation.Header(req.Header)
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	id := rec.Header().Get("X-Adlink-Click")
	if rec.Code != http.StatusFound || id == "" {
		t.Fatalf("the click: %d %q %s", rec.Code, id, rec.Body)
	}
	var shown, got string
	if err := a.Impressions.Scan(t.Context(), time.Time{}, time.Time{}, func(m clicks.Impression) error {
		shown = m.Criterion
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.ID == id {
			if !c.Billable {
				t.Errorf("the click does not bill: %s", c.Reason)
			}
			got = c.Criterion
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if shown != want || got != want {
		t.Errorf("the impression records %q and its click after the reorder %q, want %q for both", shown, got, want)
	}
}

// feedApp starts an app over a feed file of ads with one click key, on a
// test clock, and returns it with its configuration, the feed's path (a
// refresh writes there), the clock and the click keys.
func feedApp(t *testing.T, ads []match.Ad) (*App, config.Config, string, *testClock, *clicks.Keys) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "feed.jsonl")
	writeFile(t, path, feed(t, ads))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path}
	key := clicks.Key{ID: "k", Secret: bytes.Repeat([]byte{9}, 32)}
	cfg.ClickKeys = []clicks.Key{key}
	clock := &testClock{now: time.Now()}
	a, keys := startSigning(t, cfg, Options{Now: clock.Now})
	return a, cfg, path, clock, keys
}

// startSigning starts the app of cfg with opts, closed when t ends, and
// returns it with the keys of cfg.ClickKeys, to sign and check its
// links' tokens in the test.
func startSigning(t *testing.T, cfg config.Config, opts Options) (*App, *clicks.Keys) {
	t.Helper()
	a, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	keys, err := clicks.NewKeys(cfg.ClickKeys...)
	if err != nil {
		t.Fatal(err)
	}
	return a, keys
}
