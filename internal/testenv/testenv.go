// Package testenv is what test binaries set up before their tests run:
// matcher.wasm built from this tree, once per binary, and where Chromium
// is for the browser tests.
package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/adlink/adlink/backend/shards"
	"github.com/adlink/adlink/wasm/module"
)

// Chromium is Debian's headless-capable browser; .ci/run installs it.
const Chromium = "/usr/bin/chromium"

// HasChromium reports whether Chromium is installed.
func HasChromium() bool {
	_, err := os.Stat(Chromium)
	return err == nil
}

// NeedChromium skips the test when there is no Chromium to run it in.
func NeedChromium(tb testing.TB) {
	tb.Helper()
	if !HasChromium() {
		tb.Skip("skipping: no Chromium at " + Chromium + "; install Debian's chromium package (.ci/run does) to run the browser tests")
	}
}

// Options say what Build makes.
type Options struct {
	// Matcher builds matcher.wasm with the flags of make wasm, so that
	// sizes measured are the served ones.
	Matcher bool
	// Zstd also compresses it as make wasm does where the zstd CLI is
	// installed (MatcherZstd).
	Zstd bool
}

var matcher, matcherZstd []byte

// Build makes what opts ask for. A TestMain calls it, or Run, once before
// the tests.
func Build(opts Options) error {
	if !opts.Matcher {
		return nil
	}
	var err error
	if matcher, err = module.Matcher(); err != nil {
		return err
	}
	if opts.Zstd {
		matcherZstd, err = Zstd(matcher)
	}
	return err
}

// Run is the body of a TestMain: Build, then the tests. It returns the
// exit code for os.Exit, so that the TestMain's deferred cleanup runs
// first; a build that fails is reported and fails the run.
func Run(m *testing.M, opts Options) int {
	if err := Build(opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// ShareCompression lets the servers a test binary starts share the shards
// they compress (shards.ShareCompression), unless the binary runs
// benchmarks, which time the compression. A TestMain calls it before its
// tests; it parses the flags to know.
func ShareCompression() {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	shards.ShareCompression()
}

// Matcher returns matcher.wasm as Build made it, or nil when it did not.
func Matcher() []byte { return matcher }

// MatcherZstd returns matcher.wasm.zst as make wasm writes it with the zstd
// CLI, or nil without the CLI or Options.Zstd.
func MatcherZstd() []byte { return matcherZstd }

// Zstd returns b compressed as make wasm compresses matcher.wasm, by the
// zstd CLI, or nil where the CLI is not installed.
func Zstd(b []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "adlink-testenv-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "matcher.wasm")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	switch err := module.WriteZstd(path); {
	case errors.Is(err, module.ErrNoZstd):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return os.ReadFile(path + ".zst")
}
