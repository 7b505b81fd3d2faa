package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/jackc/pgx/v5"
)

// A gate over 20 budgeted advertisers among 5,000 with spend (each billed
// click spends, budget or not) reads the spend of its 20 alone: at New,
// at a zone's midnight (that zone's 10) and at a Reread of every
// advertiser, the store gives back no advertiser it was not asked for,
// and the gate holds each one's spend of its own date.
func TestGateReadsOnlyItsBudgetedAdvertisersSpend(t *testing.T) {
	const n, budgeted = 5000, 20
	ctx := t.Context()
	db, conn := spendStore(t, testpg.New(t))
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	d := clicks.BudgetDayIn(start, time.UTC)
	// 100 micros a day on the 22nd, 200 on the 23rd, in four shards.
	if _, err := conn.Exec(ctx, `INSERT INTO spend (advertiser, day, shard, micros)
		SELECT format('adv%s.example', lpad(i::text, 5, '0')), d, s, 25 * (d - $1::bigint + 1)
		FROM generate_series(0, $2 - 1) i, generate_series($1::bigint, $1::bigint + 1) d, generate_series(0, 3) s`,
		int64(d), n); err != nil {
		t.Fatal(err)
	}
	budgets := map[string]accounts.Budget{}
	var advs []string
	zoneOf := map[string]string{}
	for k := range budgeted {
		adv := advertiser(k * (n / budgeted))
		zoneOf[adv] = []string{"", "Europe/Berlin"}[k%2]
		budgets[adv] = accounts.Budget{DailyMicros: 1_000_000, Pacing: accounts.ASAP, Zone: zoneOf[adv]}
		advs = append(advs, adv)
	}
	ix := adsOf(t, advs...)
	now := start
	sp := &counted{Spender: db.Rollups()}
	g := gateOver(t, budgets, sp, func() time.Time { return now })
	check := func(when string, all, rows int64, berlin int64) {
		t.Helper()
		if a, r := sp.all.Load(), sp.rows.Load(); a != all || r != rows {
			t.Errorf("%s: %d reads of a day's spend gave %d advertisers' spend, want %d and %d", when, a, r, all, rows)
		}
		for adv, z := range zoneOf {
			want := int64(100)
			if z != "" {
				want = berlin
			}
			if got := g.Spent(adv); got != want {
				t.Errorf("%s: %s (zone %q) spent %d, want %d", when, adv, z, got, want)
			}
		}
	}
	check("New", 1, budgeted, 100)
	// 23:30 UTC: Berlin's midnight reads its own 10 advertisers.
	now = start.Add(11*time.Hour + 30*time.Minute)
	g.Page(ix)
	check("Berlin's midnight", 2, budgeted+budgeted/2, 200)
	// A Reread of every advertiser reads each of the two dates once.
	if err := g.Reread(ctx); err != nil {
		t.Fatal(err)
	}
	check("Reread", 4, budgeted+budgeted/2+2*budgeted, 200)
}

// wholeDay is a budget.Spender whose read of a day's spend reads every
// advertiser's of the day and keeps those asked for, as the read did
// before it named them.
type wholeDay struct {
	budget.Spender
	conn *pgx.Conn
}

func (s wholeDay) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	rows, err := s.conn.Query(ctx, `SELECT advertiser, sum(micros)::bigint FROM spend WHERE day = $1 GROUP BY advertiser`, int64(day))
	if err != nil {
		return nil, err
	}
	all := map[string]int64{}
	var adv string
	var micros int64
	if _, err := pgx.ForEachRow(rows, []any{&adv, &micros}, func() error {
		all[adv] = micros
		return nil
	}); err != nil {
		return nil, err
	}
	spent := make(map[string]int64, len(advertisers))
	for _, a := range advertisers {
		if n, ok := all[a]; ok {
			spent[a] = n
		}
	}
	return spent, nil
}

// BenchmarkGateFewBudgets times budget.New and a Reread of every
// advertiser with 20 budgeted advertisers among 100,000 with spend today
// (four shards each, 400,000 rows), reading the 20's spend, beside the
// same reading every advertiser's spend of the day, as they did before.
// Best of three rounds each, taking turns.
func BenchmarkGateFewBudgets(b *testing.B) {
	const n, budgeted, bid = 100_000, 20, 100
	ctx := context.Background()
	db, conn := spendStore(b, testpg.New(b))
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	day := clicks.BudgetDayIn(at, time.UTC)
	if _, err := conn.Exec(ctx, `INSERT INTO spend (advertiser, day, shard, micros)
		SELECT format('adv%s.example', lpad(i::text, 5, '0')), $1::bigint, s, $2::bigint / 4
		FROM generate_series(0, $3 - 1) i, generate_series(0, 3) s ORDER BY i, s`, int64(day), bid, n); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE spend`); err != nil {
		b.Fatal(err)
	}
	budgets := map[string]accounts.Budget{}
	for k := range budgeted {
		budgets[advertiser(k*(n/budgeted))] = accounts.Budget{DailyMicros: 1_000_000, Pacing: accounts.ASAP}
	}
	round := func(sp budget.Spender) (made, reread time.Duration) {
		start := time.Now()
		g := gateOver(b, budgets, sp, func() time.Time { return at })
		made = time.Since(start)
		start = time.Now()
		if err := g.Reread(ctx); err != nil {
			b.Fatal(err)
		}
		reread = time.Since(start)
		for adv := range budgets {
			if s := g.Spent(adv); s != bid {
				b.Fatalf("%s spent %d, want %d", adv, s, bid)
			}
		}
		return made, reread
	}
	best := func(d *time.Duration, v time.Duration) { *d = min(*d, v) }
	far := time.Duration(1 << 62)
	newFew, rereadFew, newAll, rereadAll := far, far, far, far
	for range b.N {
		for range 3 {
			m, r := round(db.Rollups())
			best(&newFew, m)
			best(&rereadFew, r)
			m, r = round(wholeDay{db.Rollups(), conn})
			best(&newAll, m)
			best(&rereadAll, r)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(newFew), "ms/new")
	b.ReportMetric(ms(newAll), "ms/new-wholeday")
	b.ReportMetric(ms(rereadFew), "ms/reread")
	b.ReportMetric(ms(rereadAll), "ms/reread-wholeday")
	b.ReportMetric(float64(newAll)/float64(newFew), "wholeday/new")
}
