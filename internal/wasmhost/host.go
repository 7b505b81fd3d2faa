// Package wasmhost runs matcher.wasm in wazero as the widget runs it in a
// page, for the tests and benchmarks of the module: it compiles the module
// once, instantiates one instance per goroutine, hands shards and
// fragments to it and reads its answers, checking every access to guest
// memory.
package wasmhost

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

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/adlink/adlink/internal/testenv"
)

// GOGC is the GOGC the widget gives a module's runtime; matcher.wasm's
// was started with it when built (see wasm/matcher.go).
const GOGC = "200"

// The statuses of load_shard and load_fragment.
const (
	StatusOK       = 0
	StatusBadArgs  = 1
	StatusBadShard = 2
)

// NewRuntime is a wazero runtime with WASI, whose compiled code is kept in
// a cache directory across runs.
func NewRuntime(ctx context.Context) wazero.Runtime {
	cfg := wazero.NewRuntimeConfigCompiler()
	if cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "adlink-wazero-cache")); err == nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	return rt
}

// Host is one wazero runtime with the module compiled once.
type Host struct {
	rt wazero.Runtime
	cm wazero.CompiledModule
}

// Compile compiles module in a runtime of its own.
func Compile(ctx context.Context, module []byte) (*Host, error) {
	rt := NewRuntime(ctx)
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return &Host{rt: rt, cm: cm}, nil
}

// Close closes the runtime and every instance in it.
func (h *Host) Close(ctx context.Context) error { return h.rt.Close(ctx) }

// Compiling takes seconds, so every test and benchmark of a binary shares
// one host.
var (
	sharedOnce sync.Once
	shared     *Host
	sharedErr  error
)

// Shared returns the host of the matcher.wasm that testenv built, compiled
// the first time it is asked for.
func Shared(tb testing.TB) *Host {
	tb.Helper()
	sharedOnce.Do(func() {
		m := testenv.Matcher()
		if m == nil {
			sharedErr = errors.New("matcher.wasm was not built: TestMain must run testenv.Run with Options{Matcher: true}")
			return
		}
		shared, sharedErr = Compile(context.Background(), m)
	})
	if sharedErr != nil {
		tb.Fatalf("compiling matcher.wasm: %v", sharedErr)
	}
	return shared
}

// CloseShared closes Shared's host, if it was made; TestMain calls it
// after the tests.
func CloseShared() {
	if shared != nil {
		shared.Close(context.Background())
	}
}

// Instance is one instantiated module. It is not safe for concurrent use:
// a module has one stack and one heap, so each goroutine needs its own.
type Instance struct {
	Mod api.Module
	// The exports: alloc, free, load_shard, load_fragment, match_search
	// and match_page.
	Alloc, Free, Load, LoadFrag, Search, Page api.Function
	// Frags are the fragments of the shard loaded, for answers that name
	// the ones they need.
	Frags [][]byte
}

// Instantiate runs the module's _initialize (wazero would run only _start,
// which a reactor lacks, and silently skip it) and looks up the exports.
func (h *Host) Instantiate(ctx context.Context) (*Instance, error) {
	return h.InstantiateWith(ctx, wazero.NewModuleConfig().WithStartFunctions("_initialize").WithEnv("GOGC", GOGC))
}

// InstantiateWith is Instantiate with a module configuration of the
// caller's.
func (h *Host) InstantiateWith(ctx context.Context, cfg wazero.ModuleConfig) (*Instance, error) {
	// An empty name keeps the instance anonymous, so many can coexist.
	mod, err := h.rt.InstantiateModule(ctx, h.cm, cfg.WithName(""))
	if err != nil {
		return nil, err
	}
	in := &Instance{Mod: mod}
	for name, fn := range map[string]*api.Function{
		"alloc": &in.Alloc, "free": &in.Free, "load_shard": &in.Load,
		"match_search": &in.Search, "match_page": &in.Page, "load_fragment": &in.LoadFrag,
	} {
		if *fn = mod.ExportedFunction(name); *fn == nil {
			mod.Close(ctx)
			return nil, errors.New("matcher.wasm does not export " + name)
		}
	}
	return in, nil
}

// Close closes the instance.
func (in *Instance) Close(ctx context.Context) { in.Mod.Close(ctx) }

// Write copies b into a fresh guest buffer and returns its address.
func (in *Instance) Write(ctx context.Context, b []byte) (uint32, error) {
	res, err := in.Alloc.Call(ctx, uint64(len(b)))
	if err != nil {
		return 0, fmt.Errorf("alloc: %w", err)
	}
	p := uint32(res[0])
	if !in.Mod.Memory().Write(p, b) {
		return 0, fmt.Errorf("alloc returned %#x, outside memory for %d bytes", p, len(b))
	}
	return p, nil
}

// Read copies n guest bytes at p: a view of guest memory goes stale as
// soon as the guest grows its memory.
func (in *Instance) Read(p, n uint32) ([]byte, error) {
	v, ok := in.Mod.Memory().Read(p, n)
	if !ok {
		return nil, fmt.Errorf("result %#x+%d is outside memory (%d bytes)", p, n, in.Mod.Memory().Size())
	}
	return bytes.Clone(v), nil
}

// give copies b into the module and calls fn with its args, then b's
// address and length; the module owns the buffer after status 0.
func (in *Instance) give(ctx context.Context, fn api.Function, name string, b []byte, args ...uint64) error {
	p, err := in.Write(ctx, b)
	if err != nil {
		return err
	}
	res, err := fn.Call(ctx, append(args, uint64(p), uint64(len(b)))...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if st := res[0]; st != StatusOK {
		in.Free.Call(ctx, uint64(p))
		return errors.New(name + ": status " + strconv.FormatUint(st, 10))
	}
	return nil
}

// LoadShard hands shard to the module.
func (in *Instance) LoadShard(ctx context.Context, shard []byte) error {
	return in.give(ctx, in.Load, "load_shard", shard)
}

// LoadFragment hands fragment k of the shard (in.Frags) to the module.
func (in *Instance) LoadFragment(ctx context.Context, k int) error {
	if k < 0 || k >= len(in.Frags) {
		return fmt.Errorf("the module needs fragment %d of %d", k, len(in.Frags))
	}
	return in.give(ctx, in.LoadFrag, "load_fragment", in.Frags[k], uint64(k))
}

// Call runs match_search or match_page on req and returns a copy of the
// answer, freeing both buffers. An answer that names the fragments it
// needs gets them loaded and the request made again, as the widget does.
func (in *Instance) Call(ctx context.Context, fn api.Function, req string) ([]byte, error) {
	for range 2 {
		p, n, err := in.CallKeep(ctx, fn, req)
		if err != nil {
			return nil, err
		}
		out, err := in.Read(p, n)
		in.Free.Call(ctx, uint64(p))
		if err != nil || !bytes.HasPrefix(out, []byte(`{"need":`)) {
			return out, err
		}
		var need struct{ Need []int }
		if err := json.Unmarshal(out, &need); err != nil || len(need.Need) == 0 {
			return nil, fmt.Errorf("answer %s: %v", out, err)
		}
		for _, k := range need.Need {
			if err := in.LoadFragment(ctx, k); err != nil {
				return nil, err
			}
		}
	}
	return nil, errors.New("the module still needs fragments once they are loaded")
}

// CallKeep runs fn and returns the answer's address and length without
// reading or freeing it.
func (in *Instance) CallKeep(ctx context.Context, fn api.Function, req string) (uint32, uint32, error) {
	p, err := in.Write(ctx, []byte(req))
	if err != nil {
		return 0, 0, err
	}
	defer in.Free.Call(ctx, uint64(p))
	res, err := fn.Call(ctx, uint64(p), uint64(len(req)))
	if err != nil {
		return 0, 0, err
	}
	if res[0] == 0 {
		return 0, 0, errors.New("the module rejected the request buffer")
	}
	return uint32(res[0] >> 32), uint32(res[0]), nil
}

// SearchJSON is match_search's answer to req.
func (in *Instance) SearchJSON(ctx context.Context, req string) ([]byte, error) {
	return in.Call(ctx, in.Search, req)
}

// PageJSON is match_page's answer to req.
func (in *Instance) PageJSON(ctx context.Context, req string) ([]byte, error) {
	return in.Call(ctx, in.Page, req)
}

// NewInstance is an instance of the shared host for a test, closed with
// the test, with shard loaded (unless nil) and its fragments at hand.
func NewInstance(tb testing.TB, shard []byte, frags ...[]byte) *Instance {
	tb.Helper()
	ctx := context.Background()
	in, err := Shared(tb).Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.Close(ctx) })
	in.Frags = frags
	if shard != nil {
		if err := in.LoadShard(ctx, shard); err != nil {
			tb.Fatal(err)
		}
	}
	return in
}
