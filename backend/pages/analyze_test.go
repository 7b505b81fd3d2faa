package pages

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/adlink/adlink/match"
)

func TestExtractIPhoneReview(t *testing.T) {
	b, err := os.ReadFile("testdata/iphone5-review.html")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := ExtractPage(string(b), "https://gadgets.example/review?id=5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ex.Title, "Apple iPhone 5 review") {
		t.Errorf("title %q", ex.Title)
	}
	if !slices.Contains(ex.Headings, "Apple iPhone 5 review") || !slices.Contains(ex.Headings, "Design and display") || slices.Contains(ex.Headings, "Popular") {
		t.Errorf("headings %q", ex.Headings)
	}
	if ex.Lang != "en" {
		t.Errorf("lang %q", ex.Lang)
	}
	if ex.Canonical != "https://gadgets.example/reviews/apple-iphone-5" {
		t.Errorf("canonical %q", ex.Canonical)
	}
	for _, want := range []string{"thinnest and lightest phone", "A6 chip", "Lightning connector"} {
		if !strings.Contains(ex.Text, want) {
			t.Errorf("main text lacks %q:\n%s", want, ex.Text)
		}
	}
	for _, junk := range []string{"cookies", "Nokia Lumia", "Samsung", "WH-1000XM4", "All rights reserved"} {
		if strings.Contains(ex.Text, junk) {
			t.Errorf("main text has %q:\n%s", junk, ex.Text)
		}
	}

	ix := fixtureIndex(t)
	title, text := ix.Reduce(ex.Title+"\n"+strings.Join(ex.Headings, "\n"), ex.Text)
	hits := ix.Match(&match.Query{Page: true, Title: title, Text: text})
	if len(hits) != 1 {
		var ids []string
		for _, h := range hits {
			ids = append(ids, ix.Ad(h.Ad).ID)
		}
		t.Fatalf("hits %v, want only the iPhone", ids)
	}
	h := hits[0]
	if ix.Ad(h.Ad).ID != "EBAY.4.291181826279" || !slices.Equal(h.Keywords, []string{"Apple", "iPhone 5"}) || h.Criterion != "Apple iPhone 5" {
		t.Fatalf("hit %s %q %q", ix.Ad(h.Ad).ID, h.Keywords, h.Criterion)
	}
}

func TestExtractOddDocuments(t *testing.T) {
	for _, doc := range []string{
		"", "<", "<html>", "plain text, no markup", strings.Repeat("<div>", 100000),
		"<html><head><title>" + strings.Repeat("x", 100000) + "</title></head></html>",
		"<html lang='de-AT'><body><p>Der Kühlschrank ist kalt. Wir haben ihn getestet und er ist gut.</p></body></html>",
	} {
		ex, err := ExtractPage(doc, "http://example.com/")
		if err != nil {
			continue
		}
		if len(ex.Title) > maxTitleBytes || len(ex.Text) > MaxTextBytes {
			t.Fatalf("limits not kept: %d %d", len(ex.Title), len(ex.Text))
		}
	}
}

// FuzzExtractPage checks that analysis never panics and keeps its limits.
func FuzzExtractPage(f *testing.F) {
	b, err := os.ReadFile("testdata/iphone5-review.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("<html><head><link rel=canonical href='javascript:x'><title>a</title></head><body><h1>b</h1><p>c</p></body></html>")
	f.Add("<table><tr><td><p>x</table><svg><h1>y</svg>")
	f.Add("\xff\xfe<\x00h\x00")
	f.Fuzz(func(t *testing.T, doc string) {
		ex, err := ExtractPage(doc, "http://example.com/a/")
		if err != nil {
			return
		}
		if len(ex.Title) > maxTitleBytes || len(ex.Text) > MaxTextBytes || len(ex.Headings) > maxHeadings {
			t.Fatalf("limits not kept: %d %d %d", len(ex.Title), len(ex.Text), len(ex.Headings))
		}
		if ex.Lang != "" && len(ex.Lang) != 2 {
			t.Fatalf("lang %q", ex.Lang)
		}
	})
}
