package web

import (
	"encoding/csv"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// zoneView is what the dashboard says of its days: the zone's note, the
// range, each day's figures as the chart's tooltips give them, and the
// clicks table's times.
type zoneView struct {
	Note, Range string
	Days        []string
	Times       []string
}

const zoneViewScript = `(() => ({
  Note: document.getElementById('zone-note')?.textContent || '',
  Range: document.getElementById('range').textContent,
  Days: [...document.querySelectorAll('#chart g.day title')].map((t) => t.textContent),
  Times: [...document.querySelectorAll('#click-rows tr')].map((tr) => tr.cells[0].textContent),
}))()`

// TestDashboardInTheReadersZone: the dashboard asks for the days of the
// browser's time zone, says which, and shows clicks late in a UTC day on
// the days they fall on there, in the chart, the clicks table and the
// clicks' CSV. A browser in a zone not whole hours from UTC (Kolkata)
// gets UTC's days, and is told why.
func TestDashboardInTheReadersZone(t *testing.T) {
	var now atomic.Int64 // 0 is the real clock
	b, err := newBackend(backendOptions{now: func() time.Time {
		if n := now.Load(); n != 0 {
			return time.Unix(0, n)
		}
		return time.Now()
	}, unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	base := b.URL
	// One click at 21:30 UTC and two at 23:30 UTC, three days ago: one
	// UTC day, and two days in Berlin (winter or summer).
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	early, late := day.Add(21*time.Hour+30*time.Minute), day.Add(23*time.Hour+30*time.Minute)
	now.Store(early.UnixNano())
	makeTraffic(t, base, visit{query: "iphone 15 hülle", ykTag: "tz-early", network: "198.51.200.7", views: 1, clicks: 1})
	now.Store(late.UnixNano())
	makeTraffic(t, base, visit{query: "galaxy s24", ykTag: "tz-late", network: "198.51.201.7", views: 1, clicks: 2})
	now.Store(0)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}

	open := func(zone string) (*browser, *requestLog, zoneView) {
		br := newBrowser(t)
		send(t, br, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		send(t, br, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"})
		var requests requestLog
		keepLocal(t, br, base, make(chan string, 8), requests.add)
		br.do(t, chromedp.Navigate(base+"/dashboard"))
		eval[string](t, br, jsCall(dashSettled))
		br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
		if s := evalCall[string](t, br, dashPress, "go", jsSource(dashSettled)); s != "ready" {
			t.Fatalf("in %s: state %q, want ready", zone, s)
		}
		return br, &requests, eval[zoneView](t, br, zoneViewScript)
	}
	// figures are the chart's figures of the day of at in loc.
	figures := func(v zoneView, at time.Time, loc *time.Location) string {
		label := at.In(loc).Format("Jan 2") + ": "
		for _, d := range v.Days {
			if strings.HasPrefix(d, label) {
				return d
			}
		}
		return ""
	}
	// asked checks that each report and listing the page asked for was of
	// zone's days.
	asked := func(requests *requestLog, zone string) {
		n := 0
		for _, u := range requests.all() {
			p, err := url.Parse(u)
			if err != nil || p.Path != "/v2/report" && p.Path != "/v2/clicks" {
				continue
			}
			n++
			if got := p.Query().Get("tz"); got != zone {
				t.Errorf("the page asked %s with tz %q, want %q", u, got, zone)
			}
		}
		if n < 3 {
			t.Errorf("the page asked for %d reports and listings", n)
		}
	}

	br, requests, v := open("Europe/Berlin")
	if v.Note != "Days are in Europe/Berlin, and so are the clicks' times." || !strings.HasSuffix(v.Range, "(Europe/Berlin)") {
		t.Errorf("in Berlin the page says %q, range %q", v.Note, v.Range)
	}
	if got := figures(v, early, berlin); !strings.Contains(got, ": 1 click,") {
		t.Errorf("in Berlin, %s shows %q, want 1 click", early.In(berlin).Format(time.DateOnly), got)
	}
	if got := figures(v, late, berlin); !strings.Contains(got, ": 2 clicks,") {
		t.Errorf("in Berlin, %s shows %q, want 2 clicks", late.In(berlin).Format(time.DateOnly), got)
	}
	lateAt := late.In(berlin).Format("Jan 2, 2006") + ", " + late.In(berlin).Format("3:04:05")
	if len(v.Times) != 3 || !strings.HasPrefix(strings.ReplaceAll(v.Times[0], "\u202f", " "), lateAt) {
		t.Errorf("in Berlin the clicks table's times are %q, want the newest first, at %s", v.Times, lateAt)
	}
	// The clicks' CSV: times with Berlin's offset.
	downloaded := saveDownloads(t, br, 30*time.Second, false)
	br.do(t, chromedp.Click("#clicks-csv"))
	got, _ := downloaded()
	recs, err := csv.NewReader(strings.NewReader(string(got))).ReadAll()
	if err != nil || len(recs) != 4 || recs[0][1] != "time" {
		t.Fatalf("the clicks' CSV: %v\n%s", err, got)
	}
	if want := late.In(berlin).Format(time.RFC3339); !strings.HasPrefix(recs[3][1], want[:19]) || !strings.HasSuffix(recs[3][1], want[19:]) {
		t.Errorf("the clicks' CSV has the last click at %s, want %s", recs[3][1], want)
	}
	asked(requests, "Europe/Berlin")
	br.noPageErrors(t)

	br, requests, v = open("Asia/Kolkata")
	// Chromium names Kolkata by its old name, Asia/Calcutta.
	if !strings.HasPrefix(v.Note, "Days are in UTC") || !strings.Contains(v.Note, "not a whole number of hours") || !strings.HasSuffix(v.Range, "(UTC)") {
		t.Errorf("in Kolkata the page says %q, range %q", v.Note, v.Range)
	}
	if got := figures(v, early, time.UTC); !strings.Contains(got, ": 3 clicks,") {
		t.Errorf("in Kolkata (UTC days), %s shows %q, want 3 clicks", early.Format(time.DateOnly), got)
	}
	lateAt = late.Format("Jan 2, 2006") + ", " + late.Format("3:04:05")
	if len(v.Times) != 3 || !strings.HasPrefix(strings.ReplaceAll(v.Times[0], "\u202f", " "), lateAt) {
		t.Errorf("in Kolkata the clicks table's times are %q, want the newest first, at %s (UTC)", v.Times, lateAt)
	}
	asked(requests, "UTC")
	br.noPageErrors(t)
}
