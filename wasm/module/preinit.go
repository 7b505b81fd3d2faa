package module

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Section ids preinit reads or rewrites.
const (
	secImport = 2
	secMemory = 5
	secGlobal = 6
	secExport = 7
)

// exportGlobal is the export kind of a global.
const exportGlobal = 3

// Initialize is the export a Go reactor's host calls once before any other:
// it starts the Go runtime and runs the packages' init functions.
const Initialize = "_initialize"

// Preinit runs a Go reactor's _initialize once, at build time, in wazero,
// and returns the module as it stands after: its memory (the Go runtime's
// heap, stacks and scheduler, the packages' variables) written as its data
// segments, its globals (Go's registers: SP, the current goroutine, ...)
// with the values they had, its memory's minimum the size it had grown to,
// and its _initialize doing nothing. A browser then starts the matcher
// without running Go's start-up or compiling the hundreds of functions it
// calls, the largest part of a first view's work in the page between the
// module's download and its first match (docs/PERFORMANCE.md). A host may
// still call _initialize, as every host of a reactor does.
//
// Go keeps all of a running program's state in linear memory and its
// globals, and between two calls from the host no Go code runs (no
// threads, no signals), so the state after _initialize is all there is.
// env is the environment the host gives: the runtime reads it during
// _initialize (GOGC), so the module keeps what it read then. The clock
// reads 1 ns throughout (the runtime refuses zero), so every time the
// runtime notes during start-up is before any host's clock, and wazero's
// random source is its deterministic one, so the same module gives the
// same bytes. The runtime's random state is then the same in every
// instance (its hash function's key, the seeds it gives maps), so anyone
// can compute which strings collide in the matcher's maps. The
// matcher puts no text of a page into a map (it looks a page's words up in
// its shard by binary search, and in the synonyms' map, built when it
// starts, only reads), so a page's text cannot crowd one.
func Preinit(mod []byte, env map[string]string) ([]byte, error) {
	secs, err := readSections(mod)
	if err != nil {
		return nil, err
	}
	at := map[byte]int{}
	for i, s := range secs {
		if s.id != secCustom {
			at[s.id] = i
		}
	}
	for _, id := range []byte{secMemory, secGlobal, secExport, secData} {
		if _, ok := at[id]; !ok {
			return nil, fmt.Errorf("wasm: no section %d: not a Go reactor", id)
		}
	}
	if i, ok := at[secImport]; ok {
		if err := checkImports(secs[i].body); err != nil {
			return nil, err
		}
	}
	globals, err := readGlobals(secs[at[secGlobal]].body)
	if err != nil {
		return nil, err
	}
	exports, err := readExports(secs[at[secExport]].body)
	if err != nil {
		return nil, err
	}
	mem, err := readMemory(secs[at[secMemory]].body)
	if err != nil {
		return nil, err
	}
	initFn, hasInit := uint32(0), false
	for _, e := range exports {
		if e.name == Initialize && e.kind == 0 {
			initFn, hasInit = e.index, true
		}
	}
	if !hasInit {
		return nil, errors.New("wasm: no _initialize export: not a Go reactor")
	}

	// A copy that exports every mutable global, to read them after.
	probe := append([]export(nil), exports...)
	for i, g := range globals {
		if g.mutable {
			probe = append(probe, export{name: globalName(i), kind: exportGlobal, index: uint32(i)})
		}
	}
	image, values, err := run(replace(secs, map[int][]byte{at[secExport]: appendExports(nil, probe)}), env, globals)
	if err != nil {
		return nil, err
	}

	for i := range globals {
		if globals[i].mutable {
			globals[i].value = values[i]
		}
	}
	mem.min = uint32(len(image) / 65536)
	if mem.hasMax && mem.max < mem.min {
		return nil, fmt.Errorf("wasm: _initialize grew memory to %d pages, past its maximum %d", mem.min, mem.max)
	}
	zeroDeadStack(image, globals)
	segs := merge(nonZero(image))
	bodies := map[int][]byte{
		at[secMemory]: appendMemory(nil, mem),
		at[secGlobal]: appendGlobals(nil, globals),
		at[secData]:   appendData(nil, segs),
	}
	if i, ok := at[secDataCount]; ok {
		bodies[i] = appendU32(nil, uint32(len(segs)))
	}
	out, err := rewriteBodies(replace(secs, bodies), func(fn uint32) []byte {
		if fn == initFn {
			return nopBody
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The module must still be one: a wrong offset or body above would
	// otherwise show only where it is run.
	// wazero's interpreter validates it as its compiler would, in a tenth
	// of the time.
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	if _, err := rt.CompileModule(ctx, out); err != nil {
		return nil, fmt.Errorf("the initialized module does not compile: %w", err)
	}
	return out, nil
}

// nopBody is a function body that does nothing: no locals, end. It is
// valid for a function without results, as a reactor's _initialize is.
var nopBody = []byte{0x00, 0x0b}

// run instantiates mod in wazero with env, calls its _initialize and
// returns its memory and the values of its globals (by index; the mutable
// ones exported under globalName).
func run(mod []byte, env map[string]string, globals []global) ([]byte, []uint64, error) {
	// Start-up waits for nothing; a minute bounds a module that would.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, nil, err
	}
	cfg := wazero.NewModuleConfig().WithStartFunctions().WithName("").
		WithNanotime(func() int64 { return 1 }, 1)
	// In one order, as the module keeps the strings in its memory.
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cfg = cfg.WithEnv(k, env[k])
	}
	m, err := rt.InstantiateWithConfig(ctx, mod, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("instantiating the module to initialize it: %w", err)
	}
	if _, err := m.ExportedFunction(Initialize).Call(ctx); err != nil {
		return nil, nil, fmt.Errorf("running _initialize: %w", err)
	}
	size := m.Memory().Size()
	image, ok := m.Memory().Read(0, size)
	if !ok {
		return nil, nil, errors.New("reading the initialized memory")
	}
	values := make([]uint64, len(globals))
	for i, g := range globals {
		if !g.mutable {
			continue
		}
		eg := m.ExportedGlobal(globalName(i))
		if eg == nil {
			return nil, nil, fmt.Errorf("global %d was not exported", i)
		}
		values[i] = eg.Get()
	}
	return append([]byte(nil), image...), values, nil
}

// goGlobals are the types of the globals Go's linker defines, its
// registers: SP, CTXT, g, RET0 to RET3 and PAUSE.
var goGlobals = []byte{0x7f, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7f}

// zeroDeadStack zeroes the stack of the goroutine _initialize returned on
// below its stack pointer: what its calls left there is dead, and would
// cost bytes in the data segments. The goroutine is the g register
// (global 2); a runtime.g starts with its stack's bounds, lo and hi. A
// module whose globals are not Go's is left as it is.
func zeroDeadStack(image []byte, gs []global) {
	if len(gs) != len(goGlobals) {
		return
	}
	for i, g := range gs {
		if g.typ != goGlobals[i] {
			return
		}
	}
	sp, g := gs[0].value, gs[2].value
	if g+16 > uint64(len(image)) {
		return
	}
	lo, hi := binary.LittleEndian.Uint64(image[g:]), binary.LittleEndian.Uint64(image[g+8:])
	if lo <= sp && sp <= hi && hi <= uint64(len(image)) {
		clear(image[lo:sp])
	}
}

func globalName(i int) string { return fmt.Sprintf("adlink.global.%d", i) }

// replace returns the module of secs with the bodies of the sections at
// the given indexes replaced.
func replace(secs []section, bodies map[int][]byte) []byte {
	var out []byte
	out = append(out, wasmHeader...)
	for i, s := range secs {
		if b, ok := bodies[i]; ok {
			out = appendSection(out, s.id, b)
		} else {
			out = append(out, s.raw...)
		}
	}
	return out
}

// nonZero returns the runs of image that are not zero, as segments; a run
// of fewer than mergeGap zeros is kept inside a segment by merge.
func nonZero(image []byte) []segment {
	var segs []segment
	for i := 0; i < len(image); {
		for i < len(image) && image[i] == 0 {
			i++
		}
		j := i
		for j < len(image) && image[j] != 0 {
			j++
		}
		if j > i {
			segs = append(segs, segment{off: uint32(i), data: image[i:j]})
		}
		i = j
	}
	return segs
}

// global is one defined global whose initial value is a constant.
type global struct {
	typ     byte // 0x7f i32, 0x7e i64, 0x7d f32, 0x7c f64
	mutable bool
	value   uint64 // as api.Global.Get encodes it
}

func readGlobals(body []byte) ([]global, error) {
	r := reader{b: body}
	n := r.u32("global count")
	var gs []global
	for i := uint32(0); r.err == nil && i < n; i++ {
		g := global{typ: r.byte("global type")}
		switch mut := r.byte("global mutability"); mut {
		case 0, 1:
			g.mutable = mut == 1
		default:
			r.fail("global %d: mutability %d", i, mut)
		}
		op := r.byte("global init opcode")
		switch {
		case op == 0x41 && g.typ == 0x7f:
			g.value = uint64(uint32(r.s32("i32.const")))
		case op == 0x42 && g.typ == 0x7e:
			g.value = uint64(r.s64("i64.const"))
		case op == 0x43 && g.typ == 0x7d:
			b := r.bytes(4, "f32.const")
			if len(b) == 4 {
				g.value = uint64(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
			}
		case op == 0x44 && g.typ == 0x7c:
			b := r.bytes(8, "f64.const")
			for k := len(b) - 1; k >= 0; k-- {
				g.value = g.value<<8 | uint64(b[k])
			}
		default:
			if r.err == nil {
				return nil, fmt.Errorf("wasm: global %d: type %#x initialized by opcode %#x, want a constant of its type", i, g.typ, op)
			}
		}
		if end := r.byte("global init end"); r.err == nil && end != 0x0b {
			return nil, fmt.Errorf("wasm: global %d: init expression goes on (%#x)", i, end)
		}
		gs = append(gs, g)
	}
	if r.err == nil && r.off != len(body) {
		r.fail("global section has %d bytes after its globals", len(body)-r.off)
	}
	return gs, r.err
}

func appendGlobals(dst []byte, gs []global) []byte {
	dst = appendU32(dst, uint32(len(gs)))
	for _, g := range gs {
		mut := byte(0)
		if g.mutable {
			mut = 1
		}
		dst = append(dst, g.typ, mut)
		switch g.typ {
		case 0x7f:
			dst = appendS32(append(dst, 0x41), int32(uint32(g.value)))
		case 0x7e:
			dst = appendS64(append(dst, 0x42), int64(g.value))
		case 0x7d:
			v := uint32(g.value)
			dst = append(dst, 0x43, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
		case 0x7c:
			dst = append(dst, 0x44)
			for k := 0; k < 8; k++ {
				dst = append(dst, byte(g.value>>(8*k)))
			}
		}
		dst = append(dst, 0x0b)
	}
	return dst
}

// export is one entry of the export section.
type export struct {
	name  string
	kind  byte
	index uint32
}

func readExports(body []byte) ([]export, error) {
	r := reader{b: body}
	n := r.u32("export count")
	var es []export
	for i := uint32(0); r.err == nil && i < n; i++ {
		name := string(r.bytes(r.u32("export name length"), "export name"))
		e := export{name: name, kind: r.byte("export kind"), index: r.u32("export index")}
		es = append(es, e)
	}
	if r.err == nil && r.off != len(body) {
		r.fail("export section has %d bytes after its exports", len(body)-r.off)
	}
	return es, r.err
}

func appendExports(dst []byte, es []export) []byte {
	dst = appendU32(dst, uint32(len(es)))
	for _, e := range es {
		dst = appendU32(dst, uint32(len(e.name)))
		dst = append(dst, e.name...)
		dst = append(dst, e.kind)
		dst = appendU32(dst, e.index)
	}
	return dst
}

// memory is the one memory a Go module defines.
type memory struct {
	min, max uint32
	hasMax   bool
}

func readMemory(body []byte) (memory, error) {
	r := reader{b: body}
	if n := r.u32("memory count"); r.err == nil && n != 1 {
		return memory{}, fmt.Errorf("wasm: %d memories, want 1", n)
	}
	var m memory
	switch flags := r.byte("memory limits"); flags {
	case 0:
		m.min = r.u32("memory minimum")
	case 1:
		m.hasMax = true
		m.min, m.max = r.u32("memory minimum"), r.u32("memory maximum")
	default:
		if r.err == nil {
			return memory{}, fmt.Errorf("wasm: memory limits flags %#x, want 0 or 1 (one 32-bit memory, not shared)", flags)
		}
	}
	if r.err == nil && r.off != len(body) {
		r.fail("memory section has %d bytes after its memory", len(body)-r.off)
	}
	return m, r.err
}

func appendMemory(dst []byte, m memory) []byte {
	dst = appendU32(dst, 1)
	if !m.hasMax {
		return appendU32(append(dst, 0), m.min)
	}
	return appendU32(appendU32(append(dst, 1), m.min), m.max)
}

// checkImports refuses a module that imports anything but functions: an
// imported global or memory would shift the indexes preinit writes, and a
// Go module imports neither.
func checkImports(body []byte) error {
	r := reader{b: body}
	n := r.u32("import count")
	for i := uint32(0); r.err == nil && i < n; i++ {
		r.bytes(r.u32("import module length"), "import module")
		name := string(r.bytes(r.u32("import name length"), "import name"))
		if kind := r.byte("import kind"); r.err == nil && kind != 0 {
			return fmt.Errorf("wasm: import %q is of kind %d, want a function", name, kind)
		}
		r.u32("import type index")
	}
	return r.err
}

// appendS64 appends v as a signed LEB128.
func appendS64(dst []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}

// s64 reads a signed LEB128 of at most 10 bytes.
func (r *reader) s64(what string) int64 {
	var v uint64
	var shift uint
	for i := 0; i < 10; i++ {
		c := r.byte(what)
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if shift < 64 && c&0x40 != 0 {
				v |= math.MaxUint64 << shift
			}
			return int64(v)
		}
	}
	r.fail("%s overflows 64 bits", what)
	return 0
}
