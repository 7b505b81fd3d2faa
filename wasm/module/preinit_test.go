package module

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/internal/testcatalog"
	"github.com/adlink/adlink/match"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

var (
	linkOnce  sync.Once
	linked    []byte
	linkError error

	gcOnce  sync.Once
	gcBuilt []byte
	gcError error

	stateOnce  sync.Once
	stateBuilt []byte
	stateError error
)

// stateModule is stateProgram built once for the package's tests, which
// start from it: a copy each, so that none sees another's changes.
func stateModule(t testing.TB) []byte {
	t.Helper()
	stateOnce.Do(func() { stateBuilt, stateError = Program(stateProgram) })
	if stateError != nil {
		t.Fatal(stateError)
	}
	return slices.Clone(stateBuilt)
}

// gcMatcher is the matcher as Build makes it, but started with the
// collector's trace on (GODEBUG=gctrace=1) and a heap goal of a quarter
// more than the live heap (GOGC=25, gcGOGC), so that the few pages the
// tests match collect; built once for the package's tests: Preinit is
// slow under the race detector.
func gcMatcher(t testing.TB) []byte {
	t.Helper()
	gcOnce.Do(func() {
		gcBuilt, gcError = build(Path, map[string]string{"GOGC": gcGOGC, "GODEBUG": "gctrace=1," + env["GODEBUG"]})
	})
	if gcError != nil {
		t.Fatal(gcError)
	}
	return gcBuilt
}

// gcGOGC is the tests' GOGC, for the matchers they start and build.
const gcGOGC = "25"

// matcherLink is the matcher as Go's linker writes it (link), linked once
// for the package's tests.
func matcherLink(t testing.TB) []byte {
	t.Helper()
	linkOnce.Do(func() { linked, linkError = link(Path) })
	if linkError != nil {
		t.Fatal(linkError)
	}
	return linked
}

// wasmHost is a wazero runtime with WASI for one test, whose modules write
// their standard error to stderr.
type wasmHost struct {
	ctx    context.Context
	rt     wazero.Runtime
	stderr bytes.Buffer
}

func newHost(t testing.TB) *wasmHost {
	t.Helper()
	h := &wasmHost{ctx: context.Background()}
	// The interpreter: the compiler takes 20 s over the matcher under the
	// race detector.
	h.rt = wazero.NewRuntimeWithConfig(h.ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { h.rt.Close(h.ctx) })
	wasi_snapshot_preview1.MustInstantiate(h.ctx, h.rt)
	return h
}

// start instantiates mod, running none of its functions.
func (h *wasmHost) start(t testing.TB, mod []byte) api.Module {
	t.Helper()
	m, err := h.rt.InstantiateWithConfig(h.ctx, mod, wazero.NewModuleConfig().WithName("").WithStartFunctions().WithStderr(&h.stderr))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startOnAPagesClock instantiates mod as a page does (widget.js): its
// monotonic clock nanoseconds since 1970 (performance.timeOrigin +
// performance.now()), the time of day and random bytes real, and, for
// the tests, the collector's trace on and GOGC=gcGOGC.
func (h *wasmHost) startOnAPagesClock(t testing.TB, mod []byte) api.Module {
	t.Helper()
	origin := time.Now()
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithStderr(&h.stderr).
		WithEnv("GOGC", gcGOGC).WithEnv("GODEBUG", "gctrace=1").
		WithNanotime(func() int64 { return origin.UnixNano() + int64(time.Since(origin)) }, 1000).
		WithSysWalltime().WithRandSource(rand.Reader)
	m, err := h.rt.InstantiateWithConfig(h.ctx, mod, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func call(t testing.TB, ctx context.Context, m api.Module, name string, args ...uint64) (uint64, error) {
	t.Helper()
	f := m.ExportedFunction(name)
	if f == nil {
		t.Fatalf("no export %s", name)
	}
	r, err := f.Call(ctx, args...)
	if err != nil || len(r) == 0 {
		return 0, err
	}
	return r[0], nil
}

// stateProgram's init builds a map and counts its runs; state reports both.
const stateProgram = `package main

import "strconv"

var built = map[string]int32{}
var inits int32

func init() {
	inits++
	for i := range 100 {
		built[strconv.Itoa(i)] = int32(i)
	}
}

func main() {}

//go:wasmexport state
func state() int32 { return inits*1000 + int32(len(built)) + built["42"] }

// churn allocates n blocks of 64 KB, keeping every tenth, so the
// collector runs, and returns the sum of what it kept.
//
//go:wasmexport churn
func churn(n int32) int32 {
	var kept [][]byte
	for i := range n {
		b := make([]byte, 64<<10)
		b[i%100] = byte(i)
		if i%10 == 0 {
			kept = append(kept, b)
		}
	}
	s := int32(0)
	for i, b := range kept {
		s += int32(b[(i*10)%100])
	}
	return s
}
`

// TestPreinitKeepsTheState: a reactor initialized at build time answers
// at once, with the state its init functions made, which ran once, and
// goes on allocating and collecting, on a page's clock too; a plain
// reactor started without _initialize fails, and a host that calls
// _initialize anyway changes nothing.
func TestPreinitKeepsTheState(t *testing.T) {
	plain := stateModule(t)
	done, err := Preinit(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	if _, err := call(t, h.ctx, h.start(t, plain), "state"); err == nil {
		t.Fatal("the plain reactor answered without _initialize")
	}
	// Then on a page's clock, far past the 1 ns Preinit's runtime saw,
	// which the collector's pacer and the scavenger read.
	for _, c := range []struct{ initialize, pageClock bool }{{false, false}, {true, false}, {false, true}} {
		initialize, m := c.initialize, h.start(t, done)
		if c.pageClock {
			m = h.startOnAPagesClock(t, done)
		}
		if initialize {
			if _, err := call(t, h.ctx, m, Initialize); err != nil {
				t.Fatalf("_initialize of the initialized module: %v", err)
			}
		}
		if got, err := call(t, h.ctx, m, "state"); err != nil || int32(got) != 1142 {
			t.Fatalf("_initialize called %v: state %d, %v; want 1142 (init ran once, 100 entries)", initialize, int32(got), err)
		}
		// 64 MB allocated in 64 KB blocks: the collector must run.
		want := int32(0)
		for i := 0; i < 1000; i += 10 {
			want += int32(byte(i))
		}
		if got, err := call(t, h.ctx, m, "churn", 1000); err != nil || int32(got) != want {
			t.Fatalf("churn: %d, %v; want %d", int32(got), err, want)
		}
	}
	if a, b := dataOf(t, plain), dataOf(t, done); len(b) == 0 || len(a) == 0 {
		t.Fatalf("data segments: %d before, %d after", len(a), len(b))
	}
}

// TestPreinitIsDeterministic: two initializations of one module with an
// environment of several variables give the same bytes (Go's map order
// once put them in the memory in either order).
func TestPreinitIsDeterministic(t *testing.T) {
	plain := stateModule(t)
	env := map[string]string{"GOGC": "200", "GODEBUG": "gcshrinkstackoff=1", "A": "1", "B": "2", "C": "3"}
	first, err := Preinit(plain, env)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		again, err := Preinit(plain, env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, first) {
			t.Fatal("two initializations of one module differ")
		}
	}
}

// TestPreinitRefuses: what is not a Go reactor whose start-up completes
// is refused, naming why.
func TestPreinitRefuses(t *testing.T) {
	plain := stateModule(t)
	panics, err := Program("package main\n\nfunc init() { panic(\"no\") }\n\nfunc main() {}\n\n//go:wasmexport nop\nfunc nop() {}\n")
	if err != nil {
		t.Fatal(err)
	}
	secs, at, es := exportsOf(t, plain)
	var kept []export
	for _, e := range es {
		if e.name != Initialize {
			kept = append(kept, e)
		}
	}
	noInit := map[int][]byte{at: appendExports(nil, kept)}
	importsGlobal := testModule(
		testSection{id: secImport, body: append(append(appendU32(nil, 1), "\x01m\x01g"...), exportGlobal, 0x7f, 0)},
		memorySection, testSection{id: secGlobal, body: []byte{0}}, testSection{id: secExport, body: []byte{0}}, dataSection())
	for _, c := range []struct {
		name string
		mod  []byte
		want string
	}{
		{"no _initialize", replace(secs, noInit), "no _initialize"},
		{"a panicking init", panics, "running _initialize"},
		{"an imported global", importsGlobal, "want a function"},
		{"no memory", testModule(dataSection()), "no section 5"},
		{"not a module", []byte("\x00asm\x02"), "not a WebAssembly"},
	} {
		if _, err := Preinit(c.mod, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestBuildInitializesTheMatcher: the matcher Build makes is initialized
// (it answers without _initialize, which does nothing), and every
// start-up function named in startupOnly is in Go's link and traps.
// (TestRunWritesWhatTheTestsBuild, in build/, checks two builds agree.)
func TestBuildInitializesTheMatcher(t *testing.T) {
	named := matcherLink(t)
	names, err := functionNames(named)
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]uint32{}
	for i, n := range names {
		index[n] = i
	}
	for _, n := range startupOnly {
		if _, ok := index[n]; !ok {
			t.Errorf("%s: not in the matcher's link (a new Go?): the module keeps its code", n)
		}
	}
	built := gcMatcher(t)
	var initFn uint32
	_, _, es := exportsOf(t, built)
	for _, e := range es {
		if e.name == Initialize {
			initFn = e.index
		}
	}
	bodies := codeBodies(t, built)
	for _, n := range startupOnly {
		if i, ok := index[n]; ok && !bytes.Equal(bodies[i], trapBody) {
			t.Errorf("%s: body %x, want a trap", n, bodies[i])
		}
	}
	if !bytes.Equal(bodies[initFn], nopBody) {
		t.Errorf("_initialize: body %x, want nothing done", bodies[initFn])
	}
	h := newHost(t)
	m := h.start(t, built)
	if p, err := call(t, h.ctx, m, "alloc", 16); err != nil || p == 0 {
		t.Fatalf("alloc without _initialize: %d, %v", p, err)
	}
}

// codeBodies returns the module's function bodies by function index.
func codeBodies(t testing.TB, mod []byte) map[uint32][]byte {
	t.Helper()
	out := map[uint32][]byte{}
	secs, _ := readSections(mod)
	imports := uint32(0)
	for _, s := range secs {
		switch s.id {
		case secImport:
			r := reader{b: s.body}
			imports = r.u32("")
		case secCode:
			r := reader{b: s.body}
			n := r.u32("")
			for k := uint32(0); k < n; k++ {
				out[imports+k] = r.bytes(r.u32(""), "")
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	return out
}

// TestInitializedMatcherCollectsGarbage: the matcher initialized with the
// collector's trace on loads a 10,000-ad shard and matches pages, and its
// collector runs (the trace says so) without reaching any start-up
// function stubStartup made trap. The goroutine that runs the exports
// starts with a stack of 32 KB (wasm/warm.go), which neither the matches
// grow nor the collections shrink.
func TestInitializedMatcherCollectsGarbage(t *testing.T) {
	h := newHost(t)
	m := h.start(t, withGlobals(t, gcMatcher(t)))
	lo, hi := stackOf(t, m)
	if hi-lo < 32<<10 {
		t.Errorf("the exports' goroutine starts with a stack of %d bytes, want 32 KB", hi-lo)
	}
	pageAnswers(t, h, m, nil)
	if l, h := stackOf(t, m); l != lo || h != hi {
		t.Errorf("the stack moved from [%#x, %#x) to [%#x, %#x)", lo, hi, l, h)
	}
	if !strings.Contains(h.stderr.String(), "gc 1 @") {
		t.Fatalf("the collector never ran; standard error:\n%s", h.stderr.String())
	}
	t.Logf("%d collections", strings.Count(h.stderr.String(), "\ngc ")+1)
}

// TestInitializedMatcherOnAPagesClock: the initialized matcher, whose
// runtime noted 1 ns as the time of everything it did when built, runs
// under a page's clock, whose monotonic reading is nanoseconds since 1970
// (widget.js: performance.timeOrigin + performance.now()), and its random
// bytes: its collector runs and it answers as the matcher a page starts
// itself (plain, _initialize run under the same clock) does.
func TestInitializedMatcherOnAPagesClock(t *testing.T) {
	linked, err := withoutNames(matcherLink(t))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := mergeData(linked)
	if err != nil {
		t.Fatal(err)
	}
	hp, hi := newHost(t), newHost(t)
	started := hp.startOnAPagesClock(t, plain)
	if _, err := call(t, hp.ctx, started, Initialize); err != nil {
		t.Fatal(err)
	}
	want := pageAnswers(t, hp, started, nil)
	got := pageAnswers(t, hi, hi.startOnAPagesClock(t, gcMatcher(t)), nil)
	if !strings.Contains(hi.stderr.String(), "gc 1 @") {
		t.Fatalf("the collector never ran; standard error:\n%s", hi.stderr.String())
	}
	if !slices.Equal(got, want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("page %d: initialized %s, started in the page %s", i, got[i], want[i])
			}
		}
	}
}

var (
	pagesOnce  sync.Once
	pagesShard []byte
	pages      [][]byte
	pagesError error
)

// pageAnswers loads a 10,000-ad shard into the matcher m and returns its
// answers to pages of it; loaded, when not nil, is called between. The
// shard and pages are made once for the package's tests, and the pages
// are few: each takes the interpreter about a second under the race
// detector.
func pageAnswers(t testing.TB, h *wasmHost, m api.Module, loaded func()) []string {
	t.Helper()
	pagesOnce.Do(func() {
		ads := testcatalog.Generate(10000, 1)
		ix, err := match.Build(ads)
		if err != nil {
			pagesError = err
			return
		}
		pagesShard, _ = ix.EncodePage(0)
		for _, r := range testcatalog.Requests(ads, 8, 9, true) {
			pages = append(pages, []byte(r.Guest("http://localhost:8080")))
		}
	})
	if pagesError != nil {
		t.Fatal(pagesError)
	}
	shard := pagesShard
	put := func(b []byte) uint64 {
		t.Helper()
		p, err := call(t, h.ctx, m, "alloc", uint64(len(b)))
		if err != nil || !m.Memory().Write(uint32(p), b) {
			t.Fatalf("alloc %d: %v", len(b), err)
		}
		return p
	}
	if st, err := call(t, h.ctx, m, "load_shard", put(shard), uint64(len(shard))); err != nil || st != 0 {
		t.Fatalf("load_shard: %d, %v", st, err)
	}
	if loaded != nil {
		loaded()
	}
	var answers []string
	for _, req := range pages {
		res, err := call(t, h.ctx, m, "match_page", put(req), uint64(len(req)))
		if err != nil || res == 0 {
			t.Fatalf("match_page: %d, %v", res, err)
		}
		b, ok := m.Memory().Read(uint32(res>>32), uint32(res))
		if !ok {
			t.Fatalf("answer %d bytes at %d: out of memory", uint32(res), res>>32)
		}
		answers = append(answers, string(b))
		if _, err := call(t, h.ctx, m, "free", res>>32); err != nil {
			t.Fatal(err)
		}
	}
	return answers
}

// TestPagesFillNoMap: matching pages inserts nothing into a map. Every
// page's matcher hashes with the same key and seeds (Preinit), so a map
// that took a page's words would let a page's text (a reader's comment
// on it) be written to collide in it; the matcher runs with its names
// (Go's link), and a call of any of the runtime's mapassign functions
// while it matches pages fails the test.
func TestPagesFillNoMap(t *testing.T) {
	var assigns atomic.Int64
	var matching atomic.Bool
	count := experimental.FunctionListenerFunc(func(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
		if matching.Load() {
			assigns.Add(1)
		}
	})
	var found []string
	factory := experimental.FunctionListenerFactoryFunc(func(def api.FunctionDefinition) experimental.FunctionListener {
		if !strings.HasPrefix(def.Name(), "runtime.mapassign") {
			return nil
		}
		found = append(found, def.Name())
		return count
	})
	h := newHost(t)
	h.ctx = experimental.WithFunctionListenerFactory(h.ctx, factory)
	m := h.start(t, matcherLink(t))
	if _, err := call(t, h.ctx, m, Initialize); err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no runtime.mapassign function in the matcher's link: a new Go names them otherwise")
	}
	pageAnswers(t, h, m, func() { matching.Store(true) })
	if n := assigns.Load(); n != 0 {
		t.Fatalf("matching pages called %v %d times", found, n)
	}
}

// FuzzSections: the readers Preinit and stubStartup use never panic on
// any bytes, and what they read writes back to bytes they read the same.
func FuzzSections(f *testing.F) {
	f.Add(byte(secGlobal), appendGlobals(nil, []global{{typ: 0x7f, mutable: true, value: 0xfffffff0}, {typ: 0x7e, value: 1 << 63}, {typ: 0x7d, value: 0x3f800000}, {typ: 0x7c, mutable: true, value: 7}}))
	f.Add(byte(secExport), appendExports(nil, []export{{name: Initialize, index: 3}, {name: "memory", kind: 2}}))
	f.Add(byte(secMemory), appendMemory(nil, memory{min: 34}))
	f.Add(byte(secMemory), appendMemory(nil, memory{min: 1, max: 1 << 16, hasMax: true}))
	f.Add(byte(secCode), []byte{2, 3, 0, 0, 0x0b, 2, 0, 0x0b})
	f.Add(byte(secCustom), append(appendU32(nil, 4), "name\x01\x06\x01\x02\x03abc"...))
	f.Add(byte(secImport), []byte{1, 1, 'm', 1, 'f', 0, 0})
	f.Fuzz(func(t *testing.T, id byte, body []byte) {
		switch id % 7 {
		case 0:
			if gs, err := readGlobals(body); err == nil {
				again, err := readGlobals(appendGlobals(nil, gs))
				if err != nil || !slices.Equal(again, gs) {
					t.Fatalf("globals %+v wrote back as %+v, %v", gs, again, err)
				}
			}
		case 1:
			if es, err := readExports(body); err == nil {
				again, err := readExports(appendExports(nil, es))
				if err != nil || !slices.Equal(again, es) {
					t.Fatalf("exports %+v wrote back as %+v, %v", es, again, err)
				}
			}
		case 2:
			if m, err := readMemory(body); err == nil {
				again, err := readMemory(appendMemory(nil, m))
				if err != nil || again != m {
					t.Fatalf("memory %+v wrote back as %+v, %v", m, again, err)
				}
			}
		case 3:
			mod := testModule(testSection{id: secCode, body: body})
			out, err := rewriteBodies(mod, func(fn uint32) []byte {
				if fn%2 == 0 {
					return trapBody
				}
				return nil
			})
			if err == nil {
				if _, err := rewriteBodies(out, func(uint32) []byte { return nil }); err != nil {
					t.Fatalf("the rewritten code section does not read: %v", err)
				}
			}
		case 4:
			functionNames(testModule(testSection{id: secCustom, body: body}))
		case 5:
			checkImports(body)
		case 6:
			Preinit(testModule(testSection{id: secImport, body: body}, memorySection), nil)
		}
	})
}

// withGlobals returns mod with its globals exported as Preinit's probe
// exports them (globalName), to be read in a test.
func withGlobals(t testing.TB, mod []byte) []byte {
	t.Helper()
	secs, at, es := exportsOf(t, mod)
	for g := range len(goGlobals) {
		es = append(es, export{name: globalName(g), kind: exportGlobal, index: uint32(g)})
	}
	return replace(secs, map[int][]byte{at: appendExports(nil, es)})
}

// stackOf returns the bounds of the current goroutine's stack (the g
// register, global 2) of a module made by withGlobals.
func stackOf(t testing.TB, m api.Module) (lo, hi uint64) {
	t.Helper()
	g := m.ExportedGlobal(globalName(2)).Get()
	b, ok := m.Memory().Read(uint32(g), 16)
	if !ok {
		t.Fatalf("g %#x is past memory", g)
	}
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
}
