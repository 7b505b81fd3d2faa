package main

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/adlink/adlink/internal/wasmhost"
)

// TestForbiddenImports keeps what the module must not carry out of its
// build, its own code and that of match and contract, which it compiles
// in: each of these costs kilobytes on every first view (strings brings
// unicode's tables and initialisation; match has its own small helpers).
func TestForbiddenImports(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(cmd.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"fmt", "encoding/json", "log", "os", "net/url", "net/http", "time/tzdata", "reflect", "encoding/binary", "hash/crc32", "strings", "unicode", "sync"}
	prefixes := []string{"golang.org/x/text/", "github.com/klauspost/compress", "github.com/goccy/", "github.com/json-iterator/", "github.com/go-json-experiment/"}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f {
				t.Errorf("matcher.wasm imports %s", d)
			}
		}
		for _, p := range prefixes {
			if strings.HasPrefix(d, p) {
				t.Errorf("matcher.wasm imports %s", d)
			}
		}
	}
	for _, own := range []string{"github.com/adlink/adlink/match", "github.com/adlink/adlink/contract"} {
		if !slices.Contains(deps, own) {
			t.Errorf("matcher.wasm does not import %s: the check does not cover it", own)
		}
	}
	if len(deps) < 5 {
		t.Fatalf("go list printed %d packages; the check saw nothing", len(deps))
	}
}

// TestInitializedWithoutInitialize: the matcher ships its Go runtime
// started (module.Preinit), so a host that never calls _initialize gets
// the same answers as one that does.
func TestInitializedWithoutInitialize(t *testing.T) {
	ctx := context.Background()
	host := wasmhost.Shared(t)
	plain, err := host.InstantiateWith(ctx, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	started, err := host.Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer started.Close(ctx)
	shard, _, reqs := demoDE(t)
	for _, in := range []*wasmhost.Instance{plain, started} {
		if err := in.LoadShard(ctx, shard); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range reqs[:20] {
		req := r.Guest(redirectURL)
		a, err := plain.PageJSON(ctx, req)
		if err != nil {
			t.Fatalf("without _initialize: %v", err)
		}
		b, err := started.PageJSON(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatalf("%s: without _initialize %s, with %s", req, a, b)
		}
	}
}

// TestStatusesAgree: the host reads load_shard's and load_fragment's
// statuses as the module writes them.
func TestStatusesAgree(t *testing.T) {
	if wasmhost.StatusOK != statusOK || wasmhost.StatusBadArgs != statusBadArgs || wasmhost.StatusBadShard != statusBadShard {
		t.Errorf("wasmhost's statuses %d, %d, %d; the module's %d, %d, %d",
			wasmhost.StatusOK, wasmhost.StatusBadArgs, wasmhost.StatusBadShard, statusOK, statusBadArgs, statusBadShard)
	}
}
