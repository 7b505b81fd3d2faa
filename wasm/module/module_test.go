package module

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// TestMergeDataKeepsTheMatcher: the matcher's module with its data
// segments merged has a tenth as many or fewer, every other section as it
// was, and memory starting the same, as wazero instantiates each.
func TestMergeDataKeepsTheMatcher(t *testing.T) {
	linked, err := withoutNames(matcherLink(t))
	if err != nil {
		t.Fatal(err)
	}
	built, err := mergeData(linked)
	if err != nil {
		t.Fatal(err)
	}

	before, after := dataOf(t, linked), dataOf(t, built)
	t.Logf("%d data segments became %d; %d bytes became %d", len(before), len(after), len(linked), len(built))
	if len(after) > len(before)/10 {
		t.Errorf("%d data segments became %d, want a tenth or fewer", len(before), len(after))
	}
	a, _ := readSections(linked)
	b, _ := readSections(built)
	if len(a) != len(b) {
		t.Fatalf("%d sections became %d", len(a), len(b))
	}
	for i := range a {
		if a[i].id != b[i].id || (a[i].id != secData && !bytes.Equal(a[i].raw, b[i].raw)) {
			t.Errorf("section %d (id %d) changed", i, a[i].id)
		}
	}

	ctx := context.Background()
	// The interpreter compiles at once; the memory is all this looks at.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	memory := func(mod []byte) []byte {
		t.Helper()
		// No start function: memory as instantiation leaves it.
		m, err := rt.InstantiateWithConfig(ctx, mod, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		mem, ok := m.Memory().Read(0, m.Memory().Size())
		if !ok {
			t.Fatal("reading memory")
		}
		return bytes.Clone(mem)
	}
	if !bytes.Equal(memory(linked), memory(built)) {
		t.Error("the merged module starts with other memory")
	}
}

func TestExperimentDropsAnUnknownOne(t *testing.T) {
	env := append(os.Environ(), "GOEXPERIMENT=")
	got, err := experiment(env, "nosuchexperimentatall")
	if err != nil || got != "" {
		t.Errorf("experiment(nosuchexperimentatall) = %q, %v; want it dropped", got, err)
	}
	env = append(env, "GOEXPERIMENT=nosuchexperimentatall")
	if got, err := experiment(env, noGreenTea); err == nil {
		t.Errorf("with GOEXPERIMENT unknown, experiment = %q; want go env's error", got)
	}
}

func TestWriteZstd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.wasm")
	want := bytes.Repeat([]byte("matcher "), 1000)
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteZstd(path)
	if err == ErrNoZstd {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	zst, err := os.ReadFile(path + ".zst")
	if err != nil {
		t.Fatal(err)
	}
	// A zstd frame, smaller than the input; the server's tests decode it.
	if !bytes.HasPrefix(zst, []byte{0x28, 0xb5, 0x2f, 0xfd}) || len(zst) >= len(want)/10 {
		t.Errorf("matcher.wasm.zst is %d bytes starting %x", len(zst), zst[:min(len(zst), 4)])
	}
}

func TestWriteZstdWithoutTheCLI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.wasm")
	if err := os.WriteFile(path+".zst", []byte("from an earlier build"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := WriteZstd(path); err != ErrNoZstd {
		t.Fatalf("WriteZstd without zstd on PATH: %v, want ErrNoZstd", err)
	}
	if _, err := os.Stat(path + ".zst"); !os.IsNotExist(err) {
		t.Errorf("the earlier build's .zst is still there (%v)", err)
	}
}
