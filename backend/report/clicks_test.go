package report

import (
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// FuzzParseCursor: a cursor the parser takes is one Cursor writes, the
// same text for the same position, and its id is a click id's.
func FuzzParseCursor(f *testing.F) {
	f.Add(Cursor(clicks.Position{Time: time.Date(2026, 11, 29, 1, 2, 3, 4, time.UTC), ID: "AbC-_09xyzAbC-_09xyzAb"}))
	f.Add(Cursor(clicks.Position{Time: time.Unix(0, 1), ID: ""}))
	f.Add("")
	f.Add("AAAAAAAAAAA")
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseCursor(s)
		if err != nil {
			return
		}
		if got := Cursor(p); got != s {
			t.Fatalf("ParseCursor(%q) = %+v, written again as %q", s, p, got)
		}
		if p.Time.UnixNano() <= 0 || len(p.ID) > maxCursorID {
			t.Fatalf("ParseCursor(%q) took %+v", s, p)
		}
	})
}

// TestCursorRoundTrip: the next page starts after the last click of the
// page, to the nanosecond, and a cursor naming something else is refused.
func TestCursorRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 1, 2, 3, 456789012, time.UTC)
	page := []clicks.Click{{ID: "first", Time: at.Add(-time.Second)}, {ID: "last-one_2", Time: at}}
	next := Next(page, true)
	p, err := ParseCursor(next)
	if err != nil || !p.Time.Equal(at) || p.ID != "last-one_2" {
		t.Fatalf("ParseCursor(Next) = %+v, %v; want %v last-one_2", p, err, at)
	}
	if Next(page, false) != "" {
		t.Errorf("the last page has a next")
	}
	for _, bad := range []string{"x", Cursor(clicks.Position{Time: at, ID: "a b"}), next + "=", Cursor(clicks.Position{Time: time.Unix(0, 0)})} {
		if _, err := ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) took it", bad)
		}
	}
}

// TestWriteClicksCSVKeepsFormulasInert: a criterion or yk_tag a reader
// wrote that a spreadsheet would run is written with a ' before it; a
// click not billed has no bid.
func TestWriteClicksCSVKeepsFormulasInert(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 5, time.UTC)
	page := []clicks.Click{
		{ID: "a", Time: at, AdID: "ad", Criterion: `=HYPERLINK("https://evil.example")`, YkTag: "+1", Country: "@x",
			Billable: true, BidMicros: 1_500_000, Currency: "EUR"},
		{ID: "b", Time: at, AdID: "ad", Criterion: "\tcmd", YkTag: "-2", Reason: clicks.ReasonRepeat, BidMicros: 1_500_000, Currency: "EUR"},
	}
	var b strings.Builder
	if err := WriteClicksCSV(&b, page); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(ClickColumns, ",") + "\n" +
		`a,2026-11-22T10:00:00.000000005Z,ad,,,,"'=HYPERLINK(""https://evil.example"")",'+1,'@x,true,,1.50,EUR` + "\n" +
		"b,2026-11-22T10:00:00.000000005Z,ad,,,,'\tcmd,'-2,,false,repeat,,EUR\n"
	if b.String() != want {
		t.Errorf("CSV\n%s\nwant\n%s", b.String(), want)
	}
}
