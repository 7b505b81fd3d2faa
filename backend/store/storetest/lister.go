package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// ListedStore is a click log with its listings.
type ListedStore interface {
	clicks.Store
	clicks.Lister
}

// Lister runs the contract of clicks.Lister against the stores fresh
// opens: every query's pages, followed from each page's last click, give
// the clicks the query selects once each, in the order of time then id
// or, newest first, backwards, clicks of one nanosecond and of no id
// among them: an account's 25 clicks all share one.
func Lister(t *testing.T, fresh func(t *testing.T) Opener[ListedStore]) {
	t.Helper()
	s, _ := open(t, fresh(t))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	var all []clicks.Click
	for i := range 40 {
		c := clicks.Click{ID: fmt.Sprintf("id-%02d", (i*7)%40), Time: t0.Add(time.Duration(i/8) * time.Second),
			AdID: "ad", AdType: "product", Type: "search", APIKey: []string{"key-a", "key-b"}[i%2],
			SiteID: "site", Criterion: "lg handy", IP: "192.0.2.1", Advertiser: []string{"shop-a", "shop-b", "shop-a"}[i%3],
			BidMicros: int64(1000 * (i + 1)), Currency: "EUR", Billable: i%4 != 0}
		if !c.Billable {
			c.Reason = clicks.ReasonRepeat
		}
		if i == 5 || i == 6 {
			c.ID = "" // recorded before clicks had ids
			c.Time = t0.Add(10 * time.Second).Add(time.Duration(i))
		}
		all = append(all, c)
	}
	// Appended out of order: a listing orders them.
	for _, i := range []int{3, 1, 0, 2, 4} {
		for j := i * 8; j < i*8+8; j++ {
			appendClicks(t, s, all[j])
		}
	}
	for i := range 25 {
		c := clicks.Click{ID: fmt.Sprintf("same-%02d", (i*11)%25), Time: t0.Add(5 * time.Second),
			AdID: "ad", AdType: "product", Type: "search", APIKey: "key-c", SiteID: "site", Criterion: "lg handy",
			IP: "192.0.2.1", Advertiser: "shop-c", BidMicros: 500, Currency: "EUR", Billable: true}
		all = append(all, c)
		appendClicks(t, s, c)
	}
	key := func(c clicks.Click) string { return c.Time.Format(time.RFC3339Nano) + "/" + c.ID }
	slices.SortFunc(all, func(a, b clicks.Click) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	yes, no := true, false
	for _, q := range []clicks.Query{
		{},
		{Advertiser: "shop-a"},
		{APIKey: "key-b", Billable: &yes},
		{Advertiser: "shop-b", Billable: &no},
		{From: t0.Add(time.Second), To: t0.Add(3 * time.Second)},
		{Advertiser: "nobody"},
		{APIKey: "key-c"},
		{Advertiser: "shop-c", From: t0.Add(5 * time.Second), To: t0.Add(5*time.Second + 1)},
		{Advertiser: "shop-c", To: t0.Add(5 * time.Second)},
		// Before 1970, times are negative: no click's.
		{APIKey: "key-a", From: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(1900, 2, 1, 0, 0, 0, 0, time.UTC)},
		{From: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(1900, 2, 1, 0, 0, 0, 0, time.UTC)},
	} {
		for _, desc := range []bool{false, true} {
			q := q
			q.Desc = desc
			var want []string
			for _, c := range all {
				if (q.Advertiser == "" || c.Advertiser == q.Advertiser) && (q.APIKey == "" || c.APIKey == q.APIKey) &&
					(q.Billable == nil || c.Billable == *q.Billable) && (q.From.IsZero() || !c.Time.Before(q.From)) &&
					(q.To.IsZero() || c.Time.Before(q.To)) {
					want = append(want, key(c))
				}
			}
			if desc {
				slices.Reverse(want)
			}
			for _, limit := range []int{1, 3, 8, 100} {
				q := q
				q.Limit = limit
				var got []string
				for pages := 0; ; pages++ {
					if pages > len(all) {
						t.Fatalf("%+v: the pages do not end", q)
					}
					page, more, err := s.List(t.Context(), q)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit || (more && len(page) == 0) {
						t.Fatalf("%+v: a page of %d, more %v", q, len(page), more)
					}
					for _, c := range page {
						got = append(got, key(c))
						if c.Advertiser == "" || c.Currency != "EUR" || c.BidMicros == 0 || c.Criterion != "lg handy" {
							t.Errorf("click %s listed as %+v", c.ID, c)
						}
					}
					if !more {
						break
					}
					last := page[len(page)-1]
					q.After = clicks.Position{Time: last.Time, ID: last.ID}
				}
				if !slices.Equal(got, want) {
					t.Errorf("query %+v, limit %d: pages give\n%v\nwant\n%v", q, limit, got, want)
				}
			}
		}
	}
}
