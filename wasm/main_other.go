//go:build !wasip1

package main

import "os"

// Built for anything but wasip1 the command only says how to build it; the
// request parsing beside it is compiled natively for the tests.
func main() {
	os.Stderr.WriteString("build with: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o web/matcher/dist/matcher.wasm ./wasm\n")
	os.Exit(2)
}
