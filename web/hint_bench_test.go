package web

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
)

// compileHint is the first line of widget.js as served: V8's compile hint.
const compileHint = "//# allFunctionsCalledOnLoad\n"

// hintProxy is a server in front of srv that serves widget.js as srv
// does, or without its compile hint (strip), and everything else from
// srv: the two ways a first view can go, through the same kind of hop.
func hintProxy(tb testing.TB, srv *backend, strip bool) *httptest.Server {
	tb.Helper()
	target, err := url.Parse(srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	widget := get(tb, srv.URL+"/widget.js")
	if !bytes.HasPrefix(widget, []byte(compileHint)) {
		tb.Fatalf("widget.js as served starts %q, want the compile hint", widget[:min(len(widget), 60)])
	}
	if strip {
		widget = bytes.TrimPrefix(widget, []byte(compileHint))
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/widget.js" {
			rp.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=300")
		io.Copy(w, bytes.NewReader(widget))
	}))
	tb.Cleanup(p.Close)
	return p
}

// BenchmarkWidgetCompileHint times cold first views of the demo article
// (the server has not analysed it) with widget.js as served, whose first
// line asks V8 to compile its functions as it loads, and without that
// line, in turn, each through a proxy of the server, with the empty
// reactor's floor (goFloor) between rounds: the first ad's ratio to the
// floors' median either way, in the same run.
func BenchmarkWidgetCompileHint(b *testing.B) {
	srv := startBackend(b)
	with, without := hintProxy(b, srv, false), hintProxy(b, srv, true)
	const rounds = 9
	var hint, noHint, floor []float64
	n := 0
	view := func(base string) float64 {
		n++
		br := newBrowser(b)
		defer br.close()
		br.lean(b)
		if r := br.view(b, base+"/demo/article.html?hintview="+strconv.Itoa(n)); r.Source != "local" || r.Links == 0 {
			b.Fatalf("first view through %s: %+v", base, r)
		}
		return eval[placed](b, br, placedScript).FirstAdMs
	}
	for range b.N {
		for range rounds {
			hint = append(hint, view(with.URL))
			noHint = append(noHint, view(without.URL))
			_, _, f, _ := goFloor(b, 1)
			floor = append(floor, f)
		}
	}
	fl := median(floor)
	b.ReportMetric(median(hint), "ms-first-ad-cold")
	b.ReportMetric(median(noHint), "ms-first-ad-cold-no-hint")
	b.ReportMetric(fl, "ms-empty-go-total")
	b.ReportMetric(median(hint)/fl, "first-ad-cold-of-floor")
	b.ReportMetric(median(noHint)/fl, "first-ad-cold-no-hint-of-floor")
	fmt.Printf("cold first view of the demo article, widget.js with its compile hint and without, in turn (median of %d each):\n", len(hint))
	fmt.Printf("  with the hint %.0f ms, %.2fx the empty reactor's %.0f ms; without %.0f ms, %.2fx; all with %v, without %v, floors %v\n",
		median(hint), median(hint)/fl, fl, median(noHint), median(noHint)/fl, rounded(hint), rounded(noHint), rounded(floor))
}
