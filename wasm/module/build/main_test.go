package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adlink/adlink/wasm/module"
)

// TestRunWritesWhatTheTestsBuild: "make wasm" gives the module the tests
// and benchmarks build (module.Matcher), and its zstd -19 beside it when
// the CLI is there.
func TestRunWritesWhatTheTestsBuild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "matcher.wasm")
	var stderr bytes.Buffer
	if err := run([]string{"-o", out}, &stderr); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := module.Matcher()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("wrote %d bytes, module.Matcher gives %d", len(got), len(want))
	}
	_, zstErr := os.Stat(out + ".zst")
	if _, err := exec.LookPath("zstd"); err != nil {
		if zstErr == nil || !strings.Contains(stderr.String(), "klauspost") {
			t.Errorf("without the zstd CLI: .zst %v, stderr %q", zstErr, stderr.String())
		}
	} else if zstErr != nil {
		t.Error(zstErr)
	}
}

func TestRunRejectsTwoPackages(t *testing.T) {
	if err := run([]string{"a", "b"}, &bytes.Buffer{}); err == nil {
		t.Error("two packages: no error")
	}
}
