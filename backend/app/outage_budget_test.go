package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/report"
	"github.com/adlink/adlink/internal/testpg"
)

// The budget attack an outage invites: a competitor holds many links to a
// budgeted advertiser's ad and clicks them on every replica while Postgres
// is down. Each spool keeps no spend, so each replica alone bills every
// one; shipped together, Postgres settles them again against the one
// budget: the day's spend passes it by less than one bid, every other
// click is over_budget, and the advertiser's report says the same.
func TestOutageBudgetOverReplicas(t *testing.T) {
	const advertiser = "handy-bestkauf.de"
	budget := demoBudget(t, advertiser)
	pg := testpg.Start(t)
	replicas := []*App{budgetReplica(t, pg.URL()), budgetReplica(t, pg.URL())}
	bid := replicas[0].Indexes.Bid(advertiser) // its one ad's id is its own
	if bid <= 0 {
		t.Fatalf("the ad %s bids %d", advertiser, bid)
	}
	want := int((budget + bid - 1) / bid) // the click that reaches the budget bills

	const n = 80
	links := make([]string, n)
	for i := range links {
		links[i] = advertiserURL(t, replicas[i%2].Handler, advertiser)
	}
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, l, nil)
			req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
			req.RemoteAddr = fmt.Sprintf("10.1.%d.1:5000", i)
			clicks.Navigation.Header(req.Header)
			rec := httptest.NewRecorder()
			replicas[(i+1)%2].Handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusFound || rec.Header().Get("X-Adlink-Click") == "" {
				t.Errorf("click %d during the outage: %d %s", i, rec.Code, rec.Body)
			}
		})
	}
	wg.Wait()
	// The attack is real: alone, the replicas billed past the budget.
	local := 0
	for _, r := range replicas {
		if got := metric(t, r, "adlink_clicks_spooled_total"); got != fmt.Sprint(n/2) {
			t.Fatalf("a replica spooled %s clicks, want %d", got, n/2)
		}
		var b int
		if _, err := fmt.Sscan(metric(t, r, `adlink_clicks_total{billable="true",reason=""}`), &b); err != nil {
			t.Fatalf("the billed clicks' metric: %v", err)
		}
		local += b
	}
	if int64(local)*bid < budget+bid {
		t.Fatalf("the replicas billed %d clicks while Postgres was down: no more than the budget", local)
	}
	restartAndShip(t, pg, replicas...)

	ctx := t.Context()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var total, billed, over int
	var spent int64
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE billable),
		count(*) FILTER (WHERE reason = 'over_budget'), coalesce(sum(bid_micros) FILTER (WHERE billable), 0)::bigint
		FROM clicks WHERE advertiser = $1`, advertiser).Scan(&total, &billed, &over, &spent); err != nil {
		t.Fatal(err)
	}
	if total != n {
		t.Fatalf("Postgres holds %d clicks of %s, want %d", total, advertiser, n)
	}
	if billed != want || spent < budget || spent-bid >= budget || over != n-want {
		t.Errorf("%d links clicked on two replicas during an outage: %d billed spending %d of a budget of %d at %d a click, %d over_budget; want %d billed, the rest over_budget",
			n, billed, spent, budget, bid, over, want)
	}

	for _, r := range replicas {
		req := httptest.NewRequest(http.MethodGet, "/v2/report?group_by=advertiser", nil)
		req.Header.Set("Authorization", "Bearer demo-advertiser-report")
		rec := httptest.NewRecorder()
		r.Handler.ServeHTTP(rec, req)
		var rep struct {
			Rows []struct {
				Billable int64  `json:"billable_clicks"`
				Over     int64  `json:"unbilled_over_budget"`
				Spend    string `json:"spend"`
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); rec.Code != http.StatusOK || err != nil || len(rep.Rows) != 1 {
			t.Fatalf("the advertiser's report: %d %v %s", rec.Code, err, rec.Body)
		}
		row := rep.Rows[0]
		if row.Billable != int64(billed) || row.Over != int64(over) || row.Spend != report.Spend(spent) {
			t.Errorf("the advertiser's report: %+v, want %d billable, %d over_budget, spend of %d micros", row, billed, over, spent)
		}
	}
}

// demoBudget is the demo's daily budget of advertiser, in micros.
func demoBudget(t *testing.T, advertiser string) int64 {
	t.Helper()
	for _, acc := range accounts.Demo() {
		if acc.ID == advertiser {
			m, err := accounts.ParseMicros(acc.DailyBudget)
			if err != nil || m <= 0 {
				t.Fatalf("the demo budget of %s: %q %v", advertiser, acc.DailyBudget, err)
			}
			return m
		}
	}
	t.Fatalf("the demo gives %s no daily budget", advertiser)
	return 0
}

// budgetReplica is a replica on the Postgres database at url whose limits
// never refuse the test's requests.
func budgetReplica(t *testing.T, url string) *App {
	t.Helper()
	cfg := testConfig(t)
	cfg.PostgresURL = url
	cfg.ClickKeys = []clicks.Key{{ID: "shared", Secret: bytes.Repeat([]byte{7}, 32)}}
	cfg.KeyRate, cfg.KeyBurst, cfg.IPRate, cfg.IPBurst = 1e9, 1e9, 1e9, 1e9
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// advertiserURL is the ad URL of advertiser's ad in a fresh answer on h:
// a decision of its own.
func advertiserURL(t *testing.T, h http.Handler, advertiser string) string {
	t.Helper()
	status, body := get(t, h, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo")
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
		t.Fatalf("search: %d %v %.200s", status, err, body)
	}
	for _, l := range resp.Link {
		if strings.Contains(l.Ad, "adId="+advertiser+"&") {
			return l.Ad[strings.Index(l.Ad, "/v1/redirect?"):]
		}
	}
	t.Fatalf("the answer has no ad of %s: %.300s", advertiser, body)
	return ""
}
