package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/adlink/adlink/wasm/floor"
	"github.com/adlink/adlink/wasm/module"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// floorProgram exports floor.Kernels to the host: run(i) is kernel i's
// result.
const floorProgram = `package main

import "github.com/adlink/adlink/wasm/floor"

func main() {}

//go:wasmexport run
func run(i int32) int64 { return int64(floor.Kernels[i].Run()) }
`

var (
	floorOnce sync.Once
	floorRT   wazero.Runtime // closed by closeRuntime
	floorRun  api.Function
	floorErr  error
)

// floorModule builds floorProgram as matcher.wasm is built (module.Build's
// flags), starts it in a wazero runtime of its own (newRuntime, as the
// matcher's), and returns its run export.
func floorModule(tb testing.TB) api.Function {
	tb.Helper()
	floorOnce.Do(func() {
		var bin []byte
		if bin, floorErr = module.Program(floorProgram); floorErr != nil {
			return
		}
		ctx := context.Background()
		floorRT = newRuntime(ctx)
		var mod api.Module
		mod, floorErr = floorRT.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithStartFunctions("_initialize").WithName(""))
		if floorErr == nil {
			floorRun = mod.ExportedFunction("run")
		}
	})
	if floorErr != nil {
		tb.Fatalf("the floor's module: %v", floorErr)
	}
	return floorRun
}

func floorKernel(tb testing.TB, run api.Function, i int) int {
	res, err := run.Call(context.Background(), uint64(i))
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
		if got, want := floorKernel(t, run, i), k.Run(); got != want || want == 0 {
			t.Errorf("%s: %d in wazero, %d natively", k.Name, got, want)
		}
	}
}

// benchFloor times Go's standard library in wazero beside natively
// (package floor): the ratio Go's own code gets in this runtime, the
// baseline beside the matcher's query ratio.
func benchFloor(b *testing.B) {
	run := floorModule(b)
	var parts []string
	logSum := 0.0
	for range b.N {
		parts, logSum = parts[:0], 0
		for i, k := range floor.Kernels {
			floorKernel(b, run, i) // compiled and warm before timing
			k.Run()
			w := fastestOf(15, func() {
				for range 10 {
					floorKernel(b, run, i)
				}
			})
			n := fastestOf(15, func() {
				for range 10 {
					k.Run()
				}
			})
			r := float64(w) / float64(n)
			logSum += math.Log(r)
			parts = append(parts, fmt.Sprintf("%s %.1fx (%.1f against %.1f µs)", k.Name, r, float64(w.Nanoseconds())/1e4, float64(n.Nanoseconds())/1e4))
		}
	}
	g := math.Exp(logSum / float64(len(floor.Kernels)))
	b.ReportMetric(g, "x-native-go-floor")
	fmt.Printf("baseline, Go's standard library compiled as matcher.wasm is and run in the same runtime, beside native: %s; geometric mean %.1fx\n", strings.Join(parts, ", "), g)
}
