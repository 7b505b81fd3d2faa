package app

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
)

// changingFeed is a Merchant Center feed of keep items that never change,
// one item EXP-i expiring i minutes after start for each i in 1..expiring,
// and SALE, on sale until saleEnds.
func changingFeed(start time.Time, keep, expiring int, saleEnds time.Time) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" xmlns:g="http://base.google.com/ns/1.0"><channel><link>https://shop.example/</link>` + "\n")
	item := func(id, extra string) {
		fmt.Fprintf(&b, "<item><g:id>%s</g:id><g:title>Kaffeemühle %s</g:title><g:link>https://shop.example/p/%s</g:link><g:price>39.90 EUR</g:price>%s</item>\n", id, id, id, extra)
	}
	for i := range keep {
		item(fmt.Sprintf("KEEP-%d", i), "")
	}
	for i := 1; i <= expiring; i++ {
		item(fmt.Sprintf("EXP-%d", i), "<g:expiration_date>"+start.Add(time.Duration(i)*time.Minute).Format(time.RFC3339)+"</g:expiration_date>")
	}
	item("SALE", "<g:sale_price>29.90 EUR</g:sale_price><g:sale_price_effective_date>"+
		start.Add(-time.Hour).Format(time.RFC3339)+"/"+saleEnds.Format(time.RFC3339)+"</g:sale_price_effective_date>")
	b.WriteString("</channel></rss>\n")
	return b.String()
}

// TestChangeMomentsKeepTheirGap: a feed whose items expire minute after
// minute is read again at most once a ChangeGap, each item leaves the
// catalog at most a gap after its expiry, a sale's end counts at the
// first refresh after it, and the last moment is honoured.
func TestChangeMomentsKeepTheirGap(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Minute)
	const expiring, gap = 10, 5 * time.Minute
	var clock atomic.Pointer[time.Time]
	clock.Store(&start)
	path := filepath.Join(t.TempDir(), "feed.xml")
	writeFile(t, path, []byte(changingFeed(start, 40, expiring, start.Add(7*time.Minute))))
	cfg := testConfig(t)
	cfg.Catalogs = []string{path + "#market=de-DE&bid=0.05"}
	waited := make(chan time.Time, 64)
	var refreshes atomic.Int32
	a, err := New(cfg, Options{Now: func() time.Time { return *clock.Load() }, ChangeCheck: 10 * time.Millisecond,
		OnRefresh: func(r api.Reload) {
			if r.Result != resultSwapped {
				t.Errorf("a refresh for a change moment: %+v", r)
			}
			refreshes.Add(1)
		},
		waiting: func(now time.Time) {
			select {
			case waited <- now:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// settle returns once the refresh loop has waited twice on a clock at
	// or past at: whatever refresh at called for is done by then.
	settle := func(at time.Time) {
		t.Helper()
		for seen := 0; seen < 2; {
			select {
			case now := <-waited:
				if !now.Before(at) {
					seen++
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the refresh loop never waited on the clock at %s", at.Sub(start))
			}
		}
	}
	served := func(id string) bool {
		_, ok := a.Catalog().Indexes.All().Lookup(id)
		return ok
	}
	price := func() int64 {
		ix := a.Catalog().Indexes.All()
		i, ok := ix.Lookup("SALE")
		if !ok {
			t.Fatal("SALE is not served")
		}
		return ix.Ad(i).PriceCents
	}
	for m := 1; m <= expiring; m++ {
		now := start.Add(time.Duration(m) * time.Minute)
		clock.Store(&now)
		if m < expiring {
			settle(now)
		} else {
			// The last moment's refresh leaves no moment ahead, and the
			// loop then waits once, for ticks alone.
			for deadline := time.After(10 * time.Second); refreshes.Load() < int32(expiring*time.Minute/gap); {
				select {
				case <-waited:
				case <-deadline:
					t.Fatalf("%d refreshes, none for the last moment", refreshes.Load())
				}
			}
		}
		if n, most := refreshes.Load(), int32(time.Duration(m)*time.Minute/gap); n > most {
			t.Fatalf("%d refreshes by minute %d, want at most one a %s: %d", n, m, gap, most)
		}
		for i := 1; i <= expiring; i++ {
			id := fmt.Sprintf("EXP-%d", i)
			late := now.Sub(start.Add(time.Duration(i) * time.Minute))
			if served(id) && late >= gap {
				t.Errorf("minute %d: %s served %s after its expiry", m, id, late)
			}
		}
	}
	if n := refreshes.Load(); n != int32(expiring*time.Minute/gap) {
		t.Errorf("%d refreshes over %d minutes of moments, want %d", n, expiring, expiring*time.Minute/gap)
	}
	for i := 1; i <= expiring; i++ {
		if id := fmt.Sprintf("EXP-%d", i); served(id) {
			t.Errorf("%s is served after the last moment's refresh", id)
		}
	}
	if p := price(); p != 3990 {
		t.Errorf("after the sale SALE costs %d cents, want 3990", p)
	}
	if !served("KEEP-0") || a.Catalog().Indexes.All().Len() != 41 {
		t.Errorf("%d ads served after the moments, want the 41 that never expire", a.Catalog().Indexes.All().Len())
	}
}
