package clicks_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
)

// TestParseInvalidation: dates cover whole UTC days, to's day included;
// RFC 3339 times are taken as they are; ids are a list; a value that
// cannot be read, or a range past the stores' times, is refused naming
// its parameter.
func TestParseInvalidation(t *testing.T) {
	params := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	inv, err := clicks.ParseInvalidation(params("api_key", "k", "site_id", "s", "ad", "a1", "id", "x, y,,z", "from", "2026-11-20",
		"to", "2026-11-21", "reason", "farm", "dry_run", "true"))
	if err != nil || inv.Check() != nil {
		t.Fatalf("ParseInvalidation: %v, %v", err, inv.Check())
	}
	if !inv.From.Equal(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)) || !inv.To.Equal(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) ||
		!slices.Equal(inv.IDs, []string{"x", "y", "z"}) || !inv.DryRun || inv.APIKey != "k" || inv.SiteID != "s" || inv.AdID != "a1" || inv.Note != "farm" {
		t.Errorf("parsed %+v", inv)
	}
	inv, err = clicks.ParseInvalidation(params("ad", "a1", "from", "2026-11-20T10:00:00+01:00", "to", "2026-11-20T12:00:00Z", "reason", "r"))
	if err != nil || !inv.From.Equal(time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)) || !inv.To.Equal(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)) || inv.DryRun {
		t.Errorf("times: %+v, %v", inv, err)
	}
	for _, c := range []struct {
		kv    []string
		param string
	}{
		{[]string{"from", "yesterday"}, "from"},
		{[]string{"from", "2026-11-20", "to", "2262-05-01"}, "to"},
		{[]string{"from", "1800-01-01"}, "from"},
		{[]string{"dry_run", "yes"}, "dry_run"},
	} {
		_, err := clicks.ParseInvalidation(params(c.kv...))
		var ie *clicks.InvalidationError
		if !errors.As(err, &ie) || ie.Param != c.param {
			t.Errorf("%q: %v, want an error of %s", c.kv, err, c.param)
		}
	}
	// 200 characters of a note pass, however many bytes they are.
	inv, _ = clicks.ParseInvalidation(params("ad", "a", "from", "2026-11-20", "to", "2026-11-20", "reason", strings.Repeat("ü", 200)))
	if err := inv.Check(); err != nil {
		t.Errorf("a note of 200 characters: %v", err)
	}
}

// BenchmarkMatchesManyIDs: one transaction's scan of the clicks of an
// invalidation by the 40,000 ids POST /admin/invalidate's 1 MiB form
// holds, none of them matching; its clicks' commit waits on it.
func BenchmarkMatchesManyIDs(b *testing.B) {
	inv := clicks.Invalidation{From: time.Unix(0, 0), To: time.Unix(1<<32, 0), Note: "farm"}
	for range 40_000 {
		inv.IDs = append(inv.IDs, clicks.NewID())
	}
	cs := make([]clicks.Click, 5000)
	for i := range cs {
		cs[i] = clicks.Click{ID: clicks.NewID(), Time: time.Unix(int64(i), 0)}
	}
	inv.Prepare()
	b.ResetTimer()
	for range b.N {
		for i := range cs {
			if inv.Matches(&cs[i]) {
				b.Fatal("a click matched")
			}
		}
	}
}

// TestInvalidateDryRunReadsInParts: a dry run reads the range a few
// thousand clicks a read transaction, as the credit writes it, never in
// one: a long read holds back the commit that must grow the file.
func TestInvalidateDryRunReadsInParts(t *testing.T) {
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.NoSync = true // 12,000 commits of a test's file
	ledger, err := clicks.NewLedger(db)
	if err != nil {
		t.Fatal(err)
	}
	v, err := clicks.NewInvalidator(db)
	if err != nil {
		t.Fatal(err)
	}
	day0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	const n = 12_000
	for i := range n {
		c := clicks.Click{Time: day0.Add(time.Duration(i) * 10 * time.Second), AdID: "ad", AdType: "advertiser", Type: "search",
			APIKey: "k", SiteID: "s", IP: fmt.Sprintf("2001:db8:%x:%x::1", i>>16, i&0xffff), UserAgent: "Mozilla/5.0",
			Advertiser: "eu.example", BidMicros: 1000, Currency: "EUR"}
		if err := ledger.Record(t.Context(), &c, clicks.Use{}); err != nil || !c.Billable {
			t.Fatalf("click %d: %v, billable %v %q", i, err, c.Billable, c.Reason)
		}
	}
	before := db.Stats().TxN
	got, err := v.Invalidate(t.Context(), clicks.Invalidation{APIKey: "k", From: day0, To: day0.AddDate(0, 0, 30), Note: "farm", DryRun: true})
	if err != nil || got.Clicks != n || got.Micros["EUR"] != n*1000 {
		t.Fatalf("dry run: %+v, %v; want %d clicks", got, err, n)
	}
	// The oldest day held is a read (the range starts on it, so the
	// rollups are not read); the clicks, 5,000 a transaction, three more.
	if reads := db.Stats().TxN - before; reads < 4 {
		t.Errorf("the dry run read %d clicks in %d read transactions with the oldest day's", n, reads)
	}
}
