package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// TestListReadsTheAccountIndexes: a page of an account's clicks, oldest
// or newest first and from a cursor, can be read from the index of the
// account's kind in the listing's order, forwards or backwards, with no
// sort of the account's clicks.
func TestListReadsTheAccountIndexes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, testpg.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var batch []clicks.Click
	for i := range 5000 {
		batch = append(batch, clicks.Click{ID: fmt.Sprintf("c%05d", i), Time: t0.Add(time.Duration(i) * time.Minute),
			AdID: "ad", AdType: "product", Type: "search", APIKey: fmt.Sprintf("key-%d", i%50), SiteID: "site",
			Criterion: "x", IP: "192.0.2.1", Advertiser: fmt.Sprintf("shop-%d.example", i%100), BidMicros: 1000,
			Currency: "EUR", Billable: true})
	}
	for _, c := range batch {
		if err := db.Clicks().Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	after := clicks.Position{Time: t0.Add(2000 * time.Minute), ID: "c02000"}
	for _, c := range []struct {
		q     clicks.Query
		index string
	}{
		{clicks.Query{Advertiser: "shop-7.example", Desc: true}, "Index Scan Backward using clicks_advertiser_at"},
		{clicks.Query{APIKey: "key-7", Desc: true, After: after}, "Index Scan Backward using clicks_api_key_at"},
		{clicks.Query{Advertiser: "shop-7.example", After: after}, "Index Scan using clicks_advertiser_at"},
		{clicks.Query{APIKey: "key-7"}, "Index Scan using clicks_api_key_at"},
	} {
		q := c.q
		q.From, q.To, q.Limit = t0, t0.AddDate(0, 0, 31), 50
		plan, err := pgstore.ListPlan(ctx, db, q)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, c.index) || strings.Contains(plan, "Sort") {
			t.Errorf("%+v: the plan\n%s\nwant %s and no sort", c.q, plan, c.index)
		}
	}
}
