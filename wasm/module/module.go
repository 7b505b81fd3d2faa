// Package module builds matcher.wasm as "make wasm" does (make runs the
// command in build/, which calls Build), for the tests and benchmarks that
// run it: they build it themselves, so they need neither make nor a
// web/matcher/dist/matcher.wasm left from an earlier build.
package module

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Path is the import path of the matcher's command.
const Path = "github.com/adlink/adlink/wasm"

// ZstdLevel is the level WriteZstd runs the zstd CLI at.
const ZstdLevel = 19

// noGreenTea turns off Go 1.26's Green Tea garbage collector, whose code
// costs the module bytes on every first view (docs/PERFORMANCE.md); a page's matcher allocates little
// and lives briefly, so the older collector does as well. A later Go may
// drop the experiment and reject its name: then Build goes without it.
const noGreenTea = "nogreenteagc"

// Build compiles the Go package pkg (an import path, a directory or a .go
// file) to a GOOS=wasip1 reactor at out, as "make wasm" does: with
// -trimpath -ldflags='-w -buildid=' and the name section dropped, the
// bytes -s gives (a build ID is 80 bytes nothing compresses, and the same
// sources now give the same module), and
// GOEXPERIMENT=nogreenteagc where the toolchain knows it, then with its
// data segments merged (mergeData). The matcher (Path) is then
// initialized (Preinit) and its start-up's code made to trap
// (stubStartup): a page runs none of it. Any other package is left a
// plain reactor, as the baselines of docs/PERFORMANCE.md want.
//
// The matcher's own package (Path: the exports) is
// compiled without inlining: it runs once per call, not per ad, and its
// code is then smaller (docs/PERFORMANCE.md).
// match/, where the time goes, is inlined as usual.
func Build(pkg, out string) error {
	mod, err := build(pkg, env)
	if err != nil {
		return err
	}
	return writeFile(out, mod)
}

// env is the environment the matcher's runtime starts in: GOGC=200 (see
// wasm/matcher.go), so it does not collect twice as often as a page's
// matching needs, and the collector never shrinking a goroutine's stack
// (gcshrinkstackoff=1), so the one that runs the exports keeps the stack
// its start-up grew for the first match (wasm/warm.go). Preinit runs the
// start-up with it, so it is in the module; a host's environment is not
// read again.
var env = map[string]string{"GOGC": "200", "GODEBUG": "gcshrinkstackoff=1"}

// build returns the module Build writes for pkg, the matcher's initialized
// in env.
func build(pkg string, env map[string]string) ([]byte, error) {
	named, err := link(pkg)
	if err != nil {
		return nil, err
	}
	names, err := functionNames(named)
	if err != nil {
		return nil, err
	}
	mod, err := withoutNames(named)
	if err != nil {
		return nil, err
	}
	if mod, err = mergeData(mod); err != nil {
		return nil, fmt.Errorf("merging the data segments of %s: %w", pkg, err)
	}
	if pkg != Path {
		return mod, nil
	}
	if mod, err = Preinit(mod, env); err != nil {
		return nil, fmt.Errorf("initializing %s: %w", pkg, err)
	}
	return stubStartup(mod, names)
}

// link runs go build and returns the module as Go's linker wrote it,
// with its name section (-s left out): build reads the functions' names
// and drops the section, which leaves the module -s gives.
func link(pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "adlink-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	exp, err := experiment(env, noGreenTea)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "linked.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-w -buildid=", "-gcflags="+Path+"=-l", "-o", out, pkg)
	cmd.Env = append(env, "GOEXPERIMENT="+exp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building %s for wasip1: %v\n%s", pkg, err, stderr.Bytes())
	}
	return os.ReadFile(out)
}

// experiment is the GOEXPERIMENT to build with: the one configured plus
// add, or the one configured alone when the toolchain does not know add.
// "go env" rejects an unknown experiment as "go build" does, without
// building anything.
func experiment(env []string, add string) (string, error) {
	goenv := func(extra ...string) (string, error) {
		cmd := exec.Command("go", "env", "GOEXPERIMENT")
		cmd.Env = append(env[:len(env):len(env)], extra...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go env GOEXPERIMENT: %v\n%s", err, stderr.Bytes())
		}
		return strings.TrimSpace(string(out)), nil
	}
	configured, err := goenv()
	if err != nil {
		return "", err
	}
	want := add
	if configured != "" {
		want = configured + "," + add
	}
	if _, err := goenv("GOEXPERIMENT=" + want); err != nil {
		return configured, nil
	}
	return want, nil
}

// writeFile replaces path with b, through a temporary file beside it so
// that a server starting meanwhile never reads half a module.
func writeFile(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Matcher builds the matcher's module and returns its bytes. In a binary
// built with -race (the tests' TestMains, under make test) it runs "make
// wasm"'s command instead, built without, which writes the same bytes:
// the race detector slows wazero running the Go runtime's start-up
// (Preinit) from about a second to 15, in every package that builds the
// matcher.
func Matcher() ([]byte, error) {
	if raceEnabled {
		return matcherWithoutRace()
	}
	return buildBytes(Path, "")
}

// matcherWithoutRace runs the build command (wasm/module/build) with go
// run, writing no zstd, and returns the module it wrote.
func matcherWithoutRace() ([]byte, error) {
	dir, err := os.MkdirTemp("", "adlink-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "matcher.wasm")
	cmd := exec.Command("go", "run", Path+"/module/build", "-zstd=false", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go run %s/module/build: %v\n%s", Path, err, stderr.Bytes())
	}
	return os.ReadFile(out)
}

// Empty builds an empty Go reactor the way Build builds the matcher (one
// export, nop) and returns its bytes: what the Go runtime alone costs, the
// baseline beside the matcher's size and start-up.
func Empty() ([]byte, error) {
	return Program("package main\n\nfunc main() {}\n\n//go:wasmexport nop\nfunc nop() {}\n")
}

// Program builds the one-file Go program src (package main, importing what
// this module requires) the way Build builds the matcher and returns its
// bytes.
func Program(src string) ([]byte, error) { return buildBytes("", src) }

// buildBytes builds pkg, or the one-file program src when pkg is empty,
// and returns the module's bytes.
func buildBytes(pkg, src string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "adlink-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if pkg == "" {
		pkg = filepath.Join(dir, "main.go")
		if err := os.WriteFile(pkg, []byte(src), 0o644); err != nil {
			return nil, err
		}
	}
	out := filepath.Join(dir, "module.wasm")
	if err := Build(pkg, out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// ErrNoZstd is WriteZstd's error when the zstd CLI is not on PATH.
var ErrNoZstd = errors.New("the zstd command is not on PATH")

// WriteZstd compresses the file at path to path+".zst" with the zstd CLI
// at ZstdLevel: the reference encoder, which makes matcher.wasm smaller
// than klauspost/compress's best, so the server serves its output
// when it finds it (shards.Blob.UseZstd). Without the CLI it removes a
// path+".zst" left from an earlier build and returns ErrNoZstd.
func WriteZstd(path string) error {
	zst := path + ".zst"
	bin, err := exec.LookPath("zstd")
	if err != nil {
		if err := os.Remove(zst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return ErrNoZstd
	}
	// Level 19 keeps the window at most 8 MB, the most a browser decodes
	// (RFC 9659), whatever the module's size; --ultra levels do not.
	cmd := exec.Command(bin, fmt.Sprintf("-%d", ZstdLevel), "-q", "-f", "-o", zst, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(zst)
		return fmt.Errorf("zstd -%d %s: %v\n%s", ZstdLevel, path, err, stderr.Bytes())
	}
	return nil
}
