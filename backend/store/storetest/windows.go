package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
)

// Windows runs the contract of clicks.Windows against the stores fresh
// opens. fresh returns an Opener over a new, empty backing.
func Windows(t *testing.T, fresh func(t *testing.T) Opener[clicks.Windows]) {
	t.Helper()
	start := func(t *testing.T) clicks.Windows {
		s, _ := open(t, fresh(t))
		return s
	}
	// Noon UTC: the day's end is 12 h away.
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	const net4, net6 = "192.0.2.1", "2001:db8:1:2::/64"

	t.Run("OneBillablePerNetworkAndAdPerWindow", func(t *testing.T) {
		s := start(t)
		for _, c := range []struct {
			name, network, ad string
			at                time.Duration
			want              string
		}{
			{"first", net4, "a", 0, ""},
			{"same network and ad a second later", net4, "a", time.Second, clicks.ReasonRepeat},
			{"another ad", net4, "b", time.Second, ""},
			{"another network", net6, "a", time.Second, ""},
			{"across midnight, within the window", net4, "a", clicks.AdWindow - time.Nanosecond, clicks.ReasonRepeat},
			{"a clock stepped back", net4, "a", -time.Hour, clicks.ReasonRepeat},
			{"the window after the first", net4, "a", clicks.AdWindow, ""},
			{"the window after a refused claim opens none", net4, "a", clicks.AdWindow + time.Second, clicks.ReasonRepeat},
			{"three days later", net4, "a", 3 * clicks.AdWindow, ""},
		} {
			if got := claimWindow(t, s, c.network, c.ad, t0.Add(c.at), 0); got != c.want {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
		}
	})

	t.Run("DailyCapPerNetwork", func(t *testing.T) {
		s := start(t)
		const limit = 3
		for i := range limit {
			if got := claimWindow(t, s, net4, fmt.Sprint("ad", i), t0.Add(time.Duration(i)*time.Minute), limit); got != "" {
				t.Fatalf("claim %d under the cap: %q", i, got)
			}
		}
		if got := claimWindow(t, s, net4, "ad0", t0.Add(time.Hour), limit); got != clicks.ReasonRepeat {
			t.Errorf("a repeat at the cap: %q, want repeat (the window comes first)", got)
		}
		if got := claimWindow(t, s, net4, "another", t0.Add(time.Hour), limit); got != clicks.ReasonNetworkCap {
			t.Errorf("over the cap: %q, want %q", got, clicks.ReasonNetworkCap)
		}
		if got := claimWindow(t, s, net6, "another", t0.Add(time.Hour), limit); got != "" {
			t.Errorf("another network: %q", got)
		}
		if got := claimWindow(t, s, net4, "another", t0.Add(12*time.Hour), limit); got != "" {
			t.Errorf("the next UTC day: %q, want billable", got)
		}
		if got := claimWindow(t, s, net4, "more", t0.Add(13*time.Hour), 0); got != "" {
			t.Errorf("no cap: %q", got)
		}
	})

	t.Run("RefusedClaimsSpendNothing", func(t *testing.T) {
		s := start(t)
		claimWindow(t, s, net4, "a", t0, 2)
		for range 5 {
			claimWindow(t, s, net4, "a", t0.Add(time.Second), 2)
		}
		if got := claimWindow(t, s, net4, "b", t0.Add(time.Minute), 2); got != "" {
			t.Errorf("after repeats, the cap's second click: %q", got)
		}
	})

	t.Run("ClaimsAreDurable", func(t *testing.T) {
		opener := fresh(t)
		s, closeStore := open(t, opener)
		claimWindow(t, s, net6, "a", t0, 2)
		claimWindow(t, s, net6, "b", t0, 2)
		closeStore()
		s, _ = open(t, opener)
		if got := claimWindow(t, s, net6, "a", t0.Add(time.Hour), 2); got != clicks.ReasonRepeat {
			t.Errorf("after reopen, the window: %q, want repeat", got)
		}
		if got := claimWindow(t, s, net6, "c", t0.Add(time.Hour), 2); got != clicks.ReasonNetworkCap {
			t.Errorf("after reopen, the cap: %q, want %q", got, clicks.ReasonNetworkCap)
		}
	})

	t.Run("ConcurrentClaims", func(t *testing.T) {
		s := start(t)
		const n, limit = 40, 7
		var sameAd, manyAds atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if claimWindow(t, s, net4, "one", t0, 0) == "" {
					sameAd.Add(1)
				}
			})
			wg.Go(func() {
				if claimWindow(t, s, net6, fmt.Sprint("ad", i), t0, limit) == "" {
					manyAds.Add(1)
				}
			})
		}
		wg.Wait()
		if sameAd.Load() != 1 {
			t.Errorf("%d of %d concurrent claims of one network and ad billed, want 1", sameAd.Load(), n)
		}
		if manyAds.Load() != limit {
			t.Errorf("%d of %d concurrent claims of one network billed, want the cap %d", manyAds.Load(), n, limit)
		}
	})

	// net64 is the claim of a click on ad from the i-th /64 of the /48
	// 2001:db8:7::/48, under a /48 cap of prefixLimit and no network cap.
	net64 := func(i int, ad string, at time.Time, prefixLimit int) clicks.Claim {
		return clicks.Claim{Network: fmt.Sprintf("2001:db8:7:%x::/64", i), AdID: ad, At: at,
			Prefix: "2001:db8:7::/48", PrefixLimit: prefixLimit}
	}

	t.Run("DailyCapPerPrefix", func(t *testing.T) {
		s := start(t)
		const limit = 3
		for i := range limit {
			if got := claimIn(t, s, net64(i, "a", t0, limit)); got != "" {
				t.Fatalf("the /48's claim %d under its cap: %q", i, got)
			}
		}
		if got := claimIn(t, s, net64(0, "a", t0.Add(time.Minute), limit)); got != clicks.ReasonRepeat {
			t.Errorf("a repeat at the /48's cap: %q, want repeat (the window comes first)", got)
		}
		if got := claimIn(t, s, net64(99, "a", t0.Add(time.Minute), limit)); got != clicks.ReasonPrefixCap {
			t.Errorf("a fresh /64 of the /48 over its cap: %q, want %q", got, clicks.ReasonPrefixCap)
		}
		capped := net64(1, "b", t0.Add(time.Minute), limit)
		capped.Limit = 1
		if got := claimIn(t, s, capped); got != clicks.ReasonNetworkCap {
			t.Errorf("a network at its own cap in a /48 at its cap: %q, want %q (the network's comes first)",
				got, clicks.ReasonNetworkCap)
		}
		other := clicks.Claim{Network: "2001:db8:8::/64", AdID: "a", At: t0.Add(time.Minute),
			Prefix: "2001:db8:8::/48", PrefixLimit: limit}
		if got := claimIn(t, s, other); got != "" {
			t.Errorf("another /48: %q", got)
		}
		if got := claimIn(t, s, net64(99, "a", t0.Add(12*time.Hour), limit)); got != "" {
			t.Errorf("the next UTC day: %q, want billable", got)
		}
		if got := claimIn(t, s, net64(98, "a", t0.Add(time.Hour), 0)); got != "" {
			t.Errorf("no /48 cap: %q", got)
		}
		if got := claimIn(t, s, net64(97, "a", t0.Add(time.Hour), limit+1)); got != "" {
			t.Errorf("a claim without the cap counted the /48: %q, want billable under a cap of %d", got, limit+1)
		}
		if got := claimIn(t, s, net64(96, "a", t0.Add(time.Hour), limit+1)); got != clicks.ReasonPrefixCap {
			t.Errorf("over a raised cap: %q, want %q", got, clicks.ReasonPrefixCap)
		}
		// An IPv4 /24 is a prefix as a /48 is: its addresses share its cap,
		// apart from the /48's and the next /24's.
		for i := range limit + 1 {
			want := ""
			if i == limit {
				want = clicks.ReasonPrefixCap
			}
			c := clicks.Claim{Network: fmt.Sprintf("192.0.2.%d", i+1), AdID: "a", At: t0, Prefix: "192.0.2.0/24", PrefixLimit: limit}
			if got := claimIn(t, s, c); got != want {
				t.Errorf("address %d of an IPv4 /24 at a cap of %d: %q, want %q", i+1, limit, got, want)
			}
		}
		next := clicks.Claim{Network: "192.0.3.1", AdID: "a", At: t0, Prefix: "192.0.3.0/24", PrefixLimit: limit}
		if got := claimIn(t, s, next); got != "" {
			t.Errorf("the next /24: %q, want billable", got)
		}
	})

	t.Run("RefusedClaimsSpendNothingOfThePrefix", func(t *testing.T) {
		s := start(t)
		const limit = 2
		claimIn(t, s, net64(0, "a", t0, limit))
		capped := net64(1, "a", t0, limit)
		capped.Limit = 1
		claimIn(t, s, capped)
		for i := range 5 {
			claimIn(t, s, net64(0, "a", t0.Add(time.Second), limit)) // repeats
			capped.AdID = fmt.Sprint("b", i)
			claimIn(t, s, capped) // the network's own cap
		}
		if got := claimIn(t, s, net64(2, "a", t0.Add(time.Minute), limit+1)); got != "" {
			t.Errorf("after refused claims, the /48's third click under a cap of 3: %q", got)
		}
	})

	t.Run("PrefixCapIsDurable", func(t *testing.T) {
		opener := fresh(t)
		s, closeStore := open(t, opener)
		claimIn(t, s, net64(0, "a", t0, 2))
		claimIn(t, s, net64(1, "a", t0, 2))
		closeStore()
		s, _ = open(t, opener)
		if got := claimIn(t, s, net64(2, "a", t0.Add(time.Hour), 2)); got != clicks.ReasonPrefixCap {
			t.Errorf("after reopen, the /48's cap: %q, want %q", got, clicks.ReasonPrefixCap)
		}
	})

	t.Run("ConcurrentClaimsOfOnePrefix", func(t *testing.T) {
		s := start(t)
		const n, limit = 40, 7
		var billed atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if claimIn(t, s, net64(i, "one", t0, limit)) == "" {
					billed.Add(1)
				}
			})
		}
		wg.Wait()
		if billed.Load() != limit {
			t.Errorf("%d of %d concurrent claims from the /64s of one /48 billed, want its cap %d", billed.Load(), n, limit)
		}
	})

	// adClaim is net64's claim under a cap of the /48's clicks on each ad
	// of adLimit, and none on all ads.
	adClaim := func(i int, ad string, at time.Time, adLimit int) clicks.Claim {
		c := net64(i, ad, at, 0)
		c.PrefixAdLimit = adLimit
		return c
	}

	t.Run("DailyCapPerPrefixAndAd", func(t *testing.T) {
		s := start(t)
		const limit = 3
		for i := range limit {
			if got := claimIn(t, s, adClaim(i, "a", t0, limit)); got != "" {
				t.Fatalf("the /48's claim %d on the ad under its cap: %q", i, got)
			}
		}
		if got := claimIn(t, s, adClaim(0, "a", t0.Add(time.Minute), limit)); got != clicks.ReasonRepeat {
			t.Errorf("a repeat at the cap on the ad: %q, want repeat (the window comes first)", got)
		}
		if got := claimIn(t, s, adClaim(99, "a", t0.Add(time.Minute), limit)); got != clicks.ReasonPrefixAdCap {
			t.Errorf("a fresh /64 of the /48 over its cap on the ad: %q, want %q", got, clicks.ReasonPrefixAdCap)
		}
		for i := range limit {
			if got := claimIn(t, s, adClaim(50+i, "b", t0.Add(time.Minute), limit)); got != "" {
				t.Errorf("claim %d of the /48 on another ad: %q, want billable", i, got)
			}
		}
		capped := adClaim(60, "c", t0.Add(time.Minute), limit)
		capped.Limit = 1
		claimIn(t, s, capped)
		capped.AdID = "a"
		if got := claimIn(t, s, capped); got != clicks.ReasonNetworkCap {
			t.Errorf("a network at its own cap in a /48 at its cap on the ad: %q, want %q (the network's comes first)",
				got, clicks.ReasonNetworkCap)
		}
		other := clicks.Claim{Network: "2001:db8:8::/64", AdID: "a", At: t0.Add(time.Minute),
			Prefix: "2001:db8:8::/48", PrefixAdLimit: limit}
		if got := claimIn(t, s, other); got != "" {
			t.Errorf("another /48 on the ad: %q", got)
		}
		if got := claimIn(t, s, adClaim(99, "a", t0.Add(12*time.Hour), limit)); got != "" {
			t.Errorf("the next UTC day: %q, want billable", got)
		}
		if got := claimIn(t, s, adClaim(98, "a", t0.Add(time.Hour), 0)); got != "" {
			t.Errorf("no cap on the ad: %q", got)
		}
		if got := claimIn(t, s, adClaim(97, "a", t0.Add(time.Hour), limit+1)); got != "" {
			t.Errorf("a claim without the cap counted the /48 on the ad: %q, want billable under a cap of %d", got, limit+1)
		}
		if got := claimIn(t, s, adClaim(96, "a", t0.Add(time.Hour), limit+1)); got != clicks.ReasonPrefixAdCap {
			t.Errorf("over a raised cap on the ad: %q, want %q", got, clicks.ReasonPrefixAdCap)
		}
		// An IPv4 /24's addresses share its cap on the ad as a /48's
		// networks do.
		for i := range limit + 1 {
			want := ""
			if i == limit {
				want = clicks.ReasonPrefixAdCap
			}
			c := clicks.Claim{Network: fmt.Sprintf("192.0.2.%d", i+1), AdID: "a", At: t0, Prefix: "192.0.2.0/24", PrefixAdLimit: limit}
			if got := claimIn(t, s, c); got != want {
				t.Errorf("address %d of an IPv4 /24 on one ad at a cap of %d: %q, want %q", i+1, limit, got, want)
			}
		}
	})

	t.Run("PrefixCapsOnTheAdAndOnAll", func(t *testing.T) {
		s := start(t)
		// A cap of 2 on each ad and of 3 on all: the ad's is met first, then
		// the /48's on another ad.
		both := func(i int, ad string) clicks.Claim {
			c := adClaim(i, ad, t0, 2)
			c.PrefixLimit = 3
			return c
		}
		for _, c := range []struct {
			i        int
			ad, want string
		}{
			{0, "a", ""}, {1, "a", ""}, {2, "a", clicks.ReasonPrefixAdCap}, {3, "b", ""},
			{4, "b", clicks.ReasonPrefixCap}, {5, "a", clicks.ReasonPrefixAdCap}, {6, "c", clicks.ReasonPrefixCap},
		} {
			if got := claimIn(t, s, both(c.i, c.ad)); got != c.want {
				t.Errorf("/64 %d on ad %s under caps of 2 on the ad and 3 on all: %q, want %q", c.i, c.ad, got, c.want)
			}
		}
	})

	t.Run("RefusedClaimsSpendNothingOfThePrefixOnTheAd", func(t *testing.T) {
		s := start(t)
		const limit = 2
		claimIn(t, s, adClaim(0, "a", t0, limit))
		capped := adClaim(1, "a", t0, limit)
		capped.Limit = 1
		capped.AdID = "other"
		claimIn(t, s, capped)
		capped.AdID = "a"
		for range 5 {
			claimIn(t, s, adClaim(0, "a", t0.Add(time.Second), limit)) // repeats
			claimIn(t, s, capped)                                      // the network's own cap
		}
		fill := adClaim(9, "z", t0, limit)
		fill.PrefixLimit = 1
		claimIn(t, s, fill)
		over := adClaim(2, "a", t0.Add(time.Minute), limit)
		over.PrefixLimit = 1
		for range 3 {
			if got := claimIn(t, s, over); got != clicks.ReasonPrefixCap {
				t.Errorf("a /48 at its cap on all ads: %q, want %q", got, clicks.ReasonPrefixCap)
			}
		}
		if got := claimIn(t, s, adClaim(3, "a", t0.Add(time.Minute), limit)); got != "" {
			t.Errorf("after refused claims, the /48's second click on the ad under a cap of 2: %q", got)
		}
	})

	t.Run("PrefixAdCapIsDurable", func(t *testing.T) {
		opener := fresh(t)
		s, closeStore := open(t, opener)
		claimIn(t, s, adClaim(0, "a", t0, 2))
		claimIn(t, s, adClaim(1, "a", t0, 2))
		closeStore()
		s, _ = open(t, opener)
		if got := claimIn(t, s, adClaim(2, "a", t0.Add(time.Hour), 2)); got != clicks.ReasonPrefixAdCap {
			t.Errorf("after reopen, the /48's cap on the ad: %q, want %q", got, clicks.ReasonPrefixAdCap)
		}
		if got := claimIn(t, s, adClaim(2, "b", t0.Add(time.Hour), 2)); got != "" {
			t.Errorf("after reopen, another ad: %q, want billable", got)
		}
	})

	t.Run("ConcurrentClaimsOfOnePrefixOnOneAd", func(t *testing.T) {
		s := start(t)
		const n, limit = 40, 7
		var billed, other atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if claimIn(t, s, adClaim(i, "one", t0, limit)) == "" {
					billed.Add(1)
				}
			})
			wg.Go(func() {
				if claimIn(t, s, adClaim(n+i, fmt.Sprint("ad", i), t0, limit)) == "" {
					other.Add(1)
				}
			})
		}
		wg.Wait()
		if billed.Load() != limit {
			t.Errorf("%d of %d concurrent claims on one ad from the /64s of one /48 billed, want its cap %d", billed.Load(), n, limit)
		}
		if other.Load() != n {
			t.Errorf("%d of %d concurrent claims of the /48 on as many other ads billed, want all", other.Load(), n)
		}
	})

	t.Run("DoneContextRefuses", func(t *testing.T) {
		s := start(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.Claim(ctx, clicks.Claim{Network: net4, AdID: "a", At: t0}); err == nil {
			t.Fatal("Claim with a done context succeeded")
		}
		if got := claimWindow(t, s, net4, "a", t0, 0); got != "" {
			t.Errorf("a refused claim was recorded: %q", got)
		}
	})
}

// claimWindow claims a click of network on ad at at and returns the
// reason it does not bill, "" when it bills.
func claimWindow(t *testing.T, s clicks.Windows, network, ad string, at time.Time, limit int) string {
	t.Helper()
	return claimIn(t, s, clicks.Claim{Network: network, AdID: ad, At: at, Limit: limit})
}

// claimIn claims c in s and returns the reason it does not bill, "" when
// it bills.
func claimIn(t *testing.T, s clicks.Windows, c clicks.Claim) string {
	t.Helper()
	r, err := s.Claim(t.Context(), c)
	if err != nil {
		t.Errorf("Claim: %v", err) // not Fatal: concurrent claims call it too
		return "error"
	}
	return r
}
