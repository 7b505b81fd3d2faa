package catalog_test

import (
	"testing"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// BenchmarkSearchDemo is the matcher's share of a /v2/search/link request
// over the demo catalog: match, then write the link entries.
func BenchmarkSearchDemo(b *testing.B) {
	ads, err := catalog.Demo(catalog.Options{BaseURL: "http://localhost:8080"})
	if err != nil {
		b.Fatal(err)
	}
	ix, err := match.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	links := &contract.Links{Base: "http://localhost:8080", Type: contract.TypeSearch, APIKey: "demo", SiteID: "demo"}
	o := links.Options()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		hits := ix.Match(&match.Query{Text: "lg handy", Country: "de", Lang: "de"})
		buf = ix.AppendResponse(buf[:0], hits, &o)
	}
}
