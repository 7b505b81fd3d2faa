package api

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/budget"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/config"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// countedSpend counts the reads of the spend, whether the store answers
// them or not.
type countedSpend struct {
	clicks.SpendReader
	reads atomic.Int64
}

func (c *countedSpend) SpentOn(ctx context.Context, adv string, day clicks.BudgetDay) (int64, error) {
	c.reads.Add(1)
	return c.SpendReader.SpentOn(ctx, adv, day)
}

func (c *countedSpend) SpentAllOn(ctx context.Context, day clicks.BudgetDay, advertisers []string) (map[string]int64, error) {
	c.reads.Add(1)
	return c.SpendReader.SpentAllOn(ctx, day, advertisers)
}

// With -postgres's ledger (clicks.Spooler over Postgres), the clicks on
// a budgeted advertiser's links while Postgres does not answer are
// spooled, billable by the server's own verdict, and the budget gate
// reads no spend for them: the read would only wait on the store that did
// not take them (a Postgres that hangs holds it a second before the 302).
// Once Postgres is back and the spool ships, the shipment's read finds
// the budget spent and the advertiser leaves the answers; a click
// Postgres records reads the spend at the click again. The clock stands
// still at now, so that the shipment is not late and the clicks are of
// one day.
func TestSpooledClickReadsNoSpend(t *testing.T) {
	ctx := t.Context()
	pg := testpg.Start(t)
	db, err := pgstore.Open(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// handy-bestkauf.de's budget is two clicks.
	env := budgetEnvOf(t, fixture(), budgetAdvertisers(), time.Now().UTC())
	file, err := store.Open(env.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	spool, err := clicks.NewSpool(file)
	if err != nil {
		t.Fatal(err)
	}
	spent := &countedSpend{SpendReader: db.Rollups()}
	gate, err := budget.New(ctx, budget.Options{Budgets: env.book.Budgets(), Spent: spent, Shared: true, Now: env.clock})
	if err != nil {
		t.Fatal(err)
	}
	var spooled atomic.Int64
	// A long Wait: a busy machine's slow answer does not spool a click
	// Postgres answers.
	ledger := clicks.NewSpooler(db.Ledger(), db.Ledger(), spool, clicks.SpoolerOptions{Wait: 10 * time.Second,
		Spooled: func() { spooled.Add(1) },
		Recorded: func(ctx context.Context, shipped []clicks.Spooled) {
			cs := make([]*clicks.Click, len(shipped))
			for i := range shipped {
				cs[i] = &shipped[i].Click
			}
			if err := gate.Clicked(ctx, cs...); err != nil {
				t.Errorf("the shipment's read of the spend: %v", err)
			}
		}})
	ledger.Start()
	defer ledger.Stop()
	cfg := config.Default()
	cfg.RedirectURL = "https://r.example"
	cfg.IPRate, cfg.IPBurst, cfg.KeyRate, cfg.KeyBurst = 1e9, 1e9, 1e9, 1e9
	env.handler = NewServer(Deps{Config: cfg, Indexes: env.ix, Partners: testPartners(t), Clicks: db.Clicks(), ClickKeys: env.keys,
		Windows: db.Windows(), Decisions: db.Decisions(), Ledger: ledger, Spooling: ledger, Rollups: db.Rollups(), Accounts: env.book, Budget: gate,
		Shards: env.set, Now: env.clock})

	var links []string
	for range 3 {
		l, ok := env.search(t, handyQuery)["handy-bestkauf.de"]
		if !ok {
			t.Fatal("handy-bestkauf.de not in the answer before its budget is spent")
		}
		links = append(links, l)
	}
	click := func(i int) string {
		t.Helper()
		rec := env.get(t, links[i], "198.51.100."+strconv.Itoa(i+1))
		id := rec.Header().Get("X-Adlink-Click")
		if rec.Code != http.StatusFound || id == "" {
			t.Fatalf("click %d: %d, id %q; want a 302 with the click's id", i, rec.Code, id)
		}
		return id
	}

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	before := spent.reads.Load()
	ids := []string{click(0), click(1)}
	if n := spooled.Load(); n != 2 {
		t.Fatalf("%d of the two clicks while Postgres is down spooled, want both", n)
	}
	if n := spent.reads.Load() - before; n != 0 {
		t.Errorf("the budget gate read the spend %d times for the two spooled clicks, want none", n)
	}
	if _, ok := env.search(t, handyQuery)["handy-bestkauf.de"]; !ok {
		t.Fatal("the spooled clicks stopped handy-bestkauf.de before they shipped: the test shows nothing")
	}

	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := ledger.WaitShipped(wctx); err != nil {
		t.Fatalf("the spool did not ship: %v; %d left", err, ledger.Depth())
	}
	billed := map[string]bool{}
	if err := db.Clicks().Scan(ctx, time.Time{}, time.Time{}, func(c clicks.Click) error {
		billed[c.ID] = c.Billable
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !billed[ids[0]] || !billed[ids[1]] {
		t.Fatalf("shipped, the clicks billed %v and %v; want both, the budget", billed[ids[0]], billed[ids[1]])
	}
	if _, ok := env.search(t, handyQuery)["handy-bestkauf.de"]; ok {
		t.Error("handy-bestkauf.de still shown once its shipped clicks spent the budget")
	}

	// Postgres answers: a click recorded there is read for at the click.
	before = spent.reads.Load()
	click(2)
	if n := spooled.Load(); n != 2 {
		t.Fatalf("the click after the shipment was spooled (%d spooled): %s", n, ledger.Degraded())
	}
	if n := spent.reads.Load() - before; n != 1 {
		t.Errorf("the budget gate read the spend %d times for a click Postgres recorded over budget, want once", n)
	}
}
