// Package matcher carries the page's matcher module into the server
// binary: matcher.wasm and its zstd CLI encoding, matcher.wasm.zst, as
// "make wasm" writes them into dist/. It is a package of its own so that
// rebuilding the module rebuilds only what serves it.
package matcher

import "embed"

// dist holds at least its README, so that a fresh clone, where the module
// is not built, still compiles.
//
//go:embed all:dist
var dist embed.FS

// Dir is where "make wasm" writes the module, relative to the repository.
const Dir = "web/matcher/dist"

// Files returns the embedded matcher.wasm, nil when it was not built, and
// matcher.wasm.zst, nil when the zstd CLI was not there to write it.
func Files() (wasm, zst []byte) {
	wasm, err := dist.ReadFile("dist/matcher.wasm")
	if err != nil {
		return nil, nil
	}
	zst, err = dist.ReadFile("dist/matcher.wasm.zst")
	if err != nil {
		return wasm, nil
	}
	return wasm, zst
}
