// The requests the page made for matcher.wasm.
performance.getEntriesByType("resource").filter(e => new URL(e.name).pathname === "/matcher.wasm").length
