package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/match"
)

// BenchmarkBudget sends 10,000 billable clicks at once through the
// redirect handler, recorded by the bbolt Ledger, to 100 advertisers
// whose daily budgets are 1 to 100 clicks' bids, less half a bid: each
// gets 100 clicks, more than its budget. It reports the worst overspend
// of any advertiser in its own bids (target <= 1: the ledger bills a
// click only while the day's spend is below the budget) beside the
// budgets, as the day's spend over the budgets, and how fast the clicks
// went through.
func BenchmarkBudget(b *testing.B) {
	const (
		advertisers = 100
		perAd       = 100
	)
	var ads []match.Ad
	var accs []accounts.AdvertiserAccount
	bids := map[string]int64{}
	budgets := map[string]int64{}
	for k := 1; k <= advertisers; k++ {
		id := "adv" + strconv.Itoa(k) + ".example"
		bid := int64(100_000 + 7_000*k)
		budget := int64(k)*bid - bid/2
		bids[id], budgets[id] = bid, budget
		ads = append(ads, match.Ad{ID: id, Kind: match.KindAdvertiser, Title: "Advertiser " + strconv.Itoa(k),
			Keywords: []string{"kw" + strconv.Itoa(k)}, Landing: "https://" + id + "/", Advertiser: id,
			Markets: []match.Market{mDE}, BidMicros: bid})
		accs = append(accs, accounts.AdvertiserAccount{ID: id, Currency: "EUR",
			DailyBudget: strconv.FormatInt(budget/1e6, 10) + "." + strconv.FormatInt(1e6+budget%1e6, 10)[1:]})
	}
	var worst, mean, spendRatio, rate float64
	var billed, over int
	for range b.N {
		env := newBudgetEnvWith(b, ads, accs, testClock)
		exp := testClock.Add(time.Hour)
		var links []string
		for k := 1; k <= advertisers; k++ {
			id := "adv" + strconv.Itoa(k) + ".example"
			p := clicks.Params{Type: "search", AdID: id, AdType: "advertiser", APIKey: "demo", SiteID: "demo", Criterion: "kw" + strconv.Itoa(k)}
			query := string(clicks.AppendQuery(nil, &p))
			for range perAd {
				d := clicks.NewDecision()
				e, sig := env.keys.Sign(&p, d, exp)
				links = append(links, "/v1/redirect?"+query+"&d="+d+"&exp="+e+"&sig="+sig)
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, l := range links {
			wg.Go(func() {
				req := httptest.NewRequest(http.MethodGet, l, nil)
				req.RemoteAddr = "[2001:db8:" + strconv.FormatInt(int64(i), 16) + "::1]:40000"
				req.Header.Set("User-Agent", browserUA)
				clicks.Navigation.Header(req.Header)
				<-start
				w := httptest.NewRecorder()
				env.handler.ServeHTTP(w, req)
				if w.Code != http.StatusFound {
					b.Errorf("click answered %d: %s", w.Code, w.Body)
				}
			})
		}
		began := time.Now()
		close(start)
		wg.Wait()
		rate = float64(len(links)) / time.Since(began).Seconds()

		worst, mean, billed, over = 0, 0, 0, 0
		var spent, budgeted int64
		for id, budget := range budgets {
			s, err := env.rollups.Spent(context.Background(), id, testClock)
			if err != nil {
				b.Fatal(err)
			}
			o := float64(max(s-budget, 0)) / float64(bids[id])
			worst = max(worst, o)
			mean += o / advertisers
			spent += s
			budgeted += budget
			billed += int(s / bids[id])
		}
		over = len(links) - billed
		spendRatio = float64(spent) / float64(budgeted)
		log, err := clicks.New(env.db)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := log.Scan(context.Background(), time.Time{}, time.Time{}, func(c clicks.Click) error {
			if !c.Billable && c.Reason == clicks.ReasonOverBudget {
				n++
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != over {
			b.Fatalf("%d clicks recorded over_budget, want the %d not billed", n, over)
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(worst, "overspend-bids-max")
	b.ReportMetric(mean, "overspend-bids-mean")
	b.ReportMetric(spendRatio, "spend/budget")
	b.ReportMetric(float64(billed), "billed-clicks")
	b.ReportMetric(float64(over), "over-budget-clicks")
	b.ReportMetric(rate, "clicks/s")
	b.Logf("10,000 clicks at once against %d budgets of 0.5 to 99.5 bids: worst overspend %.2f bids (target <= 1), "+
		"spend %.4f of the budgets, %d billed, %d over_budget", advertisers, worst, spendRatio, billed, over)
}
