package pages

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/adlink/adlink/match"
)

// TestRematchNewCatalog: a page analysed against a catalog without the
// iPhone answers with the iPhone once a catalog with it is served, and is
// not fetched again for it.
func TestRematchNewCatalog(t *testing.T) {
	var hits atomic.Int32
	base := reviewServer(t, &hits)
	full := fixtureIndex(t)
	var ads []match.Ad
	for i := range full.Len() {
		if a := full.Ad(i); a.Manufacturer != "Apple" {
			ads = append(ads, a)
		}
	}
	without, err := match.Build(ads)
	if err != nil {
		t.Fatal(err)
	}
	type version struct {
		ix *match.Index
		v  string
	}
	var cur atomic.Pointer[version]
	cur.Store(&version{without, "v1"})
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	e := open(t, t.TempDir(), 0, f, nil, Options{Catalog: func() (Reducer, string) {
		c := cur.Load()
		return c.ix, c.v
	}})
	ctx := context.Background()
	pageURL, _ := Canonical(base + "/review")
	e.svc.Lookup(ctx, pageURL)
	e.svc.Start()
	drain(t, e.svc)
	res, err := e.svc.Lookup(ctx, pageURL)
	if err != nil || res.Status != StatusAnalysed {
		t.Fatalf("%+v %v", res, err)
	}
	if strings.Contains(res.Title+res.Text, "iPhone") {
		t.Fatalf("reduced against a catalog without it, the page still says iPhone: %q / %q", res.Title, res.Text)
	}

	cur.Store(&version{full, "v2"})
	for range 2 { // the second lookup is answered from memory
		res, err = e.svc.Lookup(ctx, pageURL)
		if err != nil || res.Status != StatusAnalysed {
			t.Fatalf("%+v %v", res, err)
		}
		hitsOf := full.Match(&match.Query{Page: true, Title: res.Title, Text: res.Text, Country: "de"})
		if len(hitsOf) != 1 || full.Ad(hitsOf[0].Ad).ID != "EBAY.4.291181826279" {
			t.Errorf("with the new catalog: hits %+v of %q / %q", hitsOf, res.Title, res.Text)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the page was fetched %d times, want once", n)
	}
}
