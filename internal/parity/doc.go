// Package parity proves that the page's module answers as the server does,
// byte for byte: its tests run matcher.wasm in wazero (internal/wasmhost)
// beside the server's own index and handler over the same catalogs and
// requests, and its benchmarks measure the module as the server serves it.
// It holds only tests; the module's own package (wasm/) stays free of the
// backend, so that it vets and builds for GOOS=wasip1.
package parity
