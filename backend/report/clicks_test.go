package report

import (
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
)

// FuzzParseCursor: a cursor the parser takes is one Cursor writes, the
// same text for the same position and order, and its id is a click id's.
func FuzzParseCursor(f *testing.F) {
	f.Add(Cursor(clicks.Position{Time: time.Date(2026, 11, 29, 1, 2, 3, 4, time.UTC), ID: "AbC-_09xyzAbC-_09xyzAb"}, false))
	f.Add(Cursor(clicks.Position{Time: time.Date(2026, 11, 29, 1, 2, 3, 4, time.UTC), ID: "AbC-_09xyzAbC-_09xyzAb"}, true))
	f.Add(Cursor(clicks.Position{Time: time.Unix(0, 1), ID: ""}, false))
	f.Add(Cursor(clicks.Position{Time: time.Unix(0, 1), ID: ""}, true))
	f.Add("")
	f.Add("AAAAAAAAAAA")
	f.Add("gAAAAAAAAAA")
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, s string) {
		p, desc, err := ParseCursor(s)
		if err != nil {
			return
		}
		if got := Cursor(p, desc); got != s {
			t.Fatalf("ParseCursor(%q) = %+v, %v, written again as %q", s, p, desc, got)
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
	for _, desc := range []bool{false, true} {
		req := ClicksRequest{Desc: desc}
		next := Next(&req, page, true)
		p, gotDesc, err := ParseCursor(next)
		if err != nil || !p.Time.Equal(at) || p.ID != "last-one_2" || gotDesc != desc {
			t.Fatalf("ParseCursor(Next) = %+v, %v, %v; want %v last-one_2, %v", p, gotDesc, err, at, desc)
		}
		if Next(&req, page, false) != "" {
			t.Errorf("the last page has a next")
		}
		for _, bad := range []string{"x", Cursor(clicks.Position{Time: at, ID: "a b"}, desc), next + "=", Cursor(clicks.Position{Time: time.Unix(0, 0)}, desc)} {
			if _, _, err := ParseCursor(bad); err == nil {
				t.Errorf("ParseCursor(%q) took it", bad)
			}
		}
	}
	// The cursor of an ascending listing is as it was before listings
	// had an order: a client's saved cursor goes on.
	if got := Cursor(clicks.Position{Time: at, ID: "x"}, false); got != "GOxeYU-_uhR4" {
		t.Errorf("an ascending cursor %q, want GOxeYU-_uhR4", got)
	}
}

// TestParseClicksOrder: order takes asc or desc, and a cursor continues
// the order it was made for: given with the other, after is refused.
func TestParseClicksOrder(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Hour)
	asc, desc := Cursor(clicks.Position{Time: at, ID: "x"}, false), Cursor(clicks.Position{Time: at, ID: "x"}, true)
	for _, c := range []struct {
		order, after string
		desc         bool
		bad          string
	}{
		{"", "", false, ""},
		{"asc", "", false, ""},
		{"desc", "", true, ""},
		{"desc", desc, true, ""},
		{"", asc, false, ""},
		{"asc", asc, false, ""},
		{"DESC", "", false, "order"},
		{"newest", desc, false, "order"},
		{"desc", asc, true, "after"},
		{"", desc, false, "after"},
		{"asc", desc, false, "after"},
	} {
		get := func(k string) string { return map[string]string{"order": c.order, "after": c.after}[k] }
		req, problems := ParseClicks(get, now)
		var named []string
		for _, p := range problems {
			named = append(named, p.Param)
		}
		if c.bad == "" && len(problems) > 0 || c.bad != "" && (len(problems) != 1 || problems[0].Param != c.bad) {
			t.Errorf("order %q, after %q: problems %v, want %q", c.order, c.after, named, c.bad)
			continue
		}
		if req.Desc != c.desc || c.bad == "" && c.after != "" && !req.After.Time.Equal(at) {
			t.Errorf("order %q, after %q: desc %v from %v, want %v", c.order, c.after, req.Desc, req.After, c.desc)
		}
		if q, _ := req.Query(accounts.Account{Kind: accounts.Partner, ID: "k"}); q.Desc != req.Desc {
			t.Errorf("order %q: the query's Desc %v", c.order, q.Desc)
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
	if err := WriteClicksCSV(&b, nil, page); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(ClickColumns, ",") + "\n" +
		`a,2026-11-22T10:00:00.000000005Z,ad,,,,"'=HYPERLINK(""https://evil.example"")",'+1,'@x,true,,1.50,EUR` + "\n" +
		"b,2026-11-22T10:00:00.000000005Z,ad,,,,'\tcmd,'-2,,false,repeat,,EUR\n"
	if b.String() != want {
		t.Errorf("CSV\n%s\nwant\n%s", b.String(), want)
	}
}
