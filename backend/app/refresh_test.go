package app

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// TestRefreshAnswersAsColdStart: a server refreshed from one generated
// feed to another, with ads removed (the first among them), added,
// changed in their text, price, bid, advertiser and markets, and moved,
// serves what a server started cold on the new feed serves: the same
// version, the same shards and fragments under the same addresses, and
// the same answers to searches, byte for byte. The refresh indexes beside
// the catalog before (match.Rebuild); a cold start from scratch.
func TestRefreshAnswersAsColdStart(t *testing.T) {
	ads := testcatalog.Generate(3000, 21)
	changed := slices.Clone(ads[1:])
	changed = slices.Delete(changed, 500, 510)
	for i := 40; i < 3000-11; i += 97 {
		a := changed[i]
		a.Keywords = slices.Clone(a.Keywords)
		switch i % 5 {
		case 0:
			a.PriceCents += 7
			a.BidMicros += 250_000
		case 1:
			a.Title = "Neu: " + a.Title
		case 2:
			a.Keywords = append(a.Keywords, "sommerangebot")
		case 3:
			a.Advertiser = "neu-" + a.Advertiser
			a.Landing = "https://" + a.Advertiser + "/p/" + a.ID
		case 4:
			a.Markets = []match.Market{{Country: "at", Lang: "de"}}
		}
		changed[i] = a
	}
	for k := range 25 { // new ads, each another's offer in another shop
		a := ads[100+k]
		a.ID = fmt.Sprintf("fresh-%d", k)
		changed = slices.Insert(changed, 7*k+3, a)
	}
	moved := changed[1200]
	changed = slices.Insert(slices.Delete(changed, 1200, 1201), 20, moved)

	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.jsonl"), filepath.Join(dir, "after.jsonl")
	writeFile(t, before, feed(t, ads))
	writeFile(t, after, feed(t, changed))
	cfg := testConfig(t)
	cfg.Catalogs = []string{before}
	cfg.KeyRate, cfg.KeyBurst, cfg.KeyNetworkShare = 1e9, 1e9, 1
	refreshed, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer refreshed.Close()
	writeFile(t, before, feed(t, changed))
	if r := refreshed.Reload(context.Background(), false); r.Result != "swapped" || r.Ads != len(changed) {
		t.Fatalf("refresh: %+v", r)
	}
	refreshed.live.waitRecompressed()
	coldCfg := testConfig(t)
	coldCfg.Catalogs = []string{after}
	coldCfg.KeyRate, coldCfg.KeyBurst, coldCfg.KeyNetworkShare = 1e9, 1e9, 1
	cold, err := New(coldCfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()

	if got, want := refreshed.Catalog().Version, cold.Catalog().Version; got != want {
		t.Fatalf("version %s after the refresh, %s cold", got, want)
	}
	got, want := shardAddresses(refreshed.Catalog().Shards), shardAddresses(cold.Catalog().Shards)
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Fatalf("shards after the refresh differ from a cold start's: %d addresses against %d", len(got), len(want))
	}
	searches := testcatalog.Requests(changed, 300, 22, false)
	for _, a := range changed[:30] { // the changed and new ads by their own words
		searches = append(searches, testcatalog.Request{Q: a.Title, Size: 10})
	}
	r, c := (&member{App: refreshed}).answers(t, searches), (&member{App: cold}).answers(t, searches)
	found := 0
	for i := range r {
		if r[i] != c[i] {
			t.Fatalf("search %d after the refresh:\n%.400s\ncold:\n%.400s", i, r[i], c[i])
		}
		if !strings.Contains(r[i], `"link":[]`) {
			found++
		}
	}
	if found < len(searches)/2 {
		t.Fatalf("only %d of %d searches found an ad: the comparison proves little", found, len(searches))
	}
}

// shardAddresses lists the addresses of every shard and fragment of set,
// by market.
func shardAddresses(set *shards.Set) []string {
	var out []string
	all := set.Pick("", "")
	out = append(out, "all "+all.SHA256)
	for _, f := range set.Fragments(all) {
		out = append(out, f.SHA256)
	}
	for m, b := range set.Markets() {
		out = append(out, m.String()+" "+b.SHA256)
		for _, f := range set.Fragments(b) {
			out = append(out, f.SHA256)
		}
	}
	slices.Sort(out[1:])
	return out
}
