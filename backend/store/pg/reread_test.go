package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/retention"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
	"github.com/jackc/pgx/v5"
)

// counted is a budget.Spender that counts its reads of one advertiser's
// spend and of a whole day's.
type counted struct {
	budget.Spender
	one, all atomic.Int64
	rows     atomic.Int64 // advertisers the reads of a day's spend gave
}

func (c *counted) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	c.one.Add(1)
	return c.Spender.SpentOn(ctx, adv, day)
}

func (c *counted) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	c.all.Add(1)
	spent, err := c.Spender.SpentAllOn(ctx, day, advertisers)
	c.rows.Add(int64(len(spent)))
	return spent, err
}

// advertiser is the name of the benchmark's and the test's advertiser i.
func advertiser(i int) string { return fmt.Sprintf("adv%05d.example", i) }

// A Reread of every advertiser after a credit of a few of them reads the
// spend of the few alone one by one, after one read of the day's, and
// shows them again: each click spent a budget, and the credited ones'
// spend is back to nothing.
func TestRereadReadsTheCreditedAdvertisersAlone(t *testing.T) {
	const n, bid = 200, 100
	ctx := t.Context()
	db := openPG(t, testpg.New(t))
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	budgets := map[string]accounts.Budget{}
	ids := make([]string, n)
	for i := range n {
		adv := advertiser(i)
		budgets[adv] = accounts.Budget{DailyMicros: bid, Pacing: accounts.ASAP}
		c := clicks.Click{ID: clicks.NewID(), Time: at, AdID: "ad" + adv, AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
			IP: fmt.Sprintf("2001:db8:%x::1", i), UserAgent: "Mozilla/5.0", Advertiser: adv, BidMicros: bid, Currency: "EUR"}
		u := clicks.Use{D: "d" + adv, Expires: at.Add(time.Hour), Budget: bid, Currency: "EUR"}
		if err := db.Ledger().Record(ctx, &c, u); err != nil || !c.Billable {
			t.Fatalf("click of %s: %v, billable %v %q", adv, err, c.Billable, c.Reason)
		}
		ids[i] = c.ID
	}
	sp := &counted{Spender: db.Rollups()}
	g := gateOver(t, budgets, sp, func() time.Time { return at })
	credited := []int{3, 101, 199}
	var advs []string
	for _, i := range append([]int{0}, credited...) {
		advs = append(advs, advertiser(i))
	}
	ix := adsOf(t, advs...)
	if got := g.Exclude(ix); len(got) != len(advs) {
		t.Fatalf("every budget spent: Exclude %v, want %d groups", got, len(advs))
	}
	inv := clicks.Invalidation{From: at.Add(-time.Hour), To: at.Add(time.Hour), Note: "click farm"}
	for _, i := range credited {
		inv.IDs = append(inv.IDs, ids[i])
	}
	if credit, err := db.Invalidator().Invalidate(ctx, inv); err != nil || credit.Clicks != int64(len(credited)) {
		t.Fatalf("credit: %+v %v, want %d clicks", credit, err, len(credited))
	}
	sp.one.Store(0)
	sp.all.Store(0)
	if err := g.Reread(ctx); err != nil {
		t.Fatal(err)
	}
	if one, all := sp.one.Load(), sp.all.Load(); one != int64(len(credited)) || all != 1 {
		t.Errorf("Reread read %d advertisers' spend one by one and %d days', want %d and 1", one, all, len(credited))
	}
	for i := range n {
		want := int64(bid)
		if slices.Contains(credited, i) {
			want = 0
		}
		if got := g.Spent(advertiser(i)); got != want {
			t.Errorf("%s spent %d after the credit, want %d", advertiser(i), got, want)
		}
	}
	groups := ix.AdvertiserGroups()
	if got, want := g.Exclude(ix), []uint32{uint32(groups[advertiser(0)])}; !slices.Equal(got, want) {
		t.Errorf("after the credit: Exclude %v, want %v, the advertiser not credited alone", got, want)
	}
}

// BenchmarkReread times Gate.Reread of every advertiser after the credit
// of one, with 10,000 budgeted advertisers whose spend of the days
// retention keeps is on Postgres: one read of the day's spend and the credited advertiser's own
// read, beside the same Reread naming every advertiser, which reads each
// one's spend alone as Reread did before. Best of three rounds each.
func BenchmarkReread(b *testing.B) {
	const n, bid = 10_000, 100
	ctx := context.Background()
	db, conn, at, budgets := spentBudgets(b, n, bid)
	day := clicks.BudgetDayIn(at, time.UTC)
	all := make([]string, n)
	for i := range n {
		all[i] = advertiser(i)
	}
	sp := &counted{Spender: db.Rollups()}
	g := gateOver(b, budgets, sp, func() time.Time { return at })
	k := 0
	// round credits the next advertiser's click, times a Reread of
	// names (none: every advertiser), and checks that it shows again.
	round := func(names ...string) time.Duration {
		adv := advertiser(k % n)
		k++
		if _, err := conn.Exec(ctx, `UPDATE spend SET micros = 0 WHERE advertiser = $1 AND day = $2`, adv, int64(day)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := g.Reread(ctx, names...); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if s := g.Spent(adv); s != 0 {
			b.Fatalf("%s spent %d after its credit, want 0", adv, s)
		}
		return d
	}
	bulk, each := time.Duration(1<<62), time.Duration(1<<62)
	var bulkReads int64
	for range b.N {
		for range 3 {
			sp.one.Store(0)
			bulk = min(bulk, round())
			bulkReads = sp.one.Load()
			each = min(each, round(all...))
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(bulk.Microseconds())/1000, "ms/reread")
	b.ReportMetric(float64(each.Microseconds())/1000, "ms/reread-each")
	b.ReportMetric(float64(each)/float64(bulk), "each/reread")
	b.ReportMetric(float64(bulkReads), "reads-alone/reread")
}

// spentBudgets opens a Postgres the test binary starts, where n
// advertisers each spent their daily budget of bid micros today (at) and
// on each day retention keeps before it (retention.DefaultSpendDays),
// each day's spend in four shards, as the ledger keeps it: a day's rows
// written on that day, after the days before. It returns the store, a
// connection of its own, the time and the budgets.
func spentBudgets(b *testing.B, n, bid int) (*pgstore.DB, *pgx.Conn, time.Time, map[string]accounts.Budget) {
	b.Helper()
	ctx := context.Background()
	db, conn := spendStore(b, testpg.New(b))
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	day := clicks.BudgetDayIn(at, time.UTC)
	if _, err := conn.Exec(ctx, `INSERT INTO spend (advertiser, day, shard, micros)
		SELECT format('adv%s.example', lpad(i::text, 5, '0')), d, s, $2::bigint / 4
		FROM generate_series(0, $3 - 1) i, generate_series($1::bigint - $4::bigint, $1::bigint) d, generate_series(0, 3) s
		ORDER BY d, i, s`,
		int64(day), bid, n, retention.DefaultSpendDays); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE spend`); err != nil {
		b.Fatal(err)
	}
	budgets := map[string]accounts.Budget{}
	for i := range n {
		budgets[advertiser(i)] = accounts.Budget{DailyMicros: int64(bid), Pacing: accounts.ASAP}
	}
	return db, conn, at, budgets
}
