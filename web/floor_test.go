package web

import (
	_ "embed"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/internal/testenv"
	"github.com/adlink/adlink/internal/wasmhost"
	"github.com/adlink/adlink/wasm/module"
	"github.com/chromedp/chromedp"
)

// goStart, called with a module's URL and, optionally, a shard's and a
// match_page request, fetches the module and shard at once and compiles
// the module (compileStreaming, as the widget does), starts it with a WASI
// shim that answers what a Go runtime asks while it starts (the
// environment with GOGC, the clock, random bytes; zero for the rest),
// loads the shard (load_shard), if any, and matches the request, if any,
// with nothing else to do. It resolves to the milliseconds of the fetch
// and compile, the start and their total, the module's bytes over the
// wire, and the milliseconds in all, the shard loaded and then the first
// match made.
//
//go:embed testdata/bench/go_start.js
var goStart string

// floorPage is the page goStart runs in.
const floorPage = `<!doctype html><meta charset="utf-8"><title>Go start-up</title>`

// goFloor is the floor under a first view's time to first ad: how long an
// empty Go reactor (module.Empty, built as matcher.wasm is and served as
// the server serves it, zstd when the CLI made one) takes to arrive,
// compile and start in a fresh browser, one per round, with no request,
// shard or matching around it. It returns the medians of the fetch and
// compile, the start (instantiate and _initialize) and their total, each a
// median of its own, and the KB the browser received for the module.
func goFloor(tb testing.TB, rounds int) (compile, start, total, kb float64) {
	tb.Helper()
	st := newFloorStarter(tb)
	defer st.close()
	t := st.times(tb, rounds)
	return t.compile, t.start, t.total, t.kb
}

// emptyReactor is module.Empty, built once for the package's floors: the
// build's bytes are the same each time, and each build takes seconds.
// Each caller gets a copy of its own.
var emptyReactor = func() func() ([]byte, error) {
	built := sync.OnceValues(module.Empty)
	return func() ([]byte, error) {
		b, err := built()
		return slices.Clone(b), err
	}
}()

// newFloorStarter is a starter of goFloor's empty reactor, for rounds
// timed one at a time beside other views.
func newFloorStarter(tb testing.TB) *starter {
	tb.Helper()
	testenv.NeedChromium(tb)
	empty, err := emptyReactor()
	if err != nil {
		tb.Fatal(err)
	}
	z, err := testenv.Zstd(empty)
	if err != nil {
		tb.Fatal(err)
	}
	return newStarter(tb, empty, z, nil, "")
}

// startedFloor is goFloor's time in all for the same empty reactor built
// started, as matcher.wasm is (module.Preinit): the floor with Go's
// start-up done at build time, beside which the matcher's own start shows
// what it gained from that, and the floor a first view would have were
// every Go module built so.
func startedFloor(tb testing.TB, rounds int) float64 {
	tb.Helper()
	testenv.NeedChromium(tb)
	empty, err := emptyReactor()
	if err != nil {
		tb.Fatal(err)
	}
	if empty, err = module.Preinit(empty, map[string]string{"GOGC": wasmhost.GOGC}); err != nil {
		tb.Fatal(err)
	}
	z, err := testenv.Zstd(empty)
	if err != nil {
		tb.Fatal(err)
	}
	return moduleStart(tb, rounds, empty, z, nil, "").total
}

// startTimes are moduleStart's medians, in ms, and the KB the browser
// received for the module.
type startTimes struct {
	compile, start, total, kb float64
	loaded, matched           float64
}

// moduleStart is what goFloor measures for any module, wasm, served with
// z as its zstd encoding when not nil: matcher.wasm itself gives what its
// start alone costs, with nothing of a view around it. With a shard (its
// bytes as the server serves them), fetched at the same time and loaded
// once the module has started, loaded is the median time of it all: the
// floor of a first view that matches in the page, before any match. With a
// match_page request too (req), matched is the time to the first match's
// answer: that floor with the match, all but placing the ads, on a page
// with nothing else to do.
func moduleStart(tb testing.TB, rounds int, wasm, z, shard []byte, req string) startTimes {
	tb.Helper()
	st := newStarter(tb, wasm, z, shard, req)
	defer st.close()
	return st.times(tb, rounds)
}

// starter serves a module (and a shard) to goStart's page, one fresh
// browser a round.
type starter struct {
	srv      *httptest.Server
	shardURL string
	req      string
}

// startRound is one round's times in ms: the fetch and compile, the start,
// their total, the shard loaded and the first match (each from the
// script's start), and the KB the browser received for the module.
type startRound struct {
	compile, start, total, loaded, matched, kb float64
}

func newStarter(tb testing.TB, wasm, z, shard []byte, req string) *starter {
	tb.Helper()
	testenv.NeedChromium(tb)
	blob, err := shards.NewBlob(wasm, "application/wasm")
	if err != nil {
		tb.Fatal(err)
	}
	if z != nil {
		if _, err := blob.UseZstd(z); err != nil {
			tb.Fatal(err)
		}
	}
	st := &starter{req: req}
	var sh *shards.Blob
	if shard != nil {
		if sh, err = shards.NewBlob(shard, "application/octet-stream"); err != nil {
			tb.Fatal(err)
		}
		st.shardURL = "/shard"
	}
	st.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/module.wasm":
			blob.Serve(w, r, "public, max-age=31536000, immutable")
		case r.URL.Path == "/shard" && sh != nil:
			sh.Serve(w, r, "public, max-age=31536000, immutable")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(floorPage))
		}
	}))
	return st
}

func (st *starter) close() { st.srv.Close() }

// round times one start in a fresh browser.
func (st *starter) round(tb testing.TB) startRound {
	tb.Helper()
	br := newBrowser(tb)
	defer br.close()
	br.lean(tb)
	br.do(tb, chromedp.Navigate(st.srv.URL+"/"))
	v := evalCall[[6]float64](tb, br, goStart, "/module.wasm", st.shardURL, st.req)
	br.noConsoleErrors(tb)
	return startRound{compile: v[0], start: v[1], total: v[2], kb: v[3] / 1e3, loaded: v[4], matched: v[5]}
}

// times is the medians of rounds rounds.
func (st *starter) times(tb testing.TB, rounds int) startTimes {
	tb.Helper()
	var rs []startRound
	for range rounds {
		rs = append(rs, st.round(tb))
	}
	return mediansOf(rs)
}

// mediansOf is the median of each of the rounds' times.
func mediansOf(rs []startRound) startTimes {
	var c, s, t, l, m []float64
	kb := 0.0
	for _, r := range rs {
		c, s, t, l, m, kb = append(c, r.compile), append(s, r.start), append(t, r.total), append(l, r.loaded), append(m, r.matched), r.kb
	}
	return startTimes{compile: median(c), start: median(s), total: median(t), kb: kb, loaded: median(l), matched: median(m)}
}

// TestGoFloorPageStarts: the floor's page really starts a Go runtime, so
// the baseline it measures is one.
func TestGoFloorPageStarts(t *testing.T) {
	compile, start, total, kb := goFloor(t, 1)
	// Every step took time, and the browser received about what the
	// server sends for an empty reactor, zstd or gzip.
	if !(compile > 0 && start > 0) || kb < 300 || kb > 700 {
		t.Fatalf("compile %.1f ms, start %.1f ms, total %.1f ms, %.1f KB", compile, start, total, kb)
	}
}

// TestStartedFloorPageStarts: the empty reactor built started loads and
// answers in the floor's page too.
func TestStartedFloorPageStarts(t *testing.T) {
	if total := startedFloor(t, 1); !(total > 0) {
		t.Fatalf("the started empty reactor: %.1f ms in all", total)
	}
}

// TestMatcherStartMatches: with matcher.wasm, the demo shard and the demo
// article's request, the floor's page loads the shard and makes a match
// whose answer holds ads (goStart throws otherwise, and moduleStart
// fails), having received matcher.wasm as the server sends it.
func TestMatcherStartMatches(t *testing.T) {
	srv := startBackend(t)
	st := moduleStart(t, 1, matcherWasm, matcherZstd, demoShard(t, srv), articleRequest(t, srv))
	if want := float64(len(matcherZstd)) / 1e3; matcherZstd != nil && st.kb != want {
		t.Errorf("the browser received %.1f KB of matcher.wasm, want its zstd encoding's %.1f KB", st.kb, want)
	}
	if !(st.matched > 0) {
		t.Errorf("times %+v: no match timed", st)
	}
}
