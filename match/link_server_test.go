//go:build !wasip1

package match

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// oddAds are ads whose strings need every kind of JSON escape, beside the
// fixture's.
func oddAds() []Ad {
	return append(fixture(),
		Ad{ID: "odd&1<x>", Kind: KindProduct, Title: "Handy <b>\"quoted\"</b> & \\ \u2028 tab\t café \xff",
			Keywords: []string{"handy"}, Manufacturer: "A&B", Category: "Handy", GTIN: "1", PriceCents: 5, Currency: "<€>",
			Logo: "https://img.example/é{dim}&<x>.png", Description: "line\nbreak", Advertiser: "odd&co", BidMicros: 1},
		Ad{ID: "odd2", Kind: KindAdvertiser, Title: "handy \u00adshop", Keywords: []string{"handy shop"},
			Logo: "https://img.example/{dim}", Advertiser: "odd2", BidMicros: 2})
}

// serverOptions are link options that reach every branch of the entry
// writer, and a click URL start that JSON escapes.
func serverOptions() []LinkOptions {
	q := clickQuery(ContextSearch, "k&<>", "s s", "tag&1")
	return []LinkOptions{
		{Context: ContextSearch, ClickBase: "http://localhost:8080/v1/redirect?", ClickQuery: q},
		{Context: ContextPage, ClickBase: "https://r.example/<&>\"é/v1/redirect?", ClickQuery: q,
			Fields: FieldPrice | FieldManufacturer | FieldLogo | FieldAdType | FieldDescription | FieldAdvertiser | FieldGTIN | FieldCategory},
		{Context: ContextSearch, ClickBase: "", LogoDim: "90X90", Fields: FieldPrice | FieldAdType},
		{Context: ContextPage, ClickBase: string(bytes.Repeat([]byte("b&"), 100)), ClickQuery: q, Fields: FieldLogo},
	}
}

// TestAppendServerResponse: the server's writer answers every query with
// every option the bytes the module's writer does, valid JSON.
func TestAppendServerResponse(t *testing.T) {
	ix := mustBuild(t, oddAds())
	queries := []*Query{
		{Text: "handy"}, {Text: "handy", Dist: DistNone}, {Text: "handy shop lg handy", Dist: DistLow},
		{Text: "nokia lumia 630 apple iphone", Size: MaxSize}, {Text: "nothing matches this"},
		{Text: "Handy café", Title: "handy verkaufen", Page: true},
	}
	for _, q := range queries {
		hits := ix.Match(q)
		for i, o := range serverOptions() {
			want := ix.AppendResponse([]byte("x"), hits, &o)
			got := ix.AppendServerResponse([]byte("x"), hits, &o)
			if !bytes.Equal(got, want) {
				t.Fatalf("%q, options %d:\n got %s\nwant %s", q.Text, i, got, want)
			}
			if !json.Valid(got[1:]) {
				t.Fatalf("%q, options %d: invalid JSON %s", q.Text, i, got)
			}
		}
	}
}

// FuzzAppendServerResponse: any query and click URL start, the same bytes
// from both writers.
func FuzzAppendServerResponse(f *testing.F) {
	ix := mustBuild(f, oddAds())
	f.Add("handy café", "https://r.example/<&>?", uint16(0xff), uint8(2))
	f.Add("lg handy & nokia", "&&&", uint16(1), uint8(0))
	f.Fuzz(func(t *testing.T, text, base string, fields uint16, dist uint8) {
		hits := ix.Match(&Query{Text: text, Dist: Dist(dist % 3)})
		o := LinkOptions{Context: ContextPage, ClickBase: base, Fields: Fields(fields),
			ClickQuery: clickQuery(ContextPage, base, text, text)}
		if want, got := ix.AppendResponse(nil, hits, &o), ix.AppendServerResponse(nil, hits, &o); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

func TestEscapeAmps(t *testing.T) {
	long := strings.Repeat("k=v&", 200) // longer than EscapeAmps' own buffer
	for _, s := range []string{"", "&", "&&", "a&b", "abc", "&a&&b&", "x=1&y=2&z=3&", long} {
		want := bytes.ReplaceAll([]byte("pre&"+s), []byte("&"), []byte(`\u0026`))
		want = append([]byte("pre&"), want[len(`pre\u0026`):]...)
		if got := EscapeAmps([]byte("pre&"+s), 4); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}
