package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/adlink/adlink/internal/wasmhost"
	"github.com/adlink/adlink/wasm/floor"
	"github.com/adlink/adlink/wasm/module"
)

// floorProgram exports floor.Kernels to the host: run(i, n) runs kernel i
// n times (floor.Repeat), so that the cost of a call across the boundary
// weighs little beside the work.
const floorProgram = `package main

import "github.com/adlink/adlink/wasm/floor"

func main() {}

//go:wasmexport run
func run(i, n int32) int64 { return int64(floor.Repeat(i, n)) }
`

var (
	floorOnce sync.Once
	floorRT   wazero.Runtime // closed by closeFloor
	floorRun  api.Function
	floorErr  error
)

// floorModule builds floorProgram as matcher.wasm is built (module.Build's
// flags), starts it in a wazero runtime of its own (wasmhost.NewRuntime, as
// the matcher's), and returns its run export.
func floorModule(tb testing.TB) api.Function {
	tb.Helper()
	floorOnce.Do(func() {
		var bin []byte
		if bin, floorErr = module.Program(floorProgram); floorErr != nil {
			return
		}
		ctx := context.Background()
		floorRT = wasmhost.NewRuntime(ctx)
		var mod api.Module
		mod, floorErr = floorRT.InstantiateWithConfig(ctx, bin,
			wazero.NewModuleConfig().WithStartFunctions("_initialize").WithName("").WithEnv("GOGC", wasmhost.GOGC))
		if floorErr == nil {
			floorRun = mod.ExportedFunction("run")
		}
	})
	if floorErr != nil {
		tb.Fatalf("the floor's module: %v", floorErr)
	}
	return floorRun
}

// closeFloor closes the floor's runtime, if floorModule started it.
func closeFloor() {
	if floorRT != nil {
		floorRT.Close(context.Background())
	}
}

// floorKernel runs kernel i n times in the module and returns what
// floor.Repeat returns.
func floorKernel(tb testing.TB, run api.Function, i, n int) int {
	tb.Helper()
	res, err := run.Call(context.Background(), uint64(i), uint64(n))
	if err != nil {
		tb.Fatalf("%s in wazero: %v", floor.Kernels[i].Name, err)
	}
	return int(int64(res[0]))
}

// TestFloorAgrees: each kernel of the floor gives the same result in the
// module as natively, so the two sides time the same work.
func TestFloorAgrees(t *testing.T) {
	run := floorModule(t)
	for i, k := range floor.Kernels {
		if got, want := floorKernel(t, run, i, 2), floor.Repeat(int32(i), 2); got != want || k.Run() == 0 {
			t.Errorf("%s: %d in wazero, %d natively", k.Name, got, want)
		}
	}
}

// benchFloor times Go's standard library in wazero beside natively
// (package floor): the ratio Go's own code gets in this runtime, the
// baseline beside the matcher's query ratio. It is timed as queries are
// (fastestOf: CPU time of the calling thread), so the module's garbage
// collection counts and native's, on other threads, does not; the floor's
// code is inlined as match/ is.
func benchFloor(b *testing.B) {
	run := floorModule(b)
	var parts []string
	logSum := 0.0
	for range b.N {
		parts, logSum = parts[:0], 0
		for i, k := range floor.Kernels {
			const reps = 10
			floorKernel(b, run, i, reps) // compiled and warm before timing
			floor.Repeat(int32(i), reps)
			w := fastestOf(15, func() { floorKernel(b, run, i, reps) })
			n := fastestOf(15, func() { floor.Repeat(int32(i), reps) })
			r := float64(w) / float64(n)
			logSum += math.Log(r)
			parts = append(parts, fmt.Sprintf("%s %.1fx (%.1f against %.1f µs)", k.Name, r, float64(w.Nanoseconds())/1e3/reps, float64(n.Nanoseconds())/1e3/reps))
		}
	}
	g := math.Exp(logSum / float64(len(floor.Kernels)))
	b.ReportMetric(g, "x-native-go-floor")
	fmt.Printf("baseline, Go's standard library built with matcher.wasm's flags and run in the same runtime, beside native: %s; geometric mean %.1fx\n", strings.Join(parts, ", "), g)
}
