package app

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/accounts"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/internal/testpg"
)

// TestReplicasHoldOneBudget: links to a budgeted advertiser's ad, handed
// out before its budget was spent, clicked all at once on two replicas of
// one Postgres database, each from a network of its own, bill the daily
// budget and no more: the click that reaches it is the last that bills
// (the spend passes the budget by less than one bid), every later one is
// over_budget on whichever replica it lands.
func TestReplicasHoldOneBudget(t *testing.T) {
	url := testpg.New(t)
	a, b := budgetReplica(t, url), budgetReplica(t, url)

	const advertiser = "handy-bestkauf.de"
	var budget int64
	for _, acc := range accounts.Demo() {
		if acc.ID == advertiser {
			m, err := accounts.ParseMicros(acc.DailyBudget)
			if err != nil {
				t.Fatal(err)
			}
			budget = m
		}
	}
	if budget == 0 {
		t.Fatalf("the demo gives %s no daily budget", advertiser)
	}

	// Every link first, from answers on both replicas, as pages open
	// before the budget is spent would hold them.
	const n = 90
	links := make([]string, 0, n)
	for i := 0; len(links) < n; i++ {
		h := []*App{a, b}[i%2].Handler
		status, body := get(t, h, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo")
		var resp struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil {
			t.Fatalf("search: %d %v %.200s", status, err, body)
		}
		found := false
		for _, l := range resp.Link {
			if strings.Contains(l.Ad, "adId="+advertiser+"&") {
				links = append(links, l.Ad[strings.Index(l.Ad, "/v1/redirect?"):])
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("answer %d has no ad of %s: %.300s", i, advertiser, body)
		}
	}

	var wg sync.WaitGroup
	codes := make([]int, n)
	for i, l := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest(http.MethodGet, l, nil)
			req.RemoteAddr = fmt.Sprintf("[2001:db8:%x::1]:40000", i+1)
			req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
			clicks.Navigation.Header(req.Header)
			rec := httptest.NewRecorder()
			[]*App{a, b}[i%2].Handler.ServeHTTP(rec, req)
			codes[i] = rec.Code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusFound {
			t.Fatalf("click %d: %d, want 302", i, c)
		}
	}

	var billed, spent, bid int64
	reasons := map[string]int{}
	if err := a.Clicks.Scan(t.Context(), time.Time{}, time.Time{}, func(c clicks.Click) error {
		if c.Advertiser != advertiser {
			return nil
		}
		bid = c.BidMicros
		if c.Billable {
			billed++
			spent += c.BidMicros
		} else {
			reasons[c.Reason]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if bid <= 0 {
		t.Fatalf("no click of %s recorded", advertiser)
	}
	want := (budget + bid - 1) / bid // the click that reaches the budget bills
	if billed != want || spent < budget || spent-bid >= budget {
		t.Errorf("%d links clicked at once on two replicas: %d billed, spending %d of a budget of %d at %d a click; want %d",
			n, billed, spent, budget, bid, want)
	}
	if reasons[clicks.ReasonOverBudget] != n-int(want) || len(reasons) != 1 {
		t.Errorf("the clicks that did not bill: %v, want %d over_budget", reasons, n-int(want))
	}
	for _, r := range []*App{a, b} {
		if s, err := r.Rollups.SpentOn(t.Context(), advertiser, clicks.BudgetDayIn(time.Now(), time.UTC)); err != nil || s != spent {
			t.Errorf("a replica reads the spend as %d %v, want the click table's %d", s, err, spent)
		}
	}
}

// TestBudgetOfNoAdvertiserIsLogged: a daily budget given to an id no ad
// of the catalog has (a typo for the advertiser meant, which then has
// none) is logged as a warning naming it, at start and when a reload
// swaps in a file with another one; a reload that changes nothing logs it
// no more.
func TestBudgetOfNoAdvertiserIsLogged(t *testing.T) {
	const warning = "daily budgets of advertisers no ad of the catalog has"
	dir := t.TempDir()
	file := filepath.Join(dir, "advertisers.json")
	writeFile(t, file, []byte(`{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"10","currency":"EUR"},
		{"id":"handy-bestkauf.com","daily_budget":"5","currency":"EUR"}]}`))
	cfg := testConfig(t)
	cfg.AdvertisersFile = file
	logs := &syncLog{}
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	admin := httptest.NewServer(a.Admin)
	defer admin.Close()
	reload := func() {
		t.Helper()
		res, err := http.Post(admin.URL+"/admin/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("reload: %s", res.Status)
		}
	}
	if n := strings.Count(logs.String(), warning); n != 1 || !strings.Contains(logs.String(), "handy-bestkauf.com") {
		t.Errorf("at start, the warning %d times, want once naming handy-bestkauf.com:\n%s", n, logs.String())
	}
	reload()
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("a reload that changed nothing logged the warning again:\n%s", logs.String())
	}
	writeFile(t, file, []byte(`{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"10","currency":"EUR"},
		{"id":"amazon.dee","daily_budget":"5","currency":"EUR"}]}`))
	reload()
	if n := strings.Count(logs.String(), warning); n != 2 || !strings.Contains(logs.String(), "amazon.dee") {
		t.Errorf("after a file with another, the warning %d times, want twice, naming amazon.dee:\n%s", n, logs.String())
	}
	writeFile(t, file, []byte(`{"advertisers":[{"id":"handy-bestkauf.de","daily_budget":"10","currency":"EUR"}]}`))
	reload()
	if n := strings.Count(logs.String(), warning); n != 2 {
		t.Errorf("after the file was fixed, the warning %d times, want no more:\n%s", n, logs.String())
	}
}
