package catalog_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

func TestRoundTrip(t *testing.T) {
	ads, err := catalog.Demo(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ads = append(ads, testcatalog.Generate(300, 7)...)
	var j, c bytes.Buffer
	if err := catalog.WriteJSONL(&j, ads); err != nil {
		t.Fatal(err)
	}
	if err := catalog.WriteCSV(&c, ads); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := catalog.Load(&j, "rt.jsonl", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fromCSV, err := catalog.Load(&c, "rt.csv", catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, ads) {
		for i := range ads {
			if !reflect.DeepEqual(fromJSON[i], ads[i]) {
				t.Fatalf("JSONL round trip changed ad %d:\n got %+v\nwant %+v", i, fromJSON[i], ads[i])
			}
		}
	}
	if !reflect.DeepEqual(fromCSV, ads) {
		for i := range ads {
			if !reflect.DeepEqual(fromCSV[i], ads[i]) {
				t.Fatalf("CSV round trip changed ad %d:\n got %+v\nwant %+v", i, fromCSV[i], ads[i])
			}
		}
	}
}

// BenchmarkLoad reads a 100,000-line generated feed in each format.
func BenchmarkLoad(b *testing.B) {
	ads := testcatalog.Generate(100_000, 1)
	for _, format := range []struct {
		ext   string
		write func(*bytes.Buffer, []match.Ad) error
	}{
		{".jsonl", func(w *bytes.Buffer, a []match.Ad) error { return catalog.WriteJSONL(w, a) }},
		{".csv", func(w *bytes.Buffer, a []match.Ad) error { return catalog.WriteCSV(w, a) }},
	} {
		var feed bytes.Buffer
		if err := format.write(&feed, ads); err != nil {
			b.Fatal(err)
		}
		b.Run(format.ext[1:], func(b *testing.B) {
			b.SetBytes(int64(feed.Len()))
			for b.Loop() {
				if _, err := catalog.Load(bytes.NewReader(feed.Bytes()), "bench"+format.ext, catalog.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(ads))*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
