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
// range and the totals the figures above it show, and whose description
// carries each day's figures, today's among them.
func TestDashboardChartAccessible(t *testing.T) {
	b := startBackend(t)
	makeTraffic(t, b.URL, visit{query: "iphone 15 hülle", ykTag: "a11y-test", network: "198.51.100.70", views: 1, clicks: 2})
	br := newBrowser(t)
	settled := jsSource(dashSettled)
	br.do(t, chromedp.Navigate(b.URL+"/dashboard"))
	eval[string](t, br, jsCall(dashSettled))
	br.do(t, chromedp.SendKeys("#token", demoPartnerReport))
	if s := evalCall[string](t, br, dashPress, "go", settled); s != "ready" {
		t.Fatalf("state %q, want ready", s)
	}
	v := eval[dashView](t, br, jsCall(dashViewScript))
	today := eval[string](t, br, `[...document.querySelectorAll("#chart g.day title")].pop().textContent`)

	var tree accessibility.GetFullAXTreeResult
	br.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		tree, err = cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		return err
	}))
	var name, desc string
	for _, n := range tree.Nodes {
		if axText(n.Role) == "image" && strings.HasPrefix(axText(n.Name), "Clicks, billable clicks and spend per day") {
			name, desc = axText(n.Name), axText(n.Description)
		}
	}
	if name == "" {
		t.Fatal("no image in the accessibility tree is named for the chart")
	}
	for _, want := range []string{v.Range, v.Kpis[1] + " clicks", v.Kpis[2] + " billable", v.Kpis[0] + " impressions", v.Kpis[4] + " spend"} {
		if !strings.Contains(name, want) {
			t.Errorf("the chart's name %q lacks %q", name, want)
		}
	}
	if !strings.Contains(desc, today) || !strings.Contains(desc, "By day:") {
		t.Errorf("the chart's description %q lacks today's figures %q", desc, today)
	}
}
