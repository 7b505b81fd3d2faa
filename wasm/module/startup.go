package module

import "errors"

const secCode = 10

// startupOnly are the functions of a Go reactor that only its start-up
// runs: the runtime's entry and set-up (schedinit and what only it
// calls), its main goroutine (which for a library runs the packages'
// init functions and returns), and the packages' init functions, which
// the runtime runs once each. Once Preinit has run them at build time no
// host runs them again, so their bodies are dead weight on every first
// view; stubStartup makes each one trap. The matcher's own start-up
// (wasm/warm.go) is listed with them. Closures an init stores for later
// (runtime.(*scavengerState).init's) and functions also called after
// start-up ((*p).init, ticks' init, mstart) are not, nor is _initialize's
// own function, which Preinit makes do nothing. A name a later Go no
// longer has is skipped, so the module only keeps its code, and
// TestBuildInitializesTheMatcher fails, naming it.
var startupOnly = []string{
	"_rt0_wasm_wasip1",
	"runtime.rt0_go", "runtime.main", "runtime.doInit1", "runtime.gcenable",
	"runtime.schedinit", "runtime.mallocinit", "runtime.__mheap_.init", "runtime.__pageAlloc_.init",
	"runtime.typelinksinit", "runtime.modulesinit", "runtime.itabsinit", "runtime.stkobjinit",
	"runtime.gcinit", "runtime.__gcControllerState_.init", "runtime.randinit", "runtime.mrandinit",
	"runtime.osinit", "runtime.mcommoninit", "runtime.__scavengerState_.init",
	"runtime.init", "runtime.init.0", "runtime.init.3", "runtime.init.4", "runtime.init.5", "runtime.init.6",
	"errors.init", "iter.init", "github.com_adlink_adlink_match.init",
	"main.init.0", "main.growStack", "main.touch",
}

// trapBody is a function body that traps at once: no locals, unreachable,
// end. It is valid whatever the function's type.
var trapBody = []byte{0x00, 0x00, 0x0b}

// functionNames reads the name section's function names, by function
// index (imports first).
func functionNames(mod []byte) (map[uint32]string, error) {
	secs, err := readSections(mod)
	if err != nil {
		return nil, err
	}
	names := map[uint32]string{}
	for _, s := range secs {
		if s.id != secCustom {
			continue
		}
		r := reader{b: s.body}
		if string(r.bytes(r.u32("custom section name length"), "custom section name")) != "name" {
			continue
		}
		for r.err == nil && r.off < len(r.b) {
			id := r.byte("name subsection id")
			sub := r.bytes(r.u32("name subsection size"), "name subsection")
			if id != 1 {
				continue
			}
			q := reader{b: sub}
			n := q.u32("function name count")
			for i := uint32(0); q.err == nil && i < n; i++ {
				idx := q.u32("function index")
				names[idx] = string(q.bytes(q.u32("function name length"), "function name"))
			}
			if q.err != nil {
				return nil, q.err
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return names, nil
}

// withoutNames returns the module without its name section: what Go's
// linker writes with -s.
func withoutNames(mod []byte) ([]byte, error) {
	secs, err := readSections(mod)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), wasmHeader...)
	for _, s := range secs {
		if s.id == secCustom {
			r := reader{b: s.body}
			if string(r.bytes(r.u32("custom section name length"), "custom section name")) == "name" {
				continue
			}
		}
		out = append(out, s.raw...)
	}
	return out, nil
}

// stubStartup replaces the bodies of the startupOnly functions, found by
// names (functionNames of the same link), with trapBody.
func stubStartup(mod []byte, names map[uint32]string) ([]byte, error) {
	want := map[string]bool{}
	for _, n := range startupOnly {
		want[n] = true
	}
	return rewriteBodies(mod, func(fn uint32) []byte {
		if want[names[fn]] {
			return trapBody
		}
		return nil
	})
}

// rewriteBodies returns mod with the body of each function for which body
// returns one (by function index, imports first) replaced by it.
func rewriteBodies(mod []byte, body func(fn uint32) []byte) ([]byte, error) {
	secs, err := readSections(mod)
	if err != nil {
		return nil, err
	}
	imports := uint32(0)
	for _, s := range secs {
		if s.id == secImport {
			r := reader{b: s.body}
			if imports = r.u32("import count"); r.err != nil {
				return nil, r.err
			}
		}
	}
	bodies := map[int][]byte{}
	for i, s := range secs {
		if s.id != secCode {
			continue
		}
		r := reader{b: s.body}
		n := r.u32("function count")
		out := appendU32(nil, n)
		for k := uint32(0); r.err == nil && k < n; k++ {
			b := r.bytes(r.u32("function body size"), "function body")
			if nb := body(imports + k); nb != nil {
				b = nb
			}
			out = appendU32(out, uint32(len(b)))
			out = append(out, b...)
		}
		if r.err == nil && r.off != len(s.body) {
			r.fail("code section has %d bytes after its functions", len(s.body)-r.off)
		}
		if r.err != nil {
			return nil, r.err
		}
		bodies[i] = out
	}
	if len(bodies) == 0 {
		return nil, errors.New("wasm: no code section")
	}
	return replace(secs, bodies), nil
}
