package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dashPressSeen, called with a button's id, clicks it and resolves, as
// the state settles, with the state and what the error line says then,
// before a try again by itself can change it.
const dashPressSeen = `(id) => new Promise((resolve) => {
  const text = document.getElementById("neterror-text");
  new MutationObserver((_, o) => {
    const s = document.body.dataset.state;
    if (s && s !== "loading") {
      o.disconnect();
      resolve({ State: s, Text: text.textContent });
    }
  }).observe(document.body, { attributes: true, attributeFilter: ["data-state"] });
  document.getElementById(id).click();
})`

// limitedReport is a 429 of /v2/report: its Retry-After and its error.
type limitedReport struct {
	After string `json:"-"`
	Error struct {
		Code, Message, Limit string
		RetryAfter           int `json:"retry_after"`
	}
}

// TestDashboardRateLimited: while another client of the reader's network
// floods /v2/report, whose 429 names the report limit and its wait as
// fields, the dashboard shows the server's message as it is, without the
// wait or the limit in it, tries again by itself after the body's
// retry_after and then after twice that; once the flood stops, Try again
// shows the report.
func TestDashboardRateLimited(t *testing.T) {
	// A server of its own: the flood empties its report bucket of
	// loopback, which every test's browser shares.
	b, err := newBackend(backendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t)
	br.do(t, chromedp.Navigate(b.URL+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))

	ctx, stop := context.WithCancel(t.Context())
	var flood sync.WaitGroup
	refused := make(chan limitedReport, 1)
	flood.Go(func() {
		// Ten times the limit's rate: the bucket stays empty.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.URL+"/v2/report?group_by=day", nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				continue // stopped
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusTooManyRequests {
				continue
			}
			l := limitedReport{After: res.Header.Get("Retry-After")}
			if err := json.Unmarshal(body, &l); err != nil {
				t.Errorf("a 429 of the flood: %v: %s", err, body)
			}
			select {
			case refused <- l:
			default:
			}
		}
	})
	t.Cleanup(func() {
		stop()
		flood.Wait()
	})
	var l limitedReport
	select {
	case l = <-refused:
	case <-time.After(time.Minute):
		t.Fatal("the flood was never refused")
	}
	if e := l.Error; e.Code != "rate_limited" || e.Limit != "report" || strconv.Itoa(e.RetryAfter) != l.After ||
		strings.Contains(e.Message, "retry") || strings.Contains(e.Message, "(limit") {
		t.Fatalf("the flood's 429: Retry-After %q, %+v; want limit report, retry_after as Retry-After, and a message without either", l.After, e)
	}

	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	seen := evalCall[struct{ State, Text string }](t, br, dashPressSeen, "go")
	wait := strconv.Itoa(l.Error.RetryAfter)
	if seen.State != "unavailable" {
		t.Fatalf("flooded: state %q (%q), want unavailable", seen.State, seen.Text)
	}
	if msg := strings.ToUpper(l.Error.Message[:1]) + l.Error.Message[1:] + "."; !strings.HasPrefix(seen.Text, msg) {
		t.Errorf("flooded: %q, want the server's message %q", seen.Text, msg)
	}
	if !strings.HasSuffix(seen.Text, " Trying again in "+wait+" s.") || strings.Count(seen.Text, wait+" s") != 1 ||
		strings.Contains(seen.Text, "limit") {
		t.Errorf("flooded: %q, want the wait of retry_after (%s s) said once, and no limit", seen.Text, wait)
	}
	// Still refused at the try again: the next waits twice as long.
	twice := strconv.Itoa(2 * l.Error.RetryAfter)
	waitCtx, waitCancel := context.WithTimeout(br.ctx, time.Minute)
	defer waitCancel()
	if _, err := chromedp.Run(waitCtx, chromedp.Evaluate[bool](`new Promise((resolve) => {
		const text = document.getElementById("neterror-text");
		const done = () => text.textContent.endsWith("Trying again in `+twice+` s.") && (resolve(true), true);
		if (!done()) new MutationObserver((_, o) => done() && o.disconnect()).observe(text, { childList: true, characterData: true, subtree: true });
	})`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("still flooded: the dashboard did not wait twice as long the second time: %v", err)
	}

	stop()
	flood.Wait()
	// Try again, pressed, asks at once; refused once more if the bucket
	// has not a request in it yet, the dashboard asks again by itself.
	br.do(t, chromedp.Click("#retry"))
	readyCtx, readyCancel := context.WithTimeout(br.ctx, time.Minute)
	defer readyCancel()
	s, err := chromedp.Run(readyCtx, chromedp.Evaluate[string](`new Promise((resolve) => {
		const done = () => ["ready", "empty"].includes(document.body.dataset.state) && (resolve(document.body.dataset.state), true);
		if (!done()) new MutationObserver((_, o) => done() && o.disconnect()).observe(document.body, { attributes: true, attributeFilter: ["data-state"] });
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the flood stopped: the dashboard never showed the report: %v", err)
	}
	if v := eval[dashView](t, br, jsCall(dashViewScript)); v.NetError != "" || !v.Dash {
		t.Errorf("the flood stopped: state %s, %+v, want the report", s, v)
	}
	br.noPageErrors(t)
}
