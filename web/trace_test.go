package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// traceEvent is one event of a Chrome trace (the Trace Event Format):
// ts and dur on the clock, tdur the thread's CPU time, in µs.
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	TDur float64         `json:"tdur"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	Args json.RawMessage `json:"args"`
}

// traceCategories are what a traced view records: the widget's User
// Timing marks, V8's WebAssembly compilation (lazy, on the page's thread,
// and the optimising tier, in the background), its JavaScript
// compilation, and the page thread's tasks and forced layouts.
var traceCategories = []string{"__metadata", "blink.user_timing", "v8.wasm", "disabled-by-default-v8.compile", "devtools.timeline",
	"disabled-by-default-devtools.timeline", "blink"}

// traceSteps are the steps a traced view splits the time after the
// module is compiled into: each from the widget's mark before it.
var traceSteps = []struct{ from, to, label string }{
	{"compiled", "initialized", "instantiate and _initialize"},
	{"initialized", "loaded", "the shard in hand, load_shard"},
	{"loaded", "matched", "the first match_page"},
	{"matched", "first_ad", "placing the ads"},
}

// stepCost is what one step of a traced view cost: its time on the clock,
// the page thread's CPU time in its tasks (each task's share that falls in
// the step), of which compiling WebAssembly functions on their first call
// (lazy: count and ms), compiling JavaScript, and layouts the widget's
// code forced (count and ms), and the CPU time of V8's background threads
// compiling functions with its optimising tier (TurboFan: count and ms),
// which competes for the same cores. What is left of the page thread's
// CPU time is running: the module's code, the widget's and the browser's.
type stepCost struct {
	ms             float64
	cpuMs          float64
	lazy, tierUp   int
	lazyMs, tierMs float64
	jsMs           float64
	layouts        int
	layoutMs       float64
}

// tracedView views page in a fresh browser with Chrome's tracing on and
// returns the cost of each step after the module is compiled (traceSteps)
// and the milliseconds from the module compiled to the first ad.
func tracedView(tb testing.TB, page string, script string) ([]stepCost, float64) {
	tb.Helper()
	br := newBrowser(tb)
	defer br.close()
	br.lean(tb)
	if script != "" {
		br.onEveryPage(tb, script)
	}
	var mu sync.Mutex
	var evs []traceEvent
	done := make(chan struct{})
	chromedp.Listen(br.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			defer mu.Unlock()
			for _, v := range ev.Value {
				var e traceEvent
				if b, err := json.Marshal(v); err == nil && json.Unmarshal(b, &e) == nil {
					evs = append(evs, e)
				}
			}
		case *tracing.EventTracingComplete:
			close(done)
		}
	})
	call := func(f func(ctx context.Context, tg *chromedp.Target) error) { br.do(tb, chromedp.Func(f)) }
	call(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, tracing.Start, tracing.StartParams{TransferMode: tracing.StartTransferModeReportEvents,
			TraceConfig: &tracing.TraceConfig{IncludedCategories: traceCategories}})
		return err
	})
	if r := br.view(tb, page); r.Source != "local" || r.Links == 0 {
		tb.Fatalf("traced first view: %+v", r)
	}
	call(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, tracing.End, cdp.Empty{})
		return err
	})
	<-done
	mu.Lock()
	defer mu.Unlock()
	return traceCosts(tb, evs)
}

// traceCosts splits a traced view's events into traceSteps, by the
// widget's marks on the page's thread.
func traceCosts(tb testing.TB, evs []traceEvent) ([]stepCost, float64) {
	tb.Helper()
	// The page's thread is the renderer's main thread of the process
	// whose marks are the widget's.
	marks := map[string]float64{}
	pid := -1
	for _, e := range evs {
		if step, ok := strings.CutPrefix(e.Name, "adlink:"); ok && e.Cat == "blink.user_timing" {
			if _, seen := marks[step]; !seen {
				marks[step] = e.Ts
			}
			pid = e.Pid
		}
	}
	tid := -1
	for _, e := range evs {
		if e.Pid == pid && e.Ph == "M" && e.Name == "thread_name" && strings.Contains(string(e.Args), "CrRendererMain") {
			tid = e.Tid
		}
	}
	for _, s := range traceSteps {
		if _, ok := marks[s.from]; !ok || tid < 0 {
			tb.Fatalf("traced view: no mark %q on the page's thread (marks %v)", s.from, marks)
		}
	}
	if _, ok := marks["first_ad"]; !ok {
		tb.Fatalf("traced view: no first ad mark")
	}
	costs := make([]stepCost, len(traceSteps))
	for i, s := range traceSteps {
		from, to := marks[s.from], marks[s.to]
		c := &costs[i]
		c.ms = (to - from) / 1e3
		// A task's CPU time, as much of it as its time on the clock in
		// the step: tasks start before a mark and end after one.
		for _, e := range evs {
			if e.Ph != "X" || e.Pid != pid || e.Tid != tid || e.Name != "RunTask" || e.Dur <= 0 {
				continue
			}
			if in := min(e.Ts+e.Dur, to) - max(e.Ts, from); in > 0 {
				c.cpuMs += e.TDur / 1e3 * in / e.Dur
			}
		}
		for _, e := range evs {
			if e.Ph != "X" || e.Pid != pid || e.Ts < from || e.Ts >= to {
				continue
			}
			switch {
			case e.Tid == tid && e.Name == "Document::UpdateStyleAndLayout":
				c.layouts++
				c.layoutMs += e.TDur / 1e3
			case e.Tid == tid && e.Name == "wasm.CompileLazy":
				c.lazy++
				c.lazyMs += e.TDur / 1e3
			case e.Tid == tid && e.Name == "V8.CompileCode":
				c.jsMs += e.TDur / 1e3
			case e.Tid != tid && e.Name == "wasm.TopTierCompilation":
				c.tierUp++
				c.tierMs += e.TDur / 1e3
			}
		}
	}
	return costs, (marks["first_ad"] - marks["compiled"]) / 1e3
}

// printTraceCosts prints the medians of each step's costs over views.
func printTraceCosts(views [][]stepCost, spans []float64) {
	fmt.Printf("  after the module is compiled, traced views (Chrome tracing on; median of %d): %.0f ms to the first ad\n", len(views), median(spans))
	fmt.Printf("    %-32s %8s %13s %26s %10s %22s %13s %28s\n", "", "clock ms", "page CPU ms", "lazy compile: fns, CPU ms", "JS CPU ms",
		"layouts: n, CPU ms", "running ms", "optimising tier: fns, CPU ms")
	for i, s := range traceSteps {
		var ms, cpu, lazy, lazyMs, js, lay, layMs, run, tier, tierMs []float64
		for _, v := range views {
			c := v[i]
			ms, cpu, lazy, lazyMs, js = append(ms, c.ms), append(cpu, c.cpuMs), append(lazy, float64(c.lazy)), append(lazyMs, c.lazyMs), append(js, c.jsMs)
			lay, layMs = append(lay, float64(c.layouts)), append(layMs, c.layoutMs)
			run = append(run, max(0, c.cpuMs-c.lazyMs-c.jsMs-c.layoutMs))
			tier, tierMs = append(tier, float64(c.tierUp)), append(tierMs, c.tierMs)
		}
		fmt.Printf("    %-32s %8.0f %13.1f %16.0f %9.1f %10.1f %12.0f %9.1f %13.1f %18.0f %9.1f\n", s.label, median(ms), median(cpu), median(lazy), median(lazyMs),
			median(js), median(lay), median(layMs), median(run), median(tier), median(tierMs))
	}
}

// traceTotals are a traced view's sums over its steps: the page thread's
// CPU time compiling WebAssembly lazily, and the background threads' CPU
// time in the optimising tier.
func traceTotals(v []stepCost) (lazyMs, tierMs float64) {
	for _, c := range v {
		lazyMs += c.lazyMs
		tierMs += c.tierMs
	}
	return lazyMs, tierMs
}

// TestTracedViewSteps: a first view's marks are in Chrome's trace, and
// the traced view finds the module's functions compiled on their first
// call in each step that runs the module, the first match's task on the
// page's thread, the layouts placing the ads forces, and no function
// compiled while placing them, neither the module's nor the widget's.
func TestTracedViewSteps(t *testing.T) {
	srv := startBackend(t)
	v, span := tracedView(t, srv.firstView("article.html"), "")
	for i, c := range v[:3] {
		if c.lazy == 0 || c.lazyMs <= 0 || c.ms < 0 {
			t.Errorf("%s: %+v, want functions compiled on their first call", traceSteps[i].label, c)
		}
	}
	if c := v[2]; c.cpuMs < c.lazyMs/2 {
		t.Errorf("the first match_page: %.1f ms of the page thread's CPU time, %.1f ms of it compiling", c.cpuMs, c.lazyMs)
	}
	if c := v[3]; c.lazy != 0 {
		t.Errorf("placing the ads compiled %d of the module's functions", c.lazy)
	}
	// Placing links reads where the text is, after each link placed.
	if c := v[3]; c.layouts == 0 {
		t.Errorf("placing the ads forced no layout: %+v", c)
	}
	// V8 compiled the widget's functions as it streamed the script in
	// (its first line's compile hint), not when placing the ads first
	// called them.
	if c := v[3]; c.jsMs != 0 {
		t.Errorf("placing the ads compiled JavaScript for %.1f ms", c.jsMs)
	}
	if span <= 0 {
		t.Errorf("%.1f ms from the module compiled to the first ad", span)
	}
}
