package catalog

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseSourceAdvertisers: the advertisers option is repeatable and
// comma-separated, read as the budgets compare ids, and refused when an id
// is empty or no domain, or when the advertiser option is not one of them.
func TestParseSourceAdvertisers(t *testing.T) {
	s, err := ParseSource("feeds/shop.jsonl#advertisers=Shop.example,%20b.example%20&advertisers=shop.example&advertisers=c.example")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Advertisers, " "); got != "shop.example b.example c.example" {
		t.Errorf("advertisers %q", got)
	}
	if s, err := ParseSource("feeds/shop.jsonl#advertiser=shop.example"); err != nil || s.Advertisers != nil {
		t.Errorf("advertiser alone: %+v %v", s, err)
	}
	for _, bad := range []string{
		"a.jsonl#advertisers=", "a.jsonl#advertisers=a.example,,b.example", "a.jsonl#advertisers=a.example,",
		"a.jsonl#advertisers=%20", "a.jsonl#advertisers=not_a_domain", "a.jsonl#advertisers=a.example&advertisers=",
		"a.jsonl#advertiser=other.example&advertisers=a.example",
	} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	_, err = ParseSource("https://user:secret@shop.example/feed.jsonl?token=abc#advertisers=a.example,")
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "abc") || !strings.Contains(err.Error(), "advertisers") {
		t.Errorf("error %v: want the option named, the feed redacted", err)
	}
}

// TestLoadLockedAdvertisers: in a locked feed, a line whose advertiser,
// named, given by the advertiser option or taken from the landing page,
// is not listed fails the feed with a line error naming the item and the
// advertiser; an unlocked feed reads as before.
func TestLoadLockedAdvertisers(t *testing.T) {
	other := strings.Replace(with("id", `"SHOP.1.43"`), `"advertiser":"haushalt-direkt.de"`, `"advertiser":"competitor.example"`, 1)
	feed := good + "\n" + other + "\n"
	lock := Options{Advertisers: []string{"haushalt-direkt.de"}}

	ads, err := Load(strings.NewReader(feed), "shop.jsonl", Options{})
	if err != nil || len(ads) != 2 || ads[1].Advertiser != "competitor.example" {
		t.Fatalf("without the option: %d ads, %v", len(ads), err)
	}

	ads, err = Load(strings.NewReader(feed), "shop.jsonl", lock)
	var le *LineError
	if ads != nil || !errors.As(err, &le) {
		t.Fatalf("locked: %d ads, %v", len(ads), err)
	}
	if le.File != "shop.jsonl" || le.Line != 2 || le.Field != "advertiser" ||
		!strings.Contains(le.Msg, `"SHOP.1.43"`) || !strings.Contains(le.Msg, `"competitor.example"`) {
		t.Errorf("error %q", le.Error())
	}

	// The advertiser a line does not name: the option's, else the landing
	// page's host.
	noAdv := with("advertiser", "")
	for _, c := range []struct {
		name string
		opts Options
		ok   bool
	}{
		{"landing host listed", Options{Advertisers: []string{"haushalt-direkt.de"}}, true},
		{"landing host not listed", Options{Advertisers: []string{"shop.example"}}, false},
		{"option listed", Options{Advertiser: "shop.example", Advertisers: []string{"shop.example"}}, true},
	} {
		ads, err := Load(strings.NewReader(noAdv+"\n"), "shop.jsonl", c.opts)
		if (err == nil) != c.ok || c.ok && len(ads) != 1 {
			t.Errorf("%s: %d ads, %v", c.name, len(ads), err)
		}
	}
	// The advertiser option alone locks nothing: an item naming its own
	// advertiser keeps it, as before.
	ads, err = Load(strings.NewReader(noAdv+"\n"+other+"\n"), "shop.jsonl", Options{Advertiser: "shop.example"})
	if err != nil || len(ads) != 2 || ads[0].Advertiser != "shop.example" || ads[1].Advertiser != "competitor.example" {
		t.Errorf("advertiser alone: %d ads, %v", len(ads), err)
	}

	// Case and white space compare as the budgets compare ids.
	upper := with("advertiser", `"  Haushalt-Direkt.DE "`)
	if ads, err := Load(strings.NewReader(upper+"\n"), "shop.jsonl", Options{Advertisers: []string{" HAUSHALT-direkt.de"}}); err != nil || len(ads) != 1 {
		t.Errorf("case and space: %d ads, %v", len(ads), err)
	}

	// A bad option fails the feed, not its lines.
	for _, bad := range [][]string{{""}, {"a.example", " "}, {"no domain"}} {
		if _, err := Load(strings.NewReader(good+"\n"), "shop.jsonl", Options{Advertisers: bad}); err == nil || errors.As(err, &le) {
			t.Errorf("advertisers %q: %v", bad, err)
		}
	}
	if _, err := Load(strings.NewReader(good+"\n"), "shop.jsonl", Options{Advertiser: "x.example", Advertisers: []string{"haushalt-direkt.de"}}); err == nil {
		t.Error("an advertiser option outside advertisers accepted")
	}
}

// TestLoadLockedAdvertisersFormats: CSV and Merchant Center feeds are
// locked the same way; a Merchant Center item takes the channel's host.
func TestLoadLockedAdvertisersFormats(t *testing.T) {
	csv := "kind,id,title,keywords,landing,advertiser,markets\n" +
		"product,A.1.1,Kühlschrank,kühlschrank,https://shop.example/1,shop.example,de-DE\n" +
		"product,A.1.2,Kühlschrank,kühlschrank,https://shop.example/2,competitor.example,de-DE\n"
	_, err := Load(strings.NewReader(csv), "shop.csv", Options{Advertisers: []string{"shop.example"}})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(le.Msg, `"A.1.2"`) || !strings.Contains(le.Msg, `"competitor.example"`) {
		t.Errorf("csv: %v", err)
	}

	if ads, err := Load(strings.NewReader(merchantRSS), "shop.xml", Options{Advertisers: []string{"kuechenladen.example"}}); err != nil || len(ads) == 0 {
		t.Errorf("xml, its own host: %d ads, %v", len(ads), err)
	}
	_, err = Load(strings.NewReader(merchantRSS), "shop.xml", Options{Advertisers: []string{"other.example"}})
	if !errors.As(err, &le) || !strings.Contains(le.Msg, `"kuechenladen.example"`) {
		t.Errorf("xml, another host: %v", err)
	}
}

// TestFetchLockedRefresh: a refresh of a locked feed that gains a line of
// another advertiser is refused and the next fetch of the fixed feed reads
// it again; the lines a JSON-lines read keeps are not taken over by a
// fetch with other options.
func TestFetchLockedRefresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.jsonl")
	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(good + "\n")
	f := NewFetcher(FetchOptions{})
	src, err := ParseSource(path + "#advertisers=haushalt-direkt.de")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.Fetch(context.Background(), src, Options{}); err != nil || len(res.Ads) != 1 {
		t.Fatalf("first read: %+v, %v", res, err)
	}
	other := strings.Replace(with("id", `"SHOP.1.43"`), `"advertiser":"haushalt-direkt.de"`, `"advertiser":"competitor.example"`, 1)
	write(good + "\n" + other + "\n")
	_, err = f.Fetch(context.Background(), src, Options{})
	var le *LineError
	if !errors.As(err, &le) || le.File != src.Name || le.Line != 2 || !strings.Contains(le.Msg, `"competitor.example"`) {
		t.Fatalf("refresh with another advertiser's line: %v", err)
	}

	// Unlocked, the same file reads; locked again, its kept lines do not
	// pass the check by.
	open, _ := ParseSource(path)
	if res, err := f.Fetch(context.Background(), open, Options{}); err != nil || len(res.Ads) != 2 {
		t.Fatalf("unlocked: %+v, %v", res, err)
	}
	f2 := NewFetcher(FetchOptions{})
	if _, err := f2.Fetch(context.Background(), open, Options{}); err != nil {
		t.Fatal(err)
	}
	// The same source key with the lock: a fetcher that read the lines
	// unlocked must check them again.
	ls := nextLines(f2.last[open.key()].lines, Options{Advertisers: []string{"haushalt-direkt.de"}})
	if ls.prev != nil {
		t.Error("lines read without the lock are reused with it")
	}

	write(good + "\n")
	if res, err := f.Fetch(context.Background(), src, Options{}); err != nil || len(res.Ads) != 1 {
		t.Fatalf("fixed: %+v, %v", res, err)
	}
}

// FuzzParseSource checks that no -catalog value crashes ParseSource and
// that the advertisers it accepts are lower-case domain names, each once,
// among which the advertiser option is.
func FuzzParseSource(f *testing.F) {
	f.Add("feeds/shop.jsonl#advertisers=shop.example,b.example&advertisers=c.example")
	f.Add("https://u:p@shop.example/feed.xml?t=1#advertiser=Shop.example&advertisers=%20SHOP.example&market=de-DE")
	f.Add("a.tsv#advertisers=&format=tsv")
	f.Add("a.csv#advertisers=a.example,,b.example&bid=0.1")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseSource(v)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range s.Advertisers {
			if a != strings.ToLower(strings.TrimSpace(a)) || !isDomain(a) || seen[a] {
				t.Fatalf("%q: advertisers %q", v, s.Advertisers)
			}
			seen[a] = true
		}
		if d := strings.ToLower(strings.TrimSpace(s.Advertiser)); s.Advertisers != nil && d != "" && !seen[d] {
			t.Fatalf("%q: advertiser %q outside advertisers %q", v, s.Advertiser, s.Advertisers)
		}
	})
}

// TestFetchLockedURLRedacted: the line error of a locked feed URL names
// the feed as every other error does, without its credentials.
func TestFetchLockedURLRedacted(t *testing.T) {
	other := strings.Replace(good, `"advertiser":"haushalt-direkt.de"`, `"advertiser":"competitor.example"`, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(other + "\n"))
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/feed.jsonl?token=s3cret#advertisers=haushalt-direkt.de"
	src, err := ParseSource(u)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewFetcher(FetchOptions{}).Fetch(context.Background(), src, Options{})
	var le *LineError
	if !errors.As(err, &le) || le.File != src.Name || !strings.Contains(le.Msg, `"competitor.example"`) ||
		strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v, want a line error naming the feed as %s", err, src.Name)
	}
}
