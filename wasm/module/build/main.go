// Command build writes web/matcher/dist/matcher.wasm for "make wasm"
// exactly as the tests build it (module.Build), and beside it
// matcher.wasm.zst, compressed by the zstd CLI when it is on PATH, for the
// server to embed and serve in place of its own zstd encoding.
//
// Usage:
//
//	go run ./wasm/module/build [-o web/matcher/dist/matcher.wasm] [-zstd=false] [package]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/adlink/adlink/wasm/module"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "web/matcher/dist/matcher.wasm", "the module to write; its zstd goes to the same path + .zst")
	zst := fs.Bool("zstd", true, "write the module's zstd beside it, with the zstd command")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pkg := module.Path
	switch fs.NArg() {
	case 0:
	case 1:
		pkg = fs.Arg(0)
	default:
		return errors.New("at most one package to build")
	}
	if err := module.Build(pkg, *out); err != nil {
		return err
	}
	if !*zst {
		return nil
	}
	err := module.WriteZstd(*out)
	if errors.Is(err, module.ErrNoZstd) {
		fmt.Fprintf(stderr, "build: %v: no %s.zst, so the server serves klauspost/compress's zstd, which is larger\n", err, *out)
		return nil
	}
	return err
}
