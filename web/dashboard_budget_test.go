package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// budgetLine is what the dashboard's line of today's budget shows.
type budgetLine struct {
	Hidden       bool
	Text, Status string
}

const budgetLineScript = `(() => {
  const e = document.getElementById('budget');
  return { Hidden: e.hidden, Text: e.textContent, Status: e.dataset.status || '' };
})()`

// TestDashboardBudget: the demo advertiser, whose daily budget counts the
// days of Los Angeles, sees above the chart how much of today's budget is
// spent, in the reader's locale, and that its ads run until midnight
// there; once a click spends it, that they are paused until then. The
// demo partner sees no such line. The token never goes into a URL.
func TestDashboardBudget(t *testing.T) {
	b, err := newBackend(backendOptions{advertisers: `{"advertisers":[{"id":"handy-bestkauf.de","report_token":"` + demoAdvertiserReport +
		`","daily_budget":"0.01","currency":"EUR","timezone":"America/Los_Angeles"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	br := newBrowser(t)
	send(t, br, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"})
	var requests requestLog
	keepLocal(t, br, base, make(chan string, 8), requests.add)
	settled := jsSource(dashSettled)
	line := func() budgetLine { return eval[budgetLine](t, br, budgetLineScript) }
	signIn := func(token string) {
		t.Helper()
		br.do(t, chromedp.SendKeys("#token", token))
		if s := evalCall[string](t, br, dashPress, "go", settled); s != "ready" && s != "empty" {
			t.Fatalf("signed in with %s: state %q", token, s)
		}
	}
	br.do(t, chromedp.Navigate(base+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))

	signIn(demoPartnerReport)
	if l := line(); !l.Hidden || l.Text != "" {
		t.Errorf("the partner's page shows a budget: %+v", l)
	}
	if s := evalCall[string](t, br, dashPress, "signout", settled); s != "signed-out" {
		t.Fatalf("signed out: state %q", s)
	}

	signIn(demoAdvertiserReport)
	want := "Today's budget: €0.00 of €0.01 spent (0%). Ads run until midnight America/Los_Angeles."
	if l := lineOnce(t, br, want); l.Hidden || l.Text != want || l.Status != "active" {
		t.Errorf("the advertiser's budget before any click: %+v, want %q", l, want)
	}

	// A click spends the budget.
	v := url.Values{"q": {"lg handy"}, "api_key": {"demo"}, "site_id": {"demo"}, "loc": {"de"}, "lang": {"de"}, "ctx.dist": {"high"}}
	var answer struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal(get(t, base+"/v2/search/link?"+v.Encode()), &answer); err != nil {
		t.Fatal(err)
	}
	clicked := false
	for _, l := range answer.Link {
		if strings.Contains(l.Ad, "adId=handy-bestkauf.de") {
			navigateTo(t, l.Ad)
			clicked = true
			break
		}
	}
	if !clicked {
		t.Fatalf("no ad of handy-bestkauf.de to click: %+v", answer)
	}
	if s := evalCall[string](t, br, dashPress, "retry", settled); s != "ready" {
		t.Fatalf("loaded again: state %q", s)
	}
	// The click cost its bid, past the cent the budget had left, as
	// /v2/budget says.
	req, err := http.NewRequest(http.MethodGet, base+"/v2/budget", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+demoAdvertiserReport)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var day struct{ Spent, Status string }
	err = json.NewDecoder(res.Body).Decode(&day)
	res.Body.Close()
	if err != nil || day.Status != "spent" || len(day.Spent) != len("0.45") {
		t.Fatalf("/v2/budget: %v %+v, want the budget spent, to the cent", err, day)
	}
	want = "Today's budget: €" + day.Spent + " of €0.01 spent: ads are paused until midnight America/Los_Angeles."
	if l := lineOnce(t, br, want); l.Hidden || l.Text != want || l.Status != "spent" {
		t.Errorf("the advertiser's budget spent: %+v, want %q", l, want)
	}

	asked := 0
	for _, u := range requests.all() {
		if strings.Contains(u, "-report") {
			t.Errorf("a request carried the token in its URL: %s", u)
		}
		if strings.HasPrefix(u, base+"/v2/budget?") {
			asked++
		}
	}
	if asked != 2 {
		t.Errorf("the page asked /v2/budget %d times, want twice, for the advertiser only: %q", asked, requests.all())
	}
	br.noPageErrors(t)
}

// lineOnce is the budget line once it reads want, or as it is after a
// while: the page writes it when /v2/budget answers, after the report.
func lineOnce(t *testing.T, br *browser, want string) budgetLine {
	t.Helper()
	var l budgetLine
	for range 100 {
		if l = eval[budgetLine](t, br, budgetLineScript); l.Text == want {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return l
}

// TestDashboardBudgetHoldsNothingBack: an advertiser's report is drawn
// while /v2/budget has not answered, without the budget's line, which
// comes once it answers.
func TestDashboardBudgetHoldsNothingBack(t *testing.T) {
	b, err := newBackend(backendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	br := newBrowser(t)
	send(t, br, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"})
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	intercept(t, br, interception{local: []string{base + "/"}, left: make(chan string, 8),
		hold: func(u string) <-chan struct{} {
			if strings.HasPrefix(u, base+"/v2/budget?") {
				return release
			}
			return nil
		}})
	br.do(t, chromedp.Navigate(base+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))

	// The state the page settles in, or "loading" after a while.
	settledOrNot := jsSource(`() => Promise.race([(` + dashSettled + "\n)(), new Promise((r) => setTimeout(() => r('loading'), 20000))])")
	br.do(t, chromedp.SendKeys("#token", demoAdvertiserReport))
	if s := evalCall[string](t, br, dashPress, "go", settledOrNot); s != "ready" && s != "empty" {
		t.Fatalf("signed in while /v2/budget does not answer: state %q, want the report drawn", s)
	}
	if l := eval[budgetLine](t, br, budgetLineScript); !l.Hidden || l.Text != "" {
		t.Errorf("the budget's line before /v2/budget answered: %+v, want none", l)
	}
	close(release)
	released = true
	want := "Today's budget: €0.00 of €25.00 spent (0%). Ads run until midnight UTC."
	if l := lineOnce(t, br, want); l.Hidden || l.Text != want {
		t.Errorf("the budget's line once /v2/budget answered: %+v, want %q", l, want)
	}
	br.noPageErrors(t)
}
