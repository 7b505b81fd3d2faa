// Package adlink holds the files the adlink binary carries with it: the demo
// catalog and partner registry, so that "make run" needs no set-up.
package adlink

import _ "embed"

// DemoCatalog is the embedded demo catalog, a JSON-lines feed.
//
//go:embed testdata/catalog/demo.jsonl
var DemoCatalog []byte
