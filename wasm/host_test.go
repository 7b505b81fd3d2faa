package main

import (
	"bytes"
	"context"
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
		cfg := wazero.NewRuntimeConfigCompiler()
		if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "adlink-wazero-cache")); err == nil {
			cfg = cfg.WithCompilationCache(cache)
		}
		shared.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
		wasi_snapshot_preview1.MustInstantiate(ctx, shared.rt)
		shared.cm, shared.err = shared.rt.CompileModule(ctx, moduleBytes)
	})
	if shared.err != nil {
		tb.Fatalf("compiling matcher.wasm: %v", shared.err)
	}
	return &shared
}

func closeRuntime() {
	if shared.rt != nil {
		shared.rt.Close(context.Background())
	}
}

// instance is one instantiated module. It is not safe for concurrent use:
// a module has one stack and one heap, so each goroutine needs its own.
type instance struct {
	mod                              api.Module
	alloc, free, load, search, match api.Function
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
		"match_search": &in.search, "match_page": &in.match,
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

// loadShard hands shard to the module; the module owns the buffer after a
// successful load.
func (in *instance) loadShard(ctx context.Context, shard []byte) error {
	p, err := in.write(ctx, shard)
	if err != nil {
		return err
	}
	res, err := in.load.Call(ctx, uint64(p), uint64(len(shard)))
	if err != nil {
		return fmt.Errorf("load_shard: %w", err)
	}
	if st := res[0]; st != statusOK {
		in.free.Call(ctx, uint64(p))
		return errors.New("load_shard: status " + strconv.FormatUint(st, 10))
	}
	return nil
}

// call runs match_search or match_page on req and returns a copy of the
// answer, freeing both buffers.
func (in *instance) call(ctx context.Context, fn api.Function, req string) ([]byte, error) {
	p, n, err := in.callKeep(ctx, fn, req)
	if err != nil {
		return nil, err
	}
	defer in.free.Call(ctx, uint64(p))
	return in.read(p, n)
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

// newInstance is instantiate for tests, closed with the test.
func newInstance(tb testing.TB, shard []byte) *instance {
	tb.Helper()
	ctx := context.Background()
	in, err := compiled(tb).instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.close(ctx) })
	if shard != nil {
		if err := in.loadShard(ctx, shard); err != nil {
			tb.Fatal(err)
		}
	}
	return in
}
