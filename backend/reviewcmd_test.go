package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/api"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// reviewDay is the day the review tests' clicks and impressions are on,
// all between 10:00 and 12:00 UTC.
var reviewDay = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// seedReview records, on partner k-1, 20 sites of 2,000 impressions and
// 18 to 22 billable clicks each (a median of 20, a billable CTR of 1%),
// one of them a search answer's click more; the site spam, of 2,000
// impressions, 200 billable clicks (10 times the median's rate) and 50
// its readers' browsers said no person made (not_navigation); the site
// small, of 500 impressions and 100 billable clicks, under the default
// -min-impressions; and the site rest, whose server shows the answers'
// signed links without an impression: 60 clicks on its pages' ads and 60
// on its search answers', 70 of them not_navigation (40 of its pages', 30
// of its search answers') and 20 too_fast (of its search answers').
func seedReview(t *testing.T, ledger clicks.Ledger, imps clicks.Impressions) {
	t.Helper()
	ctx := t.Context()
	var all []clicks.Click
	n := 0
	site := func(id, typ string, impressions, billable, notNav int) {
		batch := make([]clicks.Impression, impressions)
		for i := range batch {
			batch[i] = clicks.Impression{Time: reviewDay.Add(time.Duration(i) * time.Second), AdID: "ad-" + id, AdType: "advertiser",
				Type: "intext", APIKey: "k-1", SiteID: id, Criterion: "lg handy", Page: "https://" + id + ".example/a",
				IP: "192.0.2.1", Advertiser: "shop.example", Currency: "EUR"}
		}
		if len(batch) > 0 {
			if _, err := imps.Append(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		for i := range billable + notNav {
			n++
			c := clicks.Click{ID: fmt.Sprintf("click-%06d", n), Time: reviewDay.Add(time.Hour + time.Duration(n)*time.Second),
				AdID: "ad-" + id, AdType: "advertiser", Type: typ, APIKey: "k-1", SiteID: id, Criterion: "lg handy",
				IP: fmt.Sprintf("10.%d.%d.1", n/250, n%250), Advertiser: "shop.example", BidMicros: 250_000, Currency: "EUR"}
			if i >= billable {
				c.Reason = clicks.ReasonNotNavigation
			}
			all = append(all, c)
		}
	}
	for i := range 20 {
		site(fmt.Sprintf("site-%02d", i), "intext", 2000, 18+i%5, 0)
	}
	site("spam", "intext", 2000, 200, 50)
	site("small", "intext", 500, 100, 0)
	site("rest", "intext", 0, 20, 40)
	site("rest", "search", 0, 10, 50)
	for i := range all[len(all)-20:] {
		all[len(all)-20+i].Reason = clicks.ReasonTooFast
	}
	search := all[0]
	n++
	search.ID, search.Type, search.IP, search.Time = fmt.Sprintf("click-%06d", n), "search", "10.200.0.1", search.Time.Add(time.Minute)
	all = append(all, search)
	// Recorded by several at once, so that they share commits.
	var wg sync.WaitGroup
	errs := make(chan error, len(all))
	next := make(chan clicks.Click)
	for range 8 {
		wg.Go(func() {
			for c := range next {
				want := c.Reason == ""
				if err := ledger.Record(ctx, &c, clicks.Use{}); err != nil {
					errs <- err
				} else if c.Billable != want {
					errs <- fmt.Errorf("click %s billable %v (%s), want %v", c.ID, c.Billable, c.Reason, want)
				}
			}
		})
	}
	for _, c := range all {
		next <- c
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// reviewAnswer is the JSON of a site review, as the command and the route
// give it.
type reviewAnswer struct {
	From, To       string
	Rank           string  `json:"rank"`
	MinImpressions int64   `json:"min_impressions"`
	MinClicks      int64   `json:"min_clicks"`
	Reviewed       int     `json:"reviewed"`
	Median         float64 `json:"median_billable_ctr"`
	MedianRefused  float64 `json:"median_refused_share"`
	Sites          []struct {
		APIKey         string  `json:"api_key"`
		SiteID         string  `json:"site_id"`
		Impressions    int64   `json:"impressions"`
		Clicks         int64   `json:"clicks"`
		Billable       int64   `json:"billable_clicks"`
		CTR            float64 `json:"billable_ctr"`
		Median         float64 `json:"median_billable_ctr"`
		OverMedian     float64 `json:"ctr_over_median"`
		Refused        int64   `json:"refused_clicks"`
		RefusedShare   float64 `json:"refused_share"`
		MedianRefused  float64 `json:"median_refused_share"`
		RefusedOver    float64 `json:"refused_over_median"`
		SearchClicks   int64   `json:"search_clicks"`
		SearchBillable int64   `json:"search_billable_clicks"`
		Signals        struct {
			NotNavigation float64 `json:"not_navigation_share"`
			Repeat        float64 `json:"repeat_share"`
			TooFast       float64 `json:"too_fast_share"`
		} `json:"signals"`
		Unbilled       map[string]int64 `json:"unbilled"`
		SearchUnbilled map[string]int64 `json:"search_unbilled"`
		Spend          map[string]int64 `json:"spend_micros"`
		Invalidate     map[string]string
	} `json:"sites"`
}

// checkReview checks a review of the seeded day: the spam site first with
// its figures, 21 sites reviewed of which want listed, small and rest
// left out.
func checkReview(t *testing.T, body []byte, from, to string, want int) {
	t.Helper()
	var got reviewAnswer
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if bytes.Contains(body, []byte("refused_over_median")) || bytes.Contains(body, []byte("min_clicks")) {
		t.Errorf("a review by CTR gives the refused share's median or bound: %s", body)
	}
	if got.From != from || got.To != to || got.Rank != "ctr" || got.MinImpressions != 1000 || got.Reviewed != 21 || got.Median != 0.01 || len(got.Sites) != want {
		t.Fatalf("review %s..%s of %d sites, median %v, %d listed; want %s..%s, 21, 0.01, %d: %s",
			got.From, got.To, got.Reviewed, got.Median, len(got.Sites), from, to, want, body)
	}
	first := got.Sites[0]
	if first.APIKey != "k-1" || first.SiteID != "spam" || first.Impressions != 2000 || first.Clicks != 250 || first.Billable != 200 ||
		first.CTR != 0.1 || first.Median != 0.01 || first.OverMedian != 10 || first.Signals.NotNavigation != 0.2 || first.Signals.Repeat != 0 ||
		first.Unbilled[clicks.ReasonNotNavigation] != 50 || first.Spend["EUR"] != 200*250_000 {
		t.Errorf("first site %+v", first)
	}
	if sel := first.Invalidate; sel["api_key"] != "k-1" || sel["site_id"] != "spam" || sel["from"] != from || sel["to"] != to {
		t.Errorf("invalidate selector %v", sel)
	}
	for i, s := range got.Sites {
		if s.SiteID == "small" || s.SiteID == "rest" {
			t.Errorf("site %s, of under 1000 impressions, listed at %d", s.SiteID, i)
		}
		if i > 0 && (s.CTR > got.Sites[i-1].CTR || s.OverMedian > 2.2 || s.Billable > 22) {
			t.Errorf("site %d: %+v after %+v", i, s, got.Sites[i-1])
		}
		// The search answer's click is the site's apart, out of its rate.
		if s.SiteID == "site-00" && (s.Billable != 18 || s.SearchClicks != 1 || s.SearchBillable != 1 || s.Spend["EUR"] != 19*250_000) {
			t.Errorf("site-00 %+v, want 18 billable clicks of its pages and 1 of a search answer", s)
		}
	}
}

// checkRefused checks a review of the seeded day by refused share, of
// sites with minClicks: the site rest first, without impressions, its
// page and search answer clicks together; then spam and, of 100 clicks,
// small; the 20 others, of fewer clicks, left out.
func checkRefused(t *testing.T, body []byte, from, to string, minClicks int64) {
	t.Helper()
	var got reviewAnswer
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if bytes.Contains(body, []byte("ctr_over_median")) || bytes.Contains(body, []byte("median_billable_ctr")) || bytes.Contains(body, []byte("min_impressions")) {
		t.Errorf("a review by refused share gives the CTR's median or bound: %s", body)
	}
	ids := make([]string, len(got.Sites))
	for i, s := range got.Sites {
		ids[i] = s.SiteID
	}
	want := map[int64][]string{100: {"rest", "spam", "small"}, 120: {"rest", "spam"}, 121: {"spam"}}[minClicks]
	median := map[int64]float64{100: 0.2, 120: 0.475, 121: 0.2}[minClicks]
	if got.From != from || got.To != to || got.Rank != "refused" || got.MinClicks != minClicks || got.Reviewed != len(want) ||
		got.MedianRefused != median || strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("review by refused share of %d sites, median %v: %v; want %v, %v: %s", got.Reviewed, got.MedianRefused, ids, want, median, body)
	}
	if minClicks > 120 {
		return
	}
	first := got.Sites[0]
	if first.APIKey != "k-1" || first.Impressions != 0 || first.Clicks != 60 || first.Billable != 20 || first.SearchClicks != 60 ||
		first.SearchBillable != 10 || first.Refused != 90 || first.RefusedShare != 0.75 || first.MedianRefused != median ||
		first.RefusedOver != map[int64]float64{100: 3.75, 120: 1.58}[minClicks] || first.CTR != 0 || first.Unbilled[clicks.ReasonNotNavigation] != 40 ||
		first.SearchUnbilled[clicks.ReasonNotNavigation] != 30 || first.SearchUnbilled[clicks.ReasonTooFast] != 20 || first.Spend["EUR"] != 30*250_000 {
		t.Errorf("first site %+v", first)
	}
	// The signals count the clicks the refused share counts, of pages
	// and search answers: 70 and 20 of 120, which add up to its 90.
	if s := first.Signals; s.NotNavigation != 0.5833 || s.TooFast != 0.1667 || s.Repeat != 0 {
		t.Errorf("first site's signals %+v, want not_navigation 0.5833 and too_fast 0.1667 of its 120 clicks", s)
	}
	if sel := first.Invalidate; sel["api_key"] != "k-1" || sel["site_id"] != "rest" || sel["from"] != from || sel["to"] != to {
		t.Errorf("invalidate selector %v", sel)
	}
	if spam := got.Sites[1]; spam.Clicks != 250 || spam.Refused != 50 || spam.RefusedShare != 0.2 || spam.Impressions != 2000 || spam.CTR != 0.1 {
		t.Errorf("second site %+v", spam)
	}
}

// TestReviewSites: on each store, the command and GET /admin/sites/review
// rank the site of 10 times the median's billable CTR first, with its
// figures and the selector that credits it, leave out the site under
// -min-impressions, give the same answer, and refuse bad parameters,
// naming them; the route refuses what a web page could send.
func TestReviewSites(t *testing.T) {
	for _, kind := range []string{"bbolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			var args []string
			var rollups clicks.RollupReader
			env := noEnv
			switch kind {
			case "bbolt":
				dir := t.TempDir()
				db, err := store.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				ledger, err := clicks.NewLedger(db)
				if err != nil {
					t.Fatal(err)
				}
				imps, err := clicks.NewImpressions(db)
				if err != nil {
					t.Fatal(err)
				}
				seedReview(t, ledger, imps)
				rollups = clicks.ReadRollups(db)
				args = []string{"-data", dir}
				defer func() {
					// The command reads a file no server holds.
					db.Close()
					reviewCommand(t, env, args)
					// A server on the file serves the review on its
					// admin listener.
					_, admin, stop := startRunAdmin(t, "-data", dir, "-demo")
					defer stop()
					res, err := http.Get(admin + "/admin/sites/review?from=2026-11-20&to=2026-11-20")
					if err != nil {
						t.Fatal(err)
					}
					defer res.Body.Close()
					body, _ := io.ReadAll(res.Body)
					if res.StatusCode != http.StatusOK {
						t.Fatalf("the server's review: %s %s", res.Status, body)
					}
					checkReview(t, body, "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z", 21)
				}()
			case "postgres":
				url := testpg.New(t)
				db, err := pgstore.Open(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				seedReview(t, db.Ledger(), db.Impressions())
				rollups = db.Rollups()
				env = func(k string) string {
					if k == "ADLINK_POSTGRES_URL" {
						return url
					}
					return ""
				}
				defer func() { reviewCommand(t, env, args) }()
			}
			srv := httptest.NewServer(api.NewAdmin(api.AdminDeps{Rollups: rollups}))
			defer srv.Close()
			get := func(query string, header http.Header) (int, []byte) {
				t.Helper()
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/admin/sites/review?"+query, nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range header {
					req.Header[k] = v
				}
				if h := header.Get("Host"); h != "" {
					req.Host = h
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				return res.StatusCode, body
			}
			day, hours := "from=2026-11-20&to=2026-11-20", "from=2026-11-20T09:00:00Z&to=2026-11-20T13:00:00Z"
			status, body := get(day, nil)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", day, status, body)
			}
			checkReview(t, body, "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z", 21)
			// The same from the hours, the store summing them.
			status, body = get(hours+"&limit=3", nil)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", hours, status, body)
			}
			checkReview(t, body, "2026-11-20T09:00:00Z", "2026-11-20T13:00:00Z", 3)
			// The same from a whole day and hours either side of it, the
			// day read by the day and the hours by the hour.
			edges := "from=2026-11-19T22:00:00Z&to=2026-11-21T03:00:00Z"
			if status, body = get(edges, nil); status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", edges, status, body)
			}
			checkReview(t, body, "2026-11-19T22:00:00Z", "2026-11-21T03:00:00Z", 21)
			// Under 1,000 impressions a site is reviewed when asked; one
			// without impressions never is.
			if status, body = get(day+"&min_impressions=0", nil); status != http.StatusOK || !bytes.Contains(body, []byte(`"site_id":"small"`)) ||
				bytes.Contains(body, []byte(`"site_id":"rest"`)) {
				t.Errorf("min_impressions=0: %d %s, want the site small and not rest", status, body)
			}
			// By refused share, the site without impressions is first,
			// its clicks on pages and search answers counted together.
			for query, minClicks := range map[string]int64{day + "&rank=refused": 100, hours + "&rank=refused&min_clicks=120": 120,
				day + "&rank=refused&min_clicks=121&limit=1": 121} {
				status, body := get(query, nil)
				if status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", query, status, body)
				}
				from, to := "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z"
				if strings.HasPrefix(query, hours) {
					from, to = "2026-11-20T09:00:00Z", "2026-11-20T13:00:00Z"
				}
				checkRefused(t, body, from, to, minClicks)
			}

			for query, param := range map[string]string{
				"from=yesterday":                                    "from",
				"from=2026-11-20&to=2026-11-3O":                     "to",
				"from=2026-11-21&to=2026-11-20":                     "to",
				"from=2026-11-20T10:00:00Z&to=2026-11-20T10:00:00Z": "to",
				"from=2026-08-01&to=2026-11-20":                     "from",
				"from=2026-11-20T09:30:00Z&to=2026-11-21":           "from",
				day + "&limit=0":                                    "limit",
				day + "&limit=1001":                                 "limit",
				day + "&limit=ten":                                  "limit",
				day + "&min_impressions=-1":                         "min_impressions",
				day + "&rank=best":                                  "rank",
				day + "&rank=CTR":                                   "rank",
				day + "&min_clicks=100":                             "min_clicks",
				day + "&rank=refused&min_clicks=-1":                 "min_clicks",
				day + "&rank=refused&min_clicks=many":               "min_clicks",
				day + "&rank=refused&min_impressions=1000":          "min_impressions",
			} {
				status, body := get(query, nil)
				var e struct {
					Error struct{ Code, Param, Message string }
				}
				if err := json.Unmarshal(body, &e); err != nil || status != http.StatusBadRequest || e.Error.Param != param || e.Error.Message == "" {
					t.Errorf("GET ?%s: %d %s, want 400 naming %s", query, status, body, param)
				}
			}
			// 92 days is the most.
			if status, body := get("from=2026-08-21&to=2026-11-20", nil); status != http.StatusOK {
				t.Errorf("92 days: %d %s", status, body)
			}
			for name, h := range map[string]http.Header{
				"another site's fetch": {"Sec-Fetch-Site": {"cross-site"}},
				"a rebound name":       {"Host": {"rebind.evil.example"}},
			} {
				if status, body := get(day, h); status != http.StatusForbidden || bytes.Contains(body, []byte("spam")) {
					t.Errorf("%s: %d %s, want 403", name, status, body)
				}
			}
			args = append(args, "-from", "2026-11-20", "-to", "2026-11-20")
		})
	}
}

// reviewCommand runs adlink review-sites with args on the seeded day, and
// checks its JSON, a table whose first row is the spam site with the
// flags that credit it, and its refusals of bad flags.
func reviewCommand(t *testing.T, env func(string) string, args []string) {
	t.Helper()
	run := func(more ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append(append([]string{"review-sites"}, args...), more...), env, &out, io.Discard)
		return out.String(), err
	}
	out, err := run("-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	checkReview(t, []byte(out), "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z", 21)
	out, err = run("-limit", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 4 || !strings.HasPrefix(lines[0], "21 sites with at least 1000 impressions") ||
		!strings.Contains(lines[2], "spam") || !strings.Contains(lines[2], "10.00%") ||
		!strings.HasSuffix(strings.TrimSpace(lines[2]), "-api-key k-1 -site-id spam -from 2026-11-20T00:00:00Z -to 2026-11-21T00:00:00Z") {
		t.Errorf("table: %v\n%s", err, out)
	}
	out, err = run("-rank", "refused", "-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	checkRefused(t, []byte(out), "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z", 100)
	out, err = run("-rank", "refused", "-min-clicks", "120")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 4 || !strings.HasPrefix(lines[0], "2 sites with at least 120 clicks") || !strings.Contains(lines[0], "median refused share 47.50%") ||
		!strings.Contains(lines[2], "rest") || !strings.Contains(lines[2], "75.00%") ||
		!strings.HasSuffix(strings.TrimSpace(lines[2]), "-api-key k-1 -site-id rest -from 2026-11-20T00:00:00Z -to 2026-11-21T00:00:00Z") {
		t.Errorf("table by refused share: %v\n%s", err, out)
	}
	for flag, v := range map[string]string{"-limit": "0", "-min-impressions": "-5", "-format": "csv", "-to": "2026-11-1", "-rank": "best", "-min-clicks": "100"} {
		if _, err := run(flag, v); err == nil || !strings.Contains(err.Error(), flag+":") {
			t.Errorf("%s %s: %v, want an error naming %s", flag, v, err, flag)
		}
	}
}

// TestReviewSitesOneAtATime: adlink review-sites runs one at a time on a
// data directory or a Postgres database, as a server's reviews do: one
// started while another holds the turn is refused at once, saying so,
// and runs once the turn is free; a run gives the turn back.
func TestReviewSitesOneAtATime(t *testing.T) {
	for _, kind := range []string{"bbolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			env := noEnv
			var args []string
			var take func() (func(), bool, error)
			switch kind {
			case "bbolt":
				dir := t.TempDir()
				db, err := store.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := clicks.NewRollups(db); err != nil {
					t.Fatal(err)
				}
				db.Close()
				args = []string{"-data", dir}
				take = func() (func(), bool, error) { return lockReviewDir(dir) }
			case "postgres":
				url := testpg.New(t)
				db, err := pgstore.Open(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				db.Close()
				env = func(k string) string {
					if k == "ADLINK_POSTGRES_URL" {
						return url
					}
					return ""
				}
				// Another command's session.
				other, err := pgstore.OpenReader(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				take = func() (func(), bool, error) { return other.TryReviewTurn(t.Context()) }
			}
			review := func() error {
				return run(context.Background(), append([]string{"review-sites", "-format", "json"}, args...), env, io.Discard, io.Discard)
			}
			release, ok, err := take()
			if err != nil || !ok {
				t.Fatalf("the first turn: %v, %v", ok, err)
			}
			if err := review(); err == nil || !strings.Contains(err.Error(), "another adlink review-sites is reading") {
				t.Errorf("a review while another holds the turn: %v, want it refused, saying so", err)
			}
			if _, ok, err := take(); ok || err != nil {
				t.Errorf("a second turn while one is held: %v, %v", ok, err)
			}
			release()
			if err := review(); err != nil {
				t.Fatalf("a review once the turn is free: %v", err)
			}
			release, ok, err = take()
			if err != nil || !ok {
				t.Fatalf("the turn after a review: %v, %v; want it given back", ok, err)
			}
			release()
		})
	}
}

// TestReviewSitesOnePooledConnection: a Postgres URL that gives the pool
// one connection (pool_max_conns=1) runs the review: the review's lock
// holds a connection of its own, not the one its reads wait for.
func TestReviewSitesOnePooledConnection(t *testing.T) {
	url := testpg.New(t)
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	one := url + sep + "pool_max_conns=1"
	env := func(k string) string {
		if k == "ADLINK_POSTGRES_URL" {
			return one
		}
		return ""
	}
	err = run(context.Background(), []string{"review-sites", "-format", "json", "-timeout", "10s"}, env, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("a review over one pooled connection: %v", err)
	}
}
