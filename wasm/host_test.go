package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/adlink/adlink/wasm/module"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// moduleBytes is matcher.wasm as TestMain built it from this tree.
var moduleBytes []byte

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The flags of "make wasm", so sizes measured here are the served ones.
	var err error
	if moduleBytes, err = module.Matcher(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeRuntime()
	return m.Run()
}

// host is one wazero runtime with the module compiled once. Compiling
// takes seconds, so every test and benchmark shares it, and the compiled
// code is kept in a cache directory across runs as well.
type host struct {
	rt  wazero.Runtime
	cm  wazero.CompiledModule
	err error
}

var (
	sharedOnce sync.Once
	shared     host
)

func compiled(tb testing.TB) *host {
	tb.Helper()
	sharedOnce.Do(func() {
		ctx := context.Background()
		shared.rt = newRuntime(ctx)
		shared.cm, shared.err = shared.rt.CompileModule(ctx, moduleBytes)
	})
	if shared.err != nil {
		tb.Fatalf("compiling matcher.wasm: %v", shared.err)
	}
	return &shared
}

// newRuntime is a wazero runtime with WASI, whose compiled code is kept in
// a cache directory across runs.
func newRuntime(ctx context.Context) wazero.Runtime {
	cfg := wazero.NewRuntimeConfigCompiler()
	if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "adlink-wazero-cache")); err == nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	return rt
}

func closeRuntime() {
	for _, rt := range []wazero.Runtime{shared.rt, floorRT} {
		if rt != nil {
			rt.Close(context.Background())
		}
	}
}

// instance is one instantiated module. It is not safe for concurrent use:
// a module has one stack and one heap, so each goroutine needs its own.
type instance struct {
	mod                                        api.Module
	alloc, free, load, search, match, loadFrag api.Function
	// frags are the fragments of the shard loaded, for answers that
	// name the ones they need.
	frags [][]byte
}

// gogc is the GOGC the widget gives the module's runtime (see matcher.go).
const gogc = "200"

// instantiate runs the module's _initialize (wazero would run only _start,
// which a reactor lacks, and silently skip it) and looks up the exports.
func (h *host) instantiate(ctx context.Context) (*instance, error) {
	return h.instantiateWith(ctx, wazero.NewModuleConfig().WithStartFunctions("_initialize").WithEnv("GOGC", gogc))
}

func (h *host) instantiateWith(ctx context.Context, cfg wazero.ModuleConfig) (*instance, error) {
	// An empty name keeps the instance anonymous, so many can coexist.
	mod, err := h.rt.InstantiateModule(ctx, h.cm, cfg.WithName(""))
	if err != nil {
		return nil, err
	}
	in := &instance{mod: mod}
	for name, fn := range map[string]*api.Function{
		"alloc": &in.alloc, "free": &in.free, "load_shard": &in.load,
		"match_search": &in.search, "match_page": &in.match, "load_fragment": &in.loadFrag,
	} {
		if *fn = mod.ExportedFunction(name); *fn == nil {
			mod.Close(ctx)
			return nil, errors.New("matcher.wasm does not export " + name)
		}
	}
	return in, nil
}

func (in *instance) close(ctx context.Context) { in.mod.Close(ctx) }

// write copies b into a fresh guest buffer and returns its address.
func (in *instance) write(ctx context.Context, b []byte) (uint32, error) {
	res, err := in.alloc.Call(ctx, uint64(len(b)))
	if err != nil {
		return 0, fmt.Errorf("alloc: %w", err)
	}
	p := uint32(res[0])
	if !in.mod.Memory().Write(p, b) {
		return 0, fmt.Errorf("alloc returned %#x, outside memory for %d bytes", p, len(b))
	}
	return p, nil
}

// read copies n guest bytes at p: a view of guest memory goes stale as
// soon as the guest grows its memory.
func (in *instance) read(p, n uint32) ([]byte, error) {
	v, ok := in.mod.Memory().Read(p, n)
	if !ok {
		return nil, fmt.Errorf("result %#x+%d is outside memory (%d bytes)", p, n, in.mod.Memory().Size())
	}
	return bytes.Clone(v), nil
}

// give copies b into the module and calls fn with its args, then b's
// address and length; the module owns the buffer after status 0.
func (in *instance) give(ctx context.Context, fn api.Function, name string, b []byte, args ...uint64) error {
	p, err := in.write(ctx, b)
	if err != nil {
		return err
	}
	res, err := fn.Call(ctx, append(args, uint64(p), uint64(len(b)))...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if st := res[0]; st != statusOK {
		in.free.Call(ctx, uint64(p))
		return errors.New(name + ": status " + strconv.FormatUint(st, 10))
	}
	return nil
}

// loadShard hands shard to the module.
func (in *instance) loadShard(ctx context.Context, shard []byte) error {
	return in.give(ctx, in.load, "load_shard", shard)
}

// loadFragment hands fragment k of the shard (in.frags) to the module.
func (in *instance) loadFragment(ctx context.Context, k int) error {
	if k < 0 || k >= len(in.frags) {
		return fmt.Errorf("the module needs fragment %d of %d", k, len(in.frags))
	}
	return in.give(ctx, in.loadFrag, "load_fragment", in.frags[k], uint64(k))
}

// call runs match_search or match_page on req and returns a copy of the
// answer, freeing both buffers. An answer that names the fragments it
// needs gets them loaded and the request made again, as the widget does.
func (in *instance) call(ctx context.Context, fn api.Function, req string) ([]byte, error) {
	for range 2 {
		p, n, err := in.callKeep(ctx, fn, req)
		if err != nil {
			return nil, err
		}
		out, err := in.read(p, n)
		in.free.Call(ctx, uint64(p))
		if err != nil || !bytes.HasPrefix(out, []byte(`{"need":`)) {
			return out, err
		}
		var need struct{ Need []int }
		if err := json.Unmarshal(out, &need); err != nil || len(need.Need) == 0 {
			return nil, fmt.Errorf("answer %s: %v", out, err)
		}
		for _, k := range need.Need {
			if err := in.loadFragment(ctx, k); err != nil {
				return nil, err
			}
		}
	}
	return nil, errors.New("the module still needs fragments once they are loaded")
}

// callKeep runs fn and returns the answer's address and length without
// reading or freeing it.
func (in *instance) callKeep(ctx context.Context, fn api.Function, req string) (uint32, uint32, error) {
	p, err := in.write(ctx, []byte(req))
	if err != nil {
		return 0, 0, err
	}
	defer in.free.Call(ctx, uint64(p))
	res, err := fn.Call(ctx, uint64(p), uint64(len(req)))
	if err != nil {
		return 0, 0, err
	}
	if res[0] == 0 {
		return 0, 0, errors.New("the module rejected the request buffer")
	}
	return uint32(res[0] >> 32), uint32(res[0]), nil
}

func (in *instance) searchJSON(ctx context.Context, req string) ([]byte, error) {
	return in.call(ctx, in.search, req)
}

func (in *instance) pageJSON(ctx context.Context, req string) ([]byte, error) {
	return in.call(ctx, in.match, req)
}

// newInstance is instantiate for tests, closed with the test, with shard
// loaded and its fragments at hand.
func newInstance(tb testing.TB, shard []byte, frags ...[]byte) *instance {
	tb.Helper()
	ctx := context.Background()
	in, err := compiled(tb).instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.close(ctx) })
	in.frags = frags
	if shard != nil {
		if err := in.loadShard(ctx, shard); err != nil {
			tb.Fatal(err)
		}
	}
	return in
}
