// Package module builds matcher.wasm as "make wasm" does, for the tests and
// benchmarks that run it: they build it themselves, so they need neither
// make nor a web/matcher.wasm left from an earlier build.
package module

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// Path is the import path of the matcher's command.
const Path = "github.com/adlink/adlink/wasm"

// Build compiles the Go package pkg (an import path, a directory or a .go
// file) to a GOOS=wasip1 reactor at out, with the flags of "make wasm".
func Build(pkg, out string) error {
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return errors.New("building " + pkg + " for wasip1: " + err.Error() + "\n" + stderr.String())
	}
	return nil
}

// Matcher builds the matcher's module and returns its bytes.
func Matcher() ([]byte, error) {
	dir, err := os.MkdirTemp("", "adlink-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "matcher.wasm")
	if err := Build(Path, out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}
