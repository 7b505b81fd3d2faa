package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/match"
)

// Removals runs the contract of catalog.Removals. Each replica opens its
// own store on the backing the Opener names.
func Removals(t *testing.T, fresh func(t *testing.T) Opener[catalog.Removals]) {
	t.Helper()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ad := func(id, landing string) match.Ad {
		return match.Ad{ID: id, Kind: match.KindProduct, Title: "LG Handy " + id, Keywords: []string{"lg handy", "handy"},
			Manufacturer: "LG", Category: "Handys", PriceCents: 19900, Currency: "EUR", Landing: landing,
			Advertiser: "shop.example", Markets: []match.Market{{Country: "de", Lang: "de"}}, BidMicros: 100_000}
	}
	byID := func(t *testing.T, got []catalog.RemovedAd) map[string]catalog.RemovedAd {
		t.Helper()
		m := map[string]catalog.RemovedAd{}
		for _, r := range got {
			if _, dup := m[r.Ad.ID]; dup {
				t.Fatalf("Share returned %s twice", r.Ad.ID)
			}
			m[r.Ad.ID] = r
		}
		return m
	}

	t.Run("EveryReplicaReadsWhatOneShared", func(t *testing.T) {
		o := fresh(t)
		a, closeA := open(t, o)
		ctx := within(t, 30*time.Second)
		if got, err := a.Share(ctx, nil, now); err != nil || len(got) != 0 {
			t.Fatalf("Share on nothing = %v, %v; want none", got, err)
		}
		// x's advertiser had a budget when it was removed, which a replica
		// whose advertisers file no longer lists it bills x's clicks under.
		x := catalog.RemovedAd{Ad: ad("SHOP.1.X", "https://shop.example/x"), Until: now.Add(time.Hour),
			Budget: accounts.Budget{DailyMicros: 500_000, Currency: "EUR", Pacing: accounts.Even, Zone: "America/Los_Angeles"}}
		y := catalog.RemovedAd{Ad: ad("SHOP.1.Y", "https://shop.example/y"), Until: now.Add(time.Hour)}
		same := func(got []catalog.RemovedAd) bool {
			m := byID(t, got)
			return len(got) == 2 && reflect.DeepEqual(m[x.Ad.ID].Ad, x.Ad) && m[x.Ad.ID].Until.Equal(x.Until) &&
				m[x.Ad.ID].Budget == x.Budget && reflect.DeepEqual(m[y.Ad.ID].Ad, y.Ad) && m[y.Ad.ID].Budget == y.Budget
		}
		if got, err := a.Share(ctx, []catalog.RemovedAd{x, y}, now); err != nil || !same(got) {
			t.Fatalf("Share = %+v, %v; want %+v and %+v", got, err, x, y)
		}
		closeA()
		// A replica started later, on its own handle, reads them.
		b, _ := open(t, o)
		got, err := b.Share(ctx, nil, now.Add(time.Minute))
		if err != nil || !same(got) {
			t.Fatalf("another replica's Share = %+v, %v; want %+v and %+v", got, err, x, y)
		}
	})

	t.Run("TheLaterUntilWins", func(t *testing.T) {
		o := fresh(t)
		s, _ := open(t, o)
		ctx := within(t, 30*time.Second)
		early := catalog.RemovedAd{Ad: ad("SHOP.1.X", "https://shop.example/early"), Until: now.Add(time.Hour)}
		late := catalog.RemovedAd{Ad: ad("SHOP.1.X", "https://shop.example/late"), Until: now.Add(2 * time.Hour)}
		for _, order := range [][]catalog.RemovedAd{{early, late}, {late, early}, {late}, {early}} {
			for _, r := range order {
				if _, err := s.Share(ctx, []catalog.RemovedAd{r}, now); err != nil {
					t.Fatal(err)
				}
			}
			// A replica started now reads every removal.
			reader, closeReader := open(t, o)
			got, err := reader.Share(ctx, nil, now)
			closeReader()
			if r := byID(t, got)["SHOP.1.X"]; err != nil || len(got) != 1 || r.Ad.Landing != late.Ad.Landing || !r.Until.Equal(late.Until) {
				t.Fatalf("after %d shares = %+v, %v; want the later one, %+v", len(order), got, err, late)
			}
		}
		// One call with both keeps the later too.
		one, _ := open(t, fresh(t))
		got, err := one.Share(ctx, []catalog.RemovedAd{late, early, early}, now)
		if r := byID(t, got)["SHOP.1.X"]; err != nil || r.Ad.Landing != late.Ad.Landing || !r.Until.Equal(late.Until) {
			t.Fatalf("one share of both = %+v, %v; want %+v", got, err, late)
		}
	})

	t.Run("OnlyWhatChangedIsReadAgain", func(t *testing.T) {
		o := fresh(t)
		a, _ := open(t, o)
		b, _ := open(t, o)
		ctx := within(t, 30*time.Second)
		x := catalog.RemovedAd{Ad: ad("SHOP.1.X", "https://shop.example/x"), Until: now.Add(time.Hour)}
		y := catalog.RemovedAd{Ad: ad("SHOP.1.Y", "https://shop.example/y"), Until: now.Add(time.Hour)}
		later := catalog.RemovedAd{Ad: ad("SHOP.1.X", "https://shop.example/x-later"), Until: now.Add(2 * time.Hour)}
		earlier := catalog.RemovedAd{Ad: ad("SHOP.1.X", "https://shop.example/x-earlier"), Until: now.Add(time.Minute)}
		ids := func(got []catalog.RemovedAd) []string {
			var out []string
			for _, r := range got {
				out = append(out, r.Ad.ID+" "+r.Ad.Landing)
			}
			slices.Sort(out)
			return out
		}
		for i, step := range []struct {
			by    catalog.Removals
			share []catalog.RemovedAd
			want  []string
		}{
			{a, []catalog.RemovedAd{x}, []string{"SHOP.1.X https://shop.example/x"}},
			{b, nil, []string{"SHOP.1.X https://shop.example/x"}}, // a replica's first share reads all
			{b, nil, nil},
			{a, []catalog.RemovedAd{y}, []string{"SHOP.1.Y https://shop.example/y"}},
			{b, nil, []string{"SHOP.1.Y https://shop.example/y"}},
			{a, []catalog.RemovedAd{later}, []string{"SHOP.1.X https://shop.example/x-later"}},
			{b, nil, []string{"SHOP.1.X https://shop.example/x-later"}}, // recorded again by another replica
			{b, []catalog.RemovedAd{earlier}, nil},                      // not recorded: the later Until stays
			{a, nil, nil},
		} {
			got, err := step.by.Share(ctx, step.share, now)
			if err != nil || !slices.Equal(ids(got), step.want) {
				t.Fatalf("step %d: Share = %v, %v; want %v", i, ids(got), err, step.want)
			}
		}
	})

	t.Run("AReaderMissesNoConcurrentShare", func(t *testing.T) {
		o := fresh(t)
		const writers, shares, each = 4, 10, 5
		stores := make([]catalog.Removals, writers)
		for i := range stores {
			stores[i], _ = open(t, o)
		}
		reader, _ := open(t, o)
		ctx := within(t, time.Minute)
		seen := map[string]bool{}
		read := func() {
			got, err := reader.Share(ctx, nil, now)
			if err != nil {
				t.Errorf("the reader's share: %v", err)
			}
			for _, r := range got {
				seen[r.Ad.ID] = true
			}
		}
		var wg sync.WaitGroup
		for w, s := range stores {
			wg.Go(func() {
				for k := range shares {
					var mine []catalog.RemovedAd
					for j := range each {
						id := fmt.Sprintf("SHOP.%d.%02d%d", w, k, j)
						mine = append(mine, catalog.RemovedAd{Ad: ad(id, "https://shop.example/"+id), Until: now.Add(time.Hour)})
					}
					if _, err := s.Share(ctx, mine, now); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for reading := true; reading; {
			select {
			case <-done:
				reading = false
			default:
				read()
			}
		}
		read()
		if len(seen) != writers*shares*each {
			t.Errorf("the reader, reading while the writers shared, read %d ads, want %d", len(seen), writers*shares*each)
		}
	})

	t.Run("ExpiredAreDeleted", func(t *testing.T) {
		o := fresh(t)
		s, _ := open(t, o)
		ctx := within(t, 30*time.Second)
		// reader is a replica started at at, which reads every removal.
		reader := func(at time.Time) ([]catalog.RemovedAd, error) {
			r, closeR := open(t, o)
			defer closeR()
			return r.Share(ctx, nil, at)
		}
		soon := catalog.RemovedAd{Ad: ad("SHOP.1.S", "https://shop.example/s"), Until: now.Add(time.Minute)}
		later := catalog.RemovedAd{Ad: ad("SHOP.1.L", "https://shop.example/l"), Until: now.Add(time.Hour)}
		gone := catalog.RemovedAd{Ad: ad("SHOP.1.G", "https://shop.example/g"), Until: now}
		got, err := s.Share(ctx, []catalog.RemovedAd{soon, later, gone}, now)
		if m := byID(t, got); err != nil || len(m) != 2 || m["SHOP.1.G"].Ad.ID != "" {
			t.Fatalf("Share = %+v, %v; want SHOP.1.S and SHOP.1.L", got, err)
		}
		got, err = reader(soon.Until)
		if m := byID(t, got); err != nil || len(m) != 1 || m["SHOP.1.L"].Ad.ID == "" {
			t.Fatalf("at SHOP.1.S's until = %+v, %v; want SHOP.1.L alone", got, err)
		}
		// Deleted, not only left out: a clock read earlier finds it gone.
		got, err = reader(now)
		if m := byID(t, got); err != nil || len(m) != 1 || m["SHOP.1.S"].Ad.ID != "" {
			t.Fatalf("back at the start = %+v, %v; want SHOP.1.L alone", got, err)
		}
	})

	t.Run("ReplicasShareAtOnce", func(t *testing.T) {
		o := fresh(t)
		const replicas, ads = 4, 200
		want := map[string]time.Time{}
		stores := make([]catalog.Removals, replicas)
		for i := range stores {
			stores[i], _ = open(t, o)
		}
		ctx := within(t, time.Minute)
		var wg sync.WaitGroup
		errs := make(chan error, replicas)
		for i, s := range stores {
			// Each replica saw every removal, with its own Until, and
			// shares them in an order of its own.
			var mine []catalog.RemovedAd
			for k := range ads {
				id := fmt.Sprintf("SHOP.1.%03d", k)
				until := now.Add(time.Duration(1+(k+i)%replicas) * time.Hour)
				if until.After(want[id]) {
					want[id] = until
				}
				mine = append(mine, catalog.RemovedAd{Ad: ad(id, "https://shop.example/"+id), Until: until})
			}
			if i%2 == 1 {
				slices.Reverse(mine)
			}
			wg.Go(func() {
				_, err := s.Share(ctx, mine, now)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a replica's share: %v", err)
			}
		}
		reader, _ := open(t, o)
		got, err := reader.Share(ctx, nil, now)
		if err != nil || len(got) != ads {
			t.Fatalf("Share after = %d ads, %v; want %d", len(got), err, ads)
		}
		for _, r := range got {
			if !r.Until.Equal(want[r.Ad.ID]) || !strings.HasSuffix(r.Ad.Landing, r.Ad.ID) {
				t.Errorf("%s until %v landing %s, want until %v", r.Ad.ID, r.Until, r.Ad.Landing, want[r.Ad.ID])
			}
		}
	})
}
