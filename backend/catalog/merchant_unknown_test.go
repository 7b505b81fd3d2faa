package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// warnings loads feed, named name, and returns the ads' count and the
// warnings it gave, as their messages.
func warnings(t *testing.T, feed, name string) (int, []string) {
	t.Helper()
	var got []string
	ads, err := Load(strings.NewReader(feed), name, Options{Markets: []string{"de-DE"},
		Warn: func(w *LineError) { got = append(got, w.Error()) }})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return len(ads), got
}

// TestMerchantUnknownColumns: a column of a tab-separated feed that is no
// attribute adlink reads or Google defines is named once, not once a
// row, with the attribute it most likely misspells; the feed still
// loads, since Google allows attributes of a merchant's own. Google's
// attributes adlink has no use for, and the spellings it reads, are not
// named.
func TestMerchantUnknownColumns(t *testing.T) {
	tsv := "id\ttitle\tlink\tprice\tsalesprice\tBrnad\tsale price\tshipping\tcustom_label_0\tshipping(country:price)\tlieferzeit\n" +
		"A\ta\thttps://shop.example/a\t9.00 EUR\t5.00 EUR\tAcme\t\tDE::4.95 EUR\tx\tDE:4.95 EUR\t2 Tage\n" +
		"B\tb\thttps://shop.example/b\t9.00 EUR\t5.00 EUR\tAcme\t\tDE::4.95 EUR\tx\tDE:4.95 EUR\t2 Tage\n"
	n, got := warnings(t, tsv, "f.tsv")
	want := []string{
		`f.tsv:1: salesprice: not an attribute adlink reads, so skipped: did you mean sale_price?`,
		`f.tsv:1: brnad: not an attribute adlink reads, so skipped: did you mean brand?`,
		`f.tsv:1: lieferzeit: not an attribute adlink reads, so skipped`,
	}
	if n != 2 || !slices.Equal(got, want) {
		t.Errorf("%d ads, warnings:\n%s\nwant:\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMerchantUnknownElements: a g: element of an XML feed that no
// attribute adlink reads or Google defines is named once, on the line of
// the first item that has it; RSS's and Atom's own elements are not.
func TestMerchantUnknownElements(t *testing.T) {
	item := func(id string) string {
		return `<item><g:id>` + id + `</g:id><g:title>t</g:title><g:link>https://shop.example/` + id + `</g:link>` +
			`<g:sale_prize>5.00 EUR</g:sale_prize><g:shipping><g:country>DE</g:country></g:shipping><guid>` + id + `</guid>` +
			`<g:imagelink>https://shop.example/a.jpg</g:imagelink><g:color>rot</g:color></item>` + "\n"
	}
	feed := `<rss xmlns:g="http://base.google.com/ns/1.0"><channel>` + "\n" + item("A") + item("B") + `</channel></rss>`
	n, got := warnings(t, feed, "f.xml")
	want := []string{
		`f.xml:2: sale_prize: not an attribute adlink reads, so skipped: did you mean sale_price?`,
		`f.xml:2: imagelink: not an attribute adlink reads, so skipped: did you mean image_link?`,
	}
	if n != 2 || !slices.Equal(got, want) {
		t.Errorf("%d ads, warnings:\n%s\nwant:\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFetchUnknownColumns: a Fetcher gives a feed's warnings with its
// ads, again when the feed is unchanged, so that every refresh's answer
// has them.
func TestFetchUnknownColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.tsv")
	if err := os.WriteFile(path, []byte("id\ttitle\tlink\tsale-price\nA\ta\thttps://shop.example/a\t5.00 EUR\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(FetchOptions{})
	src, err := ParseSource(path + "#market=de-DE")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res, err := f.Fetch(context.Background(), src, Options{})
		if err != nil || len(res.Ads) != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "did you mean sale_price?") ||
			res.Unchanged != (i == 1) {
			t.Errorf("fetch %d: %+v, %v", i, res, err)
		}
	}
}

// FuzzMerchantMeant checks the guess at a misspelt attribute: the edit
// distance is a distance (zero for the same name alone, the same both
// ways, one for a letter dropped), and a guess is an attribute known.
func FuzzMerchantMeant(f *testing.F) {
	for _, s := range []string{"salesprice", "Brnad", "sale-price", "imagelink", "lieferzeit", "", "ж", "g:price(x:y)"} {
		f.Add(s, "sale_price")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		d := editDistance(a, b)
		if d != editDistance(b, a) || (d == 0) != (a == b) || d < 0 {
			t.Fatalf("editDistance(%q, %q) = %d, %d the other way", a, b, d, editDistance(b, a))
		}
		if len(a) > 0 && len(a) <= 64 && editDistance(a, a[1:]) != 1 {
			t.Fatalf("editDistance(%q, %q) = %d, want 1", a, a[1:], editDistance(a, a[1:]))
		}
		if m := merchantMeant(merchantToken(a)); m != "" && !merchantKnown(m) {
			t.Fatalf("merchantMeant(%q) = %q, no attribute", a, m)
		}
	})
}

// TestMerchantReadAttrs: the attributes a misspelling is matched against
// first are those the reader reads, none of them also listed as Google's
// unread ones.
func TestMerchantReadAttrs(t *testing.T) {
	for _, a := range merchantReadAttrs {
		if !new(merchantItem).set(a, "") || googleAttrs[a] {
			t.Errorf("%s: read %v, listed as unread %v", a, new(merchantItem).set(a, ""), googleAttrs[a])
		}
	}
	for _, a := range []string{"shipping", "tax", "bogus"} {
		if new(merchantItem).set(a, "") {
			t.Errorf("%s is read", a)
		}
	}
}

// TestMerchantUnknownBounded: a feed of thousands of attribute names of
// its own, in its header or one new per item, names MaxErrors of them
// and says that there are more, as the errors do, so that neither the
// reload's answer nor the log line carries a name a column.
func TestMerchantUnknownBounded(t *testing.T) {
	var header, row strings.Builder
	header.WriteString("id\ttitle\tlink\tprice")
	row.WriteString("A\ta\thttps://shop.example/a\t9.00 EUR")
	for i := range 5000 {
		fmt.Fprintf(&header, "\tmine_%d", i)
		row.WriteString("\tx")
	}
	var xml strings.Builder
	xml.WriteString(`<rss xmlns:g="http://base.google.com/ns/1.0"><channel>` + "\n")
	for i := range 5000 {
		fmt.Fprintf(&xml, "<item><g:id>%d</g:id><g:title>t</g:title><g:link>https://shop.example/%d</g:link><g:mine_%d>x</g:mine_%d></item>\n", i, i, i, i)
	}
	xml.WriteString(`</channel></rss>`)
	for name, feed := range map[string]string{"f.tsv": header.String() + "\n" + row.String() + "\n", "f.xml": xml.String()} {
		_, got := warnings(t, feed, name)
		if len(got) != MaxErrors+1 || !strings.Contains(got[0], "mine_0: not an attribute adlink reads") ||
			!strings.Contains(got[MaxErrors], "4950 more attributes") {
			t.Errorf("%s: %d warnings, first %q, last %q; want %d named and the rest counted", name, len(got),
				got[0], got[len(got)-1], MaxErrors)
		}
	}
}

// TestMerchantDisplayAdsAttrsKnown: Google's attributes for display ads
// (display_ads_id and its kin) are Google's, skipped without a word.
func TestMerchantDisplayAdsAttrsKnown(t *testing.T) {
	tsv := "id\ttitle\tlink\tprice\tdisplay_ads_id\tdisplay_ads_similar_id\tdisplay_ads_title\tdisplay_ads_link\tdisplay_ads_value\n" +
		"A\ta\thttps://shop.example/a\t9.00 EUR\tA\tB\tt\thttps://shop.example/a\t9.00\n"
	if n, got := warnings(t, tsv, "f.tsv"); n != 1 || len(got) != 0 {
		t.Errorf("%d ads, warnings %q, want none", n, got)
	}
}
