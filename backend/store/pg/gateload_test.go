package pgstore_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/jackc/pgx/v5"
)

// gateZones are the zones of the test's budgets: at 23:30 UTC Berlin and
// Kiritimati (UTC+14) are on the next date already, UTC is not.
var gateZones = []string{"", "Europe/Berlin", "Pacific/Kiritimati"}

// gateSpend is what the test's advertiser i spent on day: nothing (no
// row, or a row a credit set to 0), under its budget of 1,000 (a little
// ahead of an even pace at 00:30 or at 13:30), just under it, at it, or
// over it.
func gateSpend(i int, day clicks.BudgetDay) (micros int64, row bool) {
	m := []int64{-1, 0, 40, 300, 580, 999, 1000, 1500}[(i/2+int(day))%8]
	return max(m, 0), m >= 0
}

// A gate New makes over many advertisers in three zones on two dates
// reads the spend of each date once, not each advertiser's, and holds
// what reading them one by one gives: each advertiser's spend of its own
// date, the budgets spent out of the answers, the even ones behind
// their pace paced; so does the midnight that rolls UTC's budgets to
// the next date, with one read.
func TestGateReadsEachDayOnce(t *testing.T) {
	const n, daily = 900, 1000
	ctx := t.Context()
	db, conn := spendStore(t, testpg.New(t))
	start := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC)
	d := clicks.BudgetDayIn(start, time.UTC)
	// Every advertiser's spend of the day before, the two days of the
	// test and the day after, in four shards, and advertisers without a
	// budget spending on both days of the test.
	var rows [][]any
	for i := range n {
		for day := d - 1; day <= d+2; day++ {
			m, row := gateSpend(i, day)
			if !row {
				continue
			}
			for s := range int64(4) {
				part := m / 4
				if s == 0 {
					part += m % 4
				}
				rows = append(rows, []any{advertiser(i), int64(day), int16(s), part})
			}
		}
	}
	for i := range 50 {
		for day := d; day <= d+1; day++ {
			rows = append(rows, []any{fmt.Sprintf("other%d.example", i), int64(day), int16(0), int64(5000)})
		}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"spend"}, []string{"advertiser", "day", "shard", "micros"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	budgets := map[string]accounts.Budget{}
	advs := make([]string, n)
	for i := range n {
		advs[i] = advertiser(i)
		b := accounts.Budget{DailyMicros: daily, Pacing: accounts.ASAP, Zone: gateZones[i%len(gateZones)]}
		if i%2 == 1 {
			b.Pacing = accounts.Even
		}
		budgets[advs[i]] = b
	}
	ix := adsOf(t, advs...)
	groups := ix.AdvertiserGroups()
	now := start
	sp := &counted{Spender: db.Rollups()}
	g := gateOver(t, budgets, sp, func() time.Time { return now })
	// check compares g at now with each advertiser's spend read alone.
	check := func(when string) {
		t.Helper()
		var exclude []uint32
		var paced []budget.Paced
		for adv, b := range budgets {
			loc, err := clicks.LoadZone(b.Zone)
			if err != nil {
				t.Fatal(err)
			}
			day := clicks.BudgetDayIn(now, loc)
			want, err := db.Rollups().SpentOn(ctx, adv, day)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Spent(adv); got != want {
				t.Errorf("%s: %s spent %d, read alone %d", when, adv, got, want)
			}
			show := 1.0
			switch {
			case want >= b.DailyMicros:
				show = 0
			case b.Pacing == accounts.Even:
				show = budget.Pace(b.DailyMicros, want, day.Start(loc), (day + 1).Start(loc), now)
			}
			switch group := uint32(groups[adv]); {
			case show <= 0:
				exclude = append(exclude, group)
			case show < 1:
				paced = append(paced, budget.Paced{Group: group, Show: show})
			}
		}
		slices.Sort(exclude)
		slices.SortFunc(paced, func(a, b budget.Paced) int { return cmp.Compare(a.Group, b.Group) })
		gotExclude, gotPaced := g.Page(ix)
		if !slices.Equal(gotExclude, exclude) {
			t.Errorf("%s: the gate leaves out %d groups, the spends read alone %d:\n%v\n%v", when, len(gotExclude), len(exclude), gotExclude, exclude)
		}
		if !slices.Equal(gotPaced, paced) {
			t.Errorf("%s: the gate paces %d groups, the spends read alone %d:\n%v\n%v", when, len(gotPaced), len(paced), gotPaced, paced)
		}
		if len(exclude) == 0 || len(paced) == 0 {
			t.Errorf("%s: %d groups left out and %d paced: the test shows neither", when, len(exclude), len(paced))
		}
	}
	if one, all := sp.one.Load(), sp.all.Load(); one != 0 || all != 2 {
		t.Errorf("New read %d advertisers' spend alone and %d days', want 0 and 2 (the two dates)", one, all)
	}
	check("made at 23:30 UTC")
	// Midnight UTC: UTC's advertisers roll to the date the others are on.
	now = start.Add(time.Hour)
	sp.one.Store(0)
	sp.all.Store(0)
	g.Page(ix)
	if one, all := sp.one.Load(), sp.all.Load(); one != 0 || all != 1 {
		t.Errorf("the midnight read %d advertisers' spend alone and %d days', want 0 and 1", one, all)
	}
	check("at 00:30 UTC")
}

// oneByOne is a budget.Spender whose read of a day's spend reads each
// advertiser's spend alone, as a gate read its day before.
type oneByOne struct {
	budget.Spender
}

func (s oneByOne) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	spent := make(map[string]int64, len(advertisers))
	for _, id := range advertisers {
		n, err := s.SpentOn(ctx, id, day)
		if err != nil {
			return nil, err
		}
		spent[id] = n
	}
	return spent, nil
}

// BenchmarkGateNew times budget.New, the gate a start or a reload makes,
// over 10,000 budgeted advertisers whose spend of the days retention
// keeps is on Postgres (BenchmarkReread's), reading the day's spend in
// one query, beside the same gate reading each advertiser's spend alone,
// as New did before. Three rounds each, taking turns: the best and the
// worst of each.
func BenchmarkGateNew(b *testing.B) {
	const n, bid = 10_000, 100
	db, _, at, budgets := spentBudgets(b, n, bid)
	round := func(sp budget.Spender) time.Duration {
		start := time.Now()
		g := gateOver(b, budgets, sp, func() time.Time { return at })
		d := time.Since(start)
		for _, i := range []int{0, n / 2, n - 1} {
			if s := g.Spent(advertiser(i)); s != bid {
				b.Fatalf("%s spent %d, want %d", advertiser(i), s, bid)
			}
		}
		return d
	}
	var day, each []time.Duration
	for range b.N {
		for range 3 {
			day = append(day, round(db.Rollups()))
			each = append(each, round(oneByOne{db.Rollups()}))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(slices.Min(day)), "ms/new")
	b.ReportMetric(ms(slices.Max(day)), "ms/new-worst")
	b.ReportMetric(ms(slices.Min(each)), "ms/new-each")
	b.ReportMetric(ms(slices.Max(each)), "ms/new-each-worst")
	b.ReportMetric(float64(slices.Min(each))/float64(slices.Min(day)), "each/new")
}
