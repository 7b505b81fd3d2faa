package catalog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/adlink/adlink/match"
)

// readTwice reads first and then second with the lines of the first, with
// opts1 and opts2, and returns the second read's ads and error beside
// those of a read of second alone.
func readTwice(t testing.TB, first, second []byte, opts1, opts2 Options) (again, fresh readResult) {
	t.Helper()
	ls := nextLines(nil, opts1)
	ads, _, err := loadAgain(bytes.NewReader(first), "feed.jsonl", FormatJSONL, opts1, true, ls)
	if err == nil {
		ls.done(ads)
	} else {
		ls = nil
	}
	ls2 := nextLines(ls, opts2)
	again.ads, _, again.err = loadAgain(bytes.NewReader(second), "feed.jsonl", FormatJSONL, opts2, true, ls2)
	fresh.ads, fresh.err = Load(bytes.NewReader(second), "feed.jsonl", opts2)
	return again, fresh
}

type readResult struct {
	ads []match.Ad
	err error
}

func (r readResult) same(o readResult) bool {
	if (r.err == nil) != (o.err == nil) || (r.err != nil && r.err.Error() != o.err.Error()) {
		return false
	}
	return reflect.DeepEqual(r.ads, o.ads)
}

// TestReadAgainDecodesChangedLinesOnly: a feed read again gives the ads
// and errors a first read of it gives, and takes the ads of its unchanged
// lines from the read before.
func TestReadAgainDecodesChangedLinesOnly(t *testing.T) {
	lines := seedLines(40)
	first := []byte(strings.Join(lines, "\n"))
	changed := append([]string{}, lines[1:]...)                                // the first removed
	changed[3] = strings.Replace(changed[3], `"title":"`, `"title":"Neu: `, 1) // one changed
	changed = append(changed, lines[5])                                        // a duplicate of an unchanged line
	second := []byte(strings.Join(changed, "\n"))

	again, fresh := readTwice(t, first, second, Options{}, Options{})
	if !again.same(fresh) || again.err == nil || !strings.Contains(again.err.Error(), "duplicate id") {
		t.Fatalf("read again: %v\nread alone: %v", again.err, fresh.err)
	}
	// Without the duplicate it loads, and the unchanged lines' strings are
	// the first read's own.
	second = []byte(strings.Join(changed[:len(changed)-1], "\n"))
	ls := nextLines(nil, Options{})
	before, _, err := loadAgain(bytes.NewReader(first), "feed.jsonl", FormatJSONL, Options{}, true, ls)
	if err != nil {
		t.Fatal(err)
	}
	ls.done(before)
	ls2 := nextLines(ls, Options{})
	after, _, err := loadAgain(bytes.NewReader(second), "feed.jsonl", FormatJSONL, Options{}, true, ls2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Load(bytes.NewReader(second), "feed.jsonl", Options{})
	if err != nil || !reflect.DeepEqual(after, want) {
		t.Fatalf("read again: %d ads; alone: %d ads, %v", len(after), len(want), err)
	}
	for i := range after {
		shared := unsafe.StringData(after[i].Title) == unsafe.StringData(before[i+1].Title)
		if shared != (i != 3) {
			t.Errorf("ad %d (%s): shares the read before's title: %v", i, after[i].ID, shared)
		}
	}
}

// TestReadAgainWithOtherOptions: a line read with other options (a base
// URL that makes logos absolute) is read again, not taken from before.
func TestReadAgainWithOtherOptions(t *testing.T) {
	feed := []byte(good + "\n")
	again, fresh := readTwice(t, feed, feed, Options{BaseURL: "https://a.example"}, Options{BaseURL: "https://b.example"})
	if !again.same(fresh) || len(again.ads) != 1 || !strings.HasPrefix(again.ads[0].Logo, "https://b.example/") {
		t.Fatalf("read again: %+v, %v; want the logo under https://b.example", again.ads, again.err)
	}
	ls := nextLines(nil, Options{Advertiser: "a.example"})
	if l := nextLines(ls, Options{Advertiser: "b.example"}); l.prev != nil {
		t.Error("another default advertiser: the lines before are used")
	}
	if l := nextLines(ls, Options{Advertiser: "a.example", Markets: []string{"de-DE"}}); l.prev != nil {
		t.Error("other default markets: the lines before are used")
	}
}

// TestFetchFileAgain: the Fetcher reads a changed file with the lines of
// its last read, and one whose read failed with those of the last good one.
func TestFetchFileAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "feed.jsonl")
	lines := seedLines(20)
	write := func(ls []string, age time.Duration) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(ls, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	f := NewFetcher(FetchOptions{})
	src, _ := ParseSource(path)
	write(lines, 3*time.Hour)
	first, err := f.Fetch(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	write(append([]string{`{"kind":"oops"}`}, lines...), 2*time.Hour)
	if _, err := f.Fetch(context.Background(), src, Options{}); err == nil {
		t.Fatal("a bad line was accepted")
	}
	write(lines[2:], time.Hour)
	res, err := f.Fetch(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := LoadFile(path, Options{})
	if err != nil || !reflect.DeepEqual(res.Ads, want) {
		t.Fatalf("fetched again: %d ads; read alone: %d ads, %v", len(res.Ads), len(want), err)
	}
	if unsafe.StringData(res.Ads[0].Title) != unsafe.StringData(first.Ads[2].Title) {
		t.Error("an unchanged line was decoded again")
	}
}

// FuzzLoadAgain: a feed read with the lines of another read gives what a
// read of it alone gives, ads and errors.
func FuzzLoadAgain(f *testing.F) {
	lines := seedLines(6)
	f.Add([]byte(strings.Join(lines, "\n")), []byte(strings.Join(lines[1:], "\n")), false)
	f.Add([]byte(good+"\n"+good), []byte(good), true)
	f.Add([]byte(strings.Join(lines, "\n")), []byte(strings.Join(append(lines, lines[2]), "\n")), false)
	f.Add([]byte("\xef\xbb\xbf"+good), []byte(good+"\n\xef\xbb\xbf"+good), true)
	f.Fuzz(func(t *testing.T, first, second []byte, otherBase bool) {
		opts1, opts2 := Options{BaseURL: "https://a.example"}, Options{BaseURL: "https://a.example"}
		if otherBase {
			opts2.BaseURL = "https://b.example"
		}
		again, fresh := readTwice(t, first, second, opts1, opts2)
		if !again.same(fresh) {
			t.Fatalf("read again: %v\n%+v\nread alone: %v\n%+v", again.err, again.ads, fresh.err, fresh.ads)
		}
	})
}

// TestReadAgainEmpty: a feed emptied reads as a first read of it does.
func TestReadAgainEmpty(t *testing.T) {
	again, fresh := readTwice(t, []byte(good+"\n"), []byte("\n"), Options{}, Options{})
	if !again.same(fresh) || again.ads != nil {
		t.Fatalf("read again: %#v, %v; alone: %#v, %v", again.ads, again.err, fresh.ads, fresh.err)
	}
}
