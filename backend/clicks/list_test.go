package clicks_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

// TestLogListPassesOverOthers: the log's listing, which passes over the
// records of other accounts undecoded, lists what a scan of every
// decoded click lists, for ids one is the start of another's, ids JSON
// escapes, and a page that ends amid a nanosecond's clicks.
func TestLogListPassesOverOthers(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	keys := []string{"k", "kk", "k\"", "k<&>", "k\\", "kö", "k\xff", "\"api_key\":\"k\""}
	ads := []string{"a.example", "a.example.evil", "b.example"}
	for i := range 300 {
		c := clicks.Click{ID: strconv.Itoa(1000 + i), Time: t0.Add(time.Duration(i/3) * time.Minute), AdID: "ad",
			APIKey: keys[i%len(keys)], Criterion: keys[(i+1)%len(keys)], YkTag: "x", Advertiser: ads[i%len(ads)], Billable: i%5 != 0}
		if err := log.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	var qs []clicks.Query
	for _, k := range keys {
		qs = append(qs, clicks.Query{APIKey: k}, clicks.Query{APIKey: k, Billable: &yes})
	}
	for _, a := range ads {
		qs = append(qs, clicks.Query{Advertiser: a})
	}
	for _, q := range qs {
		for _, limit := range []int{1, 2, 7, 1000} {
			q.From, q.To, q.Limit, q.After = t0, t0.Add(24*time.Hour), limit, clicks.Position{}
			var got, want []clicks.Click
			for pages := 0; ; pages++ {
				page, more, err := log.List(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				ref, refMore, err := clicks.ListScan(ctx, log, q)
				if err != nil {
					t.Fatal(err)
				}
				got, want = append(got, page...), append(want, ref...)
				if more != refMore || !more {
					break
				}
				last := page[len(page)-1]
				q.After = clicks.Position{Time: last.Time, ID: last.ID}
			}
			ids := func(cs []clicks.Click) []string {
				var s []string
				for _, c := range cs {
					s = append(s, c.ID)
				}
				return s
			}
			if !slices.Equal(ids(got), ids(want)) || len(want) == 0 && q.APIKey != "k\xff" {
				t.Errorf("%q %q limit %d: listed %q, a scan lists %q", q.APIKey, q.Advertiser, limit, ids(got), ids(want))
			}
		}
	}
}

// TestLogListBeforeTheEpoch: a range before 1970, which a listing takes
// (a date is any YYYY-MM-DD), holds none of the log's clicks, oldest or
// newest first, from the account index or the scan: the times of its
// bounds are negative, and a key's time is read unsigned.
func TestLogListBeforeTheEpoch(t *testing.T) {
	db, log := openLog(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	for i := range 10 {
		c := clicks.Click{ID: "c" + strconv.Itoa(i), Time: time.Date(2026, 11, 1, i, 0, 0, 0, time.UTC), AdID: "ad",
			APIKey: "k", Advertiser: "a.example", Billable: true}
		if err := log.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct{ from, to time.Time }{
		{time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1900, 2, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(1969, 12, 15, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		for _, q := range []clicks.Query{{APIKey: "k"}, {Advertiser: "a.example"}, {}} {
			for _, desc := range []bool{false, true} {
				q.From, q.To, q.Desc, q.Limit = r.from, r.to, desc, 5
				page, _, err := log.List(ctx, q)
				if err != nil || len(page) != 0 {
					t.Errorf("%+v: %d clicks of 2026 listed, %v; want none", q, len(page), err)
				}
				page, _, err = clicks.ListScanning(ctx, log, q)
				if err != nil || len(page) != 0 {
					t.Errorf("%+v without the index: %d clicks of 2026 listed, %v; want none", q, len(page), err)
				}
			}
		}
	}
}
