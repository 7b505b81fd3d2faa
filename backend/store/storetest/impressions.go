package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Impressions runs the contract of clicks.Impressions against the stores
// fresh opens. fresh returns an Opener over a new, empty backing.
func Impressions(t *testing.T, fresh func(t *testing.T) Opener[clicks.Impressions]) {
	t.Helper()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	imp := func(ad string, at time.Time) clicks.Impression {
		return clicks.Impression{Time: at, AdID: ad, AdType: "product", Type: "intext", APIKey: "k", SiteID: "s",
			Criterion: "lg handy", YkTag: "t", Page: "https://blog.example/a", IP: "2001:db8::1", UserAgent: "Mozilla/5.0 (X11) Firefox/133.0"}
	}
	all := func(t *testing.T, s clicks.Impressions, from, to time.Time) []clicks.Impression {
		t.Helper()
		var out []clicks.Impression
		if err := s.Scan(within(t, 10*time.Second), from, to, func(i clicks.Impression) error {
			out = append(out, i)
			return nil
		}); err != nil {
			t.Fatalf("Scan: %v", err)
		}
		return out
	}

	t.Run("AppendScanRestart", func(t *testing.T) {
		o := fresh(t)
		s, closeFn := open(t, o)
		want := []clicks.Impression{imp("a", t0), imp("b", t0), imp("c", t0.Add(time.Hour))}
		if err := s.Append(within(t, 10*time.Second), want[:2]); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(within(t, 10*time.Second), want[2:]); err != nil {
			t.Fatal(err)
		}
		closeFn()
		s, _ = open(t, o)
		got := all(t, s, time.Time{}, time.Time{})
		if len(got) != 3 {
			t.Fatalf("%d impressions after a restart, want 3", len(got))
		}
		for i := range got {
			w := want[i]
			if !got[i].Time.Equal(w.Time) {
				t.Errorf("impression %d time %v, want %v", i, got[i].Time, w.Time)
			}
			got[i].Time = w.Time
			if got[i] != w {
				t.Errorf("impression %d: %+v, want %+v", i, got[i], w)
			}
		}
		if got := all(t, s, t0.Add(time.Minute), t0.Add(2*time.Hour)); len(got) != 1 || got[0].AdID != "c" {
			t.Errorf("scan of the second hour: %+v", got)
		}
		if got := all(t, s, t0, t0.Add(time.Hour)); len(got) != 2 || got[0].AdID != "a" || got[1].AdID != "b" {
			t.Errorf("scan of the first hour, in the order appended: %+v", got)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Append(ctx, []clicks.Impression{imp("a", t0)}); err == nil {
			t.Error("Append with a done context succeeded")
		}
		if err := s.Append(within(t, 10*time.Second), []clicks.Impression{imp("b", t0), {AdID: "no time"}}); err == nil {
			t.Error("an impression without a time was accepted")
		}
		if got := all(t, s, time.Time{}, time.Time{}); len(got) != 0 {
			t.Errorf("refused appends stored %+v", got)
		}
	})
}
