package clicks_test

import (
	"context"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store/storetest"
)

func TestBoltRetainerKeepsTheContract(t *testing.T) {
	storetest.Retainer(t, func(t *testing.T) storetest.Opener[storetest.RetainerParts] {
		return opener(t, func(s stores) storetest.RetainerParts {
			return storetest.RetainerParts{Retainer: s.retainer, Log: s.log, Impressions: s.imps, Rollups: s.rollups}
		})
	})
}

// TestForgetSpendBefore: the spend of the days before the one given goes,
// that day's and later stay, for every advertiser.
func TestForgetSpendBefore(t *testing.T) {
	s, closeFn := openStores(t, t.TempDir())
	t.Cleanup(func() { closeFn() })
	l, r, rollups := s.ledger, s.retainer, s.rollups
	day := time.Date(2026, 8, 10, 0, 0, 0, 0, time.UTC)
	days := []time.Time{day.AddDate(0, 0, -3), day.Add(-time.Nanosecond), day, day.AddDate(0, 0, 1)}
	for i, at := range days {
		for _, adv := range []string{"a.example", "b.example"} {
			c := clicks.Click{Time: at, AdID: adv, Advertiser: adv, IP: "192.0.2." + string(rune('1'+i)), BidMicros: 100, Currency: "EUR"}
			if err := l.Record(t.Context(), &c, clicks.Use{}); err != nil || !c.Billable {
				t.Fatalf("Record: %v billable %v %q", err, c.Billable, c.Reason)
			}
		}
	}
	if err := r.ForgetSpendBefore(t.Context(), day); err != nil {
		t.Fatal(err)
	}
	for _, adv := range []string{"a.example", "b.example"} {
		for i, at := range days {
			spent, err := rollups.Spent(context.Background(), adv, at)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(100)
			if i < 2 {
				want = 0
			}
			if spent != want {
				t.Errorf("%s spent %d on %v, want %d", adv, spent, at, want)
			}
		}
	}
}
