package pgstore_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
)

// A shipment's clicks, told to the gate with Postgres's verdicts, read
// the spend of the day of the advertisers they billed in one query,
// whatever their clicks in the shipment, not one query each: the one
// whose clicks spent its budget (one refused as over_budget) is out of
// the answers, the one still under its budget is not, and one whose
// clicks are of another day, or did not bill for another reason, is not
// read.
func TestShippedClicksReadEachAdvertisersSpendOnce(t *testing.T) {
	const bid, daily = 100, 300
	ctx := t.Context()
	db := openPG(t, testpg.New(t))
	at := recently()
	budgets := map[string]accounts.Budget{}
	advs := make([]string, 4)
	for i := range advs {
		advs[i] = advertiser(i)
		budgets[advs[i]] = accounts.Budget{DailyMicros: daily, Pacing: accounts.ASAP}
	}
	ix := adsOf(t, advs...)
	sp := &counted{Spender: db.Rollups()}
	g := gateOver(t, budgets, sp, func() time.Time { return at })
	var batch []clicks.Spooled
	add := func(i int, when time.Time, reason string) {
		adv := advertiser(i)
		c := clicks.Click{ID: clicks.NewID(), Time: when, AdID: "ad" + adv, AdType: "advertiser", Type: "search", APIKey: "k", SiteID: "s",
			IP: fmt.Sprintf("2001:db8:%x::1", len(batch)), UserAgent: "Mozilla/5.0", Advertiser: adv, BidMicros: bid, Currency: "EUR",
			Billable: reason == "", Reason: reason}
		batch = append(batch, clicks.Spooled{Click: c, Use: clicks.Use{D: "d" + c.ID, Expires: when.Add(time.Hour), Budget: daily, Currency: "EUR"}})
	}
	for range 4 {
		add(0, at, "") // one is over the budget
	}
	add(1, at, "")
	add(1, at, "")
	add(2, at.Add(-24*time.Hour), "") // the day before
	add(3, at, clicks.ReasonBot)
	if err := db.Ledger().Ship(ctx, batch); err != nil {
		t.Fatal(err)
	}
	over := 0
	for _, s := range batch[:4] {
		if s.Click.Reason == clicks.ReasonOverBudget {
			over++
		}
	}
	if over != 1 {
		t.Fatalf("%d of %s's four clicks shipped over_budget, want one", over, advertiser(0))
	}
	sp.one.Store(0)
	sp.all.Store(0)
	cs := make([]*clicks.Click, len(batch))
	for i := range batch {
		cs[i] = &batch[i].Click
	}
	if err := g.Clicked(ctx, cs...); err != nil {
		t.Fatal(err)
	}
	if one, all := sp.one.Load(), sp.all.Load(); one != 0 || all != 1 {
		t.Errorf("the shipment read %d advertisers' spend alone and the day's spend %d times, want none alone and the day's once", one, all)
	}
	if got, want := g.Exclude(ix), []uint32{uint32(ix.AdvertiserGroups()[advertiser(0)])}; !slices.Equal(got, want) {
		t.Errorf("after the shipment: Exclude %v, want %v (%s's budget spent)", got, want, advertiser(0))
	}
	for i, want := range []int64{daily, 2 * bid, 0, 0} {
		if got := g.Spent(advertiser(i)); got != want {
			t.Errorf("%s spent %d, want %d", advertiser(i), got, want)
		}
	}
}
