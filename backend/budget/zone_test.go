package budget

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
)

func losAngeles(t *testing.T) *time.Location {
	t.Helper()
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	return la
}

// Each budget comes back at its own zone's midnight: a UTC advertiser's
// at 00:00 UTC, one in Los Angeles (UTC-8 in November) at 08:00 UTC, and
// not at 00:00 UTC, which is the afternoon there.
func TestGateRollsOverAtLocalMidnight(t *testing.T) {
	ix := testIndex(t)
	groups := ix.AdvertiserGroups()
	la := losAngeles(t)
	now := day0.Add(7 * time.Hour) // 23:00 on 21 November in Los Angeles
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(at time.Time) { mu.Lock(); defer mu.Unlock(); now = at }
	sp := &spends{m: map[string]int64{}}
	sp.addOn("a.example", clicks.BudgetDayIn(now, time.UTC), 10)
	sp.addOn("b.example", clicks.BudgetDayIn(now, la), 10)
	g, err := New(context.Background(), Options{Spent: sp, Now: clock, Budgets: map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP},
		"b.example": {DailyMicros: 10, Pacing: accounts.ASAP, Zone: "America/Los_Angeles"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := groups["a.example"], groups["b.example"]
	for _, tt := range []struct {
		at   time.Duration
		want []uint32
	}{
		{7 * time.Hour, []uint32{a, b}},
		{7*time.Hour + 59*time.Minute, []uint32{a, b}},
		{8 * time.Hour, []uint32{a}}, // midnight in Los Angeles
		{23 * time.Hour, []uint32{a}},
	} {
		set(day0.Add(tt.at))
		if got, _ := g.Page(ix); !slices.Equal(got, tt.want) {
			t.Errorf("at %s UTC: excluded %v, want %v (a %d, b %d)", day0.Add(tt.at).Format("15:04"), got, tt.want, a, b)
		}
	}
	// b.example spends its 22 November at 23:30 UTC (15:30 there).
	at := day0.Add(23*time.Hour + 30*time.Minute)
	set(at)
	sp.addOn("b.example", clicks.BudgetDayIn(at, la), 10)
	if err := g.Clicked(context.Background(), &clicks.Click{Time: at, Advertiser: "b.example", Billable: true, BidMicros: 10}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		at   time.Duration
		want []uint32
	}{
		{24 * time.Hour, []uint32{b}}, // midnight UTC: a is back, b's day goes on
		{24*time.Hour + 30*time.Minute, []uint32{b}},
		{32 * time.Hour, nil}, // midnight in Los Angeles
	} {
		set(day0.Add(tt.at))
		if got, _ := g.Page(ix); !slices.Equal(got, tt.want) {
			t.Errorf("at %s: excluded %v, want %v (a %d, b %d)", day0.Add(tt.at).Format("Jan 2 15:04"), got, tt.want, a, b)
		}
	}
	if s := g.Spent("b.example"); s != 0 {
		t.Errorf("b.example's spend on its 23 November: %d, want 0", s)
	}
}

// Even pacing follows the line from the advertiser's local midnight to
// the next: on the day the clocks go forward it is 23 hours long, on the
// day they go back 25, and half the budget is due half way through.
func TestPaceOverTheLocalDay(t *testing.T) {
	la := losAngeles(t)
	for _, tt := range []struct {
		date  time.Time
		hours int
	}{
		{time.Date(2026, 3, 8, 0, 0, 0, 0, la), 23},
		{time.Date(2026, 11, 1, 0, 0, 0, 0, la), 25},
		{time.Date(2026, 11, 22, 0, 0, 0, 0, la), 24},
	} {
		day := clicks.BudgetDayIn(tt.date, la)
		start, end := day.Start(la), (day + 1).Start(la)
		if !start.Equal(tt.date) || end.Sub(start) != time.Duration(tt.hours)*time.Hour {
			t.Fatalf("%s: the day runs from %v to %v, want %d hours from %v", tt.date.Format(time.DateOnly), start, end, tt.hours, tt.date)
		}
		daily := int64(tt.hours) * 1_000_000 // an hour's budget is 1,000,000
		half := time.Duration(tt.hours) * time.Hour / 2
		spent := daily/2 + 250_000 // a quarter hour ahead of the line
		sp := &spends{m: map[string]int64{keyOf("c.example", day): spent}}
		now := start.Add(half)
		g, err := New(context.Background(), Options{Spent: sp, Now: func() time.Time { return now },
			Budgets: map[string]accounts.Budget{"c.example": {DailyMicros: daily, Pacing: accounts.Even, Zone: "America/Los_Angeles"}}})
		if err != nil {
			t.Fatal(err)
		}
		ix := testIndex(t)
		_, paced := g.Page(ix)
		if len(paced) != 1 || math.Abs(paced[0].Show-0.75) > 1e-9 {
			t.Errorf("%s, %d hours long, half way: paced %v, want shown with p 0.75", tt.date.Format(time.DateOnly), tt.hours, paced)
		}
	}
}

// Where the clocks go back from 01:00 to 00:00, the day begins at the
// first midnight, as the ledger's dates do: Amman's 29 October 2021
// began at 21:00 UTC, and a budget spent on the 28th is back then, not
// an hour later at the second midnight.
func TestGateRollsOverAtTheFirstOfTwoMidnights(t *testing.T) {
	amman, err := time.LoadLocation("Asia/Amman")
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2021, 10, 28, 21, 0, 0, 0, time.UTC)
	now := first.Add(-30 * time.Minute)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := &spends{m: map[string]int64{}}
	sp.addOn("a.example", clicks.BudgetDayIn(now, amman), 10)
	g, err := New(context.Background(), Options{Spent: sp, Now: clock, Budgets: map[string]accounts.Budget{
		"a.example": {DailyMicros: 10, Pacing: accounts.ASAP, Zone: "Asia/Amman"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ix := testIndex(t)
	a := ix.AdvertiserGroups()["a.example"]
	for _, tt := range []struct {
		at   time.Time
		want []uint32
	}{
		{first.Add(-time.Minute), []uint32{a}},
		{first.Add(30 * time.Minute), nil}, // 00:30 on the 29th, the first time
	} {
		mu.Lock()
		now = tt.at
		mu.Unlock()
		if got, _ := g.Page(ix); !slices.Equal(got, tt.want) {
			t.Errorf("at %s UTC (%s in Amman): excluded %v, want %v", tt.at.Format("Jan 2 15:04"),
				tt.at.In(amman).Format("Jan 2 15:04 MST"), got, tt.want)
		}
	}
}
