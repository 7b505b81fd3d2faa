package pgstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
)

// A day whose spend Postgres did not give at its midnight is read again
// in the background once it answers: one query for the day's budgeted
// advertisers, not one per advertiser, after which the gate holds each
// one's spend of the day and reads no more.
func TestGateReadsALateDayInOneQuery(t *testing.T) {
	const n, daily = 40, 200
	ctx := t.Context()
	srv := testpg.Start(t)
	db, conn := spendStore(t, srv.URL())
	start := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC)
	next := clicks.BudgetDayIn(start, time.UTC) + 1
	// Advertiser i spent 10(i+1) of its 200 on the next day: the last
	// half are past their budget.
	if _, err := conn.Exec(ctx, `INSERT INTO spend (advertiser, day, shard, micros)
		SELECT format('adv%s.example', lpad(i::text, 5, '0')), $1, 0, 10 * (i + 1) FROM generate_series(0, $2 - 1) i`,
		int64(next), n); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx) // before Postgres stops
	budgets := map[string]accounts.Budget{}
	for i := range n {
		budgets[advertiser(i)] = accounts.Budget{DailyMicros: daily, Pacing: accounts.ASAP}
	}
	var mu sync.Mutex
	now := start
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := &counted{Spender: db.Rollups()}
	g := gateOver(t, budgets, sp, clock)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = start.Add(time.Hour) // past midnight, Postgres down
	mu.Unlock()
	if got := g.Spent(advertiser(n - 1)); got != 0 {
		t.Fatalf("the day unread at its midnight holds a spend of %d", got)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	read := func() bool {
		for i := range n {
			if g.Spent(advertiser(i)) != int64(10*(i+1)) {
				return false
			}
		}
		return true
	}
	for end := time.Now().Add(time.Minute); !read(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the late day is not read: %s spent %d", advertiser(n-1), g.Spent(advertiser(n-1)))
		}
	}
	if one, rows := sp.one.Load(), sp.rows.Load(); one != 0 || rows != n {
		t.Errorf("the late read read %d advertisers' spend alone, and the reads of a day's spend gave %d advertisers' spend; want none alone, and the %d once", one, rows, n)
	}
}
