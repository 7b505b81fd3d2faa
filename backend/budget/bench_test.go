package budget

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/internal/cputime"
	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
)

// BenchmarkExclude times what budgets add to an answer, Gate.Exclude on a
// 10,000-ad index with 1,000 budgeted advertisers (its own and others'; a
// hundredth of them spent, a tenth paced even and ahead of their pace),
// beside the Match of a search on the same index, which every answer runs
// anyway; by the thread's CPU time.
func BenchmarkExclude(b *testing.B) {
	ads := testcatalog.Generate(10_000, 1)
	ix, err := match.Build(ads)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	// The index's advertisers, and as many more budgeted elsewhere: of
	// each, a hundredth spent and a tenth paced even, half way through
	// an hour ahead of the pace (shown in half of the answers).
	var names []string
	for name := range ix.AdvertiserGroups() {
		names = append(names, name)
	}
	slices.Sort(names)
	for i := len(names); i < 1000; i++ {
		names = append(names, "elsewhere"+strconv.Itoa(i)+".example")
	}
	budgets := map[string]accounts.Budget{}
	sp := &spends{m: map[string]int64{}}
	for i, name := range names {
		bg := accounts.Budget{DailyMicros: 24_000_000, Pacing: accounts.ASAP}
		switch {
		case i%100 == 0 || i == 1:
			sp.m[key(name, now)] = 24_000_000
		case i%10 == 2 || i == 3:
			bg.Pacing = accounts.Even
			sp.m[key(name, now)] = 12_500_000
		}
		budgets[name] = bg
	}
	g, err := New(context.Background(), Options{Budgets: budgets, Spent: sp, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	g.Exclude(ix) // the index's groups, once
	q := match.Query{Text: ads[0].Title, Dist: match.DistLow}
	// The best of a few rounds of each, by the thread's CPU time: noise on
	// a shared machine only adds time.
	const n, rounds = 2000, 5
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	exclude, matching := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range b.N {
		for range rounds {
			start := cputime.Thread()
			for range n {
				q.Exclude = g.Exclude(ix)
			}
			exclude = min(exclude, cputime.Thread()-start)
			start = cputime.Thread()
			for range n {
				ix.Match(&q)
			}
			matching = min(matching, cputime.Thread()-start)
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(exclude.Nanoseconds())/n, "ns/exclude")
	b.ReportMetric(float64(matching.Nanoseconds())/n, "ns/match")
	b.ReportMetric(float64(exclude)/float64(matching), "exclude/match")
}
