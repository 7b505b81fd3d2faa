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
		if _, err := s.Append(within(t, 10*time.Second), want[:2]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(within(t, 10*time.Second), want[2:]); err != nil {
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

	t.Run("RepeatsCountOnce", func(t *testing.T) {
		o := fresh(t)
		s, closeFn := open(t, o)
		const window = 30 * time.Minute
		keyed := func(ad, site, network string, at time.Time) clicks.Impression {
			i := imp(ad, at)
			i.SiteID = site
			i.Key = clicks.ImpressionKey(ad, "k", site, network, at, window)
			return i
		}
		site, other := "blog", "shop"
		net1, net2 := clicks.Network("2001:db8::1"), clicks.Network("2001:db8:1::1")
		appendN := func(t *testing.T, s clicks.Impressions, imps ...clicks.Impression) int {
			t.Helper()
			n, err := s.Append(within(t, 10*time.Second), imps)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			return n
		}
		if n := appendN(t, s, keyed("a", site, net1, t0), keyed("b", site, net1, t0)); n != 0 {
			t.Errorf("first impressions of two ads: %d repeats, want 0", n)
		}
		// The same impression again, in one call and in others, later in
		// its window, is a repeat each time.
		if n := appendN(t, s, keyed("a", site, net1, t0.Add(time.Minute)), keyed("a", site, net1, t0.Add(2*time.Minute))); n != 2 {
			t.Errorf("a replayed twice in one call: %d repeats, want 2", n)
		}
		closeFn()
		s, _ = open(t, o)
		for i := range 5 {
			if n := appendN(t, s, keyed("a", site, net1, t0.Add(time.Duration(i)*time.Minute))); n != 1 {
				t.Fatalf("replay %d after a restart: %d repeats, want 1", i, n)
			}
		}
		// Another network, another site, the next window, and an
		// impression without a key count again.
		fresh := []clicks.Impression{keyed("a", site, net2, t0), keyed("a", other, net1, t0),
			keyed("a", site, net1, t0.Add(window)), imp("a", t0), imp("a", t0)}
		if n := appendN(t, s, fresh...); n != 0 {
			t.Errorf("new network, site, window and keyless impressions: %d repeats, want 0", n)
		}
		got := all(t, s, time.Time{}, time.Time{})
		if len(got) != 7 {
			t.Fatalf("%d impressions recorded, want 7: %+v", len(got), got)
		}
		a := 0
		for _, g := range got {
			if g.AdID == "a" {
				a++
			}
			if g.Key != "" {
				t.Errorf("Scan returned a key: %+v", g)
			}
		}
		if a != 6 {
			t.Errorf("%d impressions of a, want 6", a)
		}
		// A key not ImpressionKey's is refused, and nothing of its call
		// recorded.
		if _, err := s.Append(within(t, 10*time.Second), []clicks.Impression{imp("c", t0), {Time: t0, AdID: "d", Key: "zz"}}); err == nil {
			t.Error("an impression of a malformed key was accepted")
		}
		if got := all(t, s, time.Time{}, time.Time{}); len(got) != 7 {
			t.Errorf("a refused append stored %d impressions", len(got)-7)
		}
	})

	t.Run("ConcurrentRepeatsCountOnce", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		const n = 8
		errs, repeats := make(chan error, n), make(chan int, n)
		for i := range n {
			go func() {
				m := imp("a", t0.Add(time.Duration(i)*time.Second))
				m.Key = clicks.ImpressionKey("a", m.APIKey, m.SiteID, "net", m.Time, time.Hour)
				r, err := s.Append(within(t, 10*time.Second), []clicks.Impression{m})
				errs <- err
				repeats <- r
			}()
		}
		total := 0
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("Append: %v", err)
			}
			total += <-repeats
		}
		if got := all(t, s, time.Time{}, time.Time{}); len(got) != 1 || total != n-1 {
			t.Errorf("%d concurrent appends of one key: %d recorded, %d repeats; want 1 and %d", n, len(got), total, n-1)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		s, _ := open(t, fresh(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.Append(ctx, []clicks.Impression{imp("a", t0)}); err == nil {
			t.Error("Append with a done context succeeded")
		}
		if _, err := s.Append(within(t, 10*time.Second), []clicks.Impression{imp("b", t0), {AdID: "no time"}}); err == nil {
			t.Error("an impression without a time was accepted")
		}
		if got := all(t, s, time.Time{}, time.Time{}); len(got) != 0 {
			t.Errorf("refused appends stored %+v", got)
		}
	})
}
