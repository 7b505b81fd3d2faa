package catalog_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"reflect"
	"testing"
	"time"

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

// writeMerchantXML writes ads as a Merchant Center RSS feed, each with the
// attributes merchants fill.
func writeMerchantXML(w *bytes.Buffer, ads []match.Ad) {
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<rss version="2.0" xmlns:g="http://base.google.com/ns/1.0"><channel><title>Shop</title><link>https://shop.example/</link><language>de-DE</language>` + "\n")
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	for i := range ads {
		a := &ads[i]
		fmt.Fprintf(w, "<item>\n<g:id>%s</g:id>\n<g:title>%s</g:title>\n<g:description>%s</g:description>\n<g:link>%s</g:link>\n",
			esc(a.ID), esc(a.Title), esc(a.Description), esc(a.Landing))
		if a.Logo != "" {
			fmt.Fprintf(w, "<g:image_link>%s</g:image_link>\n", esc(a.Logo))
		}
		if a.PriceCents > 0 {
			fmt.Fprintf(w, "<g:price>%d.%02d %s</g:price>\n", a.PriceCents/100, a.PriceCents%100, a.Currency)
		}
		fmt.Fprintf(w, "<g:availability>in_stock</g:availability>\n<g:brand>%s</g:brand>\n<g:gtin>%s</g:gtin>\n<g:mpn>%s</g:mpn>\n<g:product_type>%s</g:product_type>\n<g:condition>new</g:condition>\n</item>\n",
			esc(a.Manufacturer), a.GTIN, esc(a.Model), esc(a.Category))
	}
	w.WriteString("</channel></rss>\n")
}

// BenchmarkMerchantParse reads 100,000 generated products as a Merchant
// Center XML feed beside the same products as a JSON-lines feed, and
// reports the XML reader's rate as a share of the JSON-lines reader's.
func BenchmarkMerchantParse(b *testing.B) {
	var products []match.Ad
	for _, a := range testcatalog.Generate(120_000, 1) {
		if a.Kind == match.KindProduct && len(products) < 100_000 {
			products = append(products, a)
		}
	}
	var x, j bytes.Buffer
	writeMerchantXML(&x, products)
	if err := catalog.WriteJSONL(&j, products); err != nil {
		b.Fatal(err)
	}
	rate := func(feed []byte, name string) float64 {
		start := time.Now()
		ads, err := catalog.Load(bytes.NewReader(feed), name, catalog.Options{})
		if err != nil || len(ads) != len(products) {
			b.Fatalf("%s: %d ads, %v", name, len(ads), err)
		}
		return float64(len(ads)) / time.Since(start).Seconds()
	}
	var xmlRate, jsonlRate float64
	for b.Loop() {
		xmlRate += rate(x.Bytes(), "bench.xml")
		jsonlRate += rate(j.Bytes(), "bench.jsonl")
	}
	b.ReportMetric(xmlRate/float64(b.N), "xml_items/s")
	b.ReportMetric(jsonlRate/float64(b.N), "jsonl_lines/s")
	b.ReportMetric(xmlRate/jsonlRate, "xml_vs_jsonl_x")
	b.ReportMetric(float64(x.Len())/float64(j.Len()), "xml_bytes_vs_jsonl_x")
}
