package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// axText is an accessibility value's text.
func axText(v *accessibility.Value) string {
	if v == nil {
		return ""
	}
	var s string
	json.Unmarshal(v.Value, &s)
	return s
}

// TestDashboardChartAccessible: the chart, as Chromium's accessibility
// tree gives it to a screen reader, is an image whose name carries the
// range and the totals the figures above it show; each day's figures,
// today's among them, are in the tree once, in the summary after it, so
// that reading the page in order says them once. Today has one click,
// which every figure says in the singular.
func TestDashboardChartAccessible(t *testing.T) {
	// A server of its own: today's one click is the only one.
	b, err := newBackend(backendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	makeTraffic(t, b.URL, visit{query: "iphone 15 hülle", ykTag: "a11y-test", network: "198.51.100.70", views: 1, clicks: 1})
	br := newBrowser(t)
	if s := dashSignIn(t, br, b.URL, demoPartnerReport); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	v := eval[dashView](t, br, jsCall(dashViewScript))
	if v.Kpis[1] != "1" {
		t.Fatalf("%s clicks in total, want the one click made", v.Kpis[1])
	}
	today := eval[string](t, br, `[...document.querySelectorAll("#chart g.day title")].pop().textContent`)
	if !strings.Contains(today, ": 1 click, ") || strings.Contains(today, "1 clicks") {
		t.Errorf("today's figures %q, want them to say 1 click", today)
	}

	var tree accessibility.GetFullAXTreeResult
	br.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		tree, err = cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		return err
	}))
	var name string
	var heard []string // what of the tree says today's figures
	for _, n := range tree.Nodes {
		if n.Ignored || axText(n.Role) == "InlineTextBox" {
			continue // not read, or read as its text's node
		}
		if axText(n.Role) == "image" && strings.HasPrefix(axText(n.Name), "Clicks, billable clicks and spend per day") {
			name = axText(n.Name)
		}
		for _, s := range []string{axText(n.Name), axText(n.Description)} {
			if strings.Contains(s, today) {
				heard = append(heard, axText(n.Role)+": "+s)
			}
		}
	}
	if name == "" {
		t.Fatal("no image in the accessibility tree is named for the chart")
	}
	for _, want := range []string{v.Range, "1 click,", v.Kpis[2] + " billable", counted(v.Kpis[0], "impression"), v.Kpis[4] + " spend"} {
		if !strings.Contains(name, want) {
			t.Errorf("the chart's name %q lacks %q", name, want)
		}
	}
	if len(heard) != 1 || !strings.Contains(heard[0], "By day:") {
		t.Errorf("today's figures %q are in the accessibility tree %d times, want once, in the summary: %q", today, len(heard), heard)
	}
}

// counted is n, as the dashboard shows it, and the English noun one in
// its form for n.
func counted(n, one string) string {
	if n == "1" {
		return n + " " + one
	}
	return n + " " + one + "s"
}
