// Package adlink holds the files the adlink binary carries with it: the demo
// catalog, the widget and the demo pages, so that "make run" needs no
// set-up.
package adlink

import "embed"

// DemoCatalog is the embedded demo catalog, a JSON-lines feed.
//
//go:embed testdata/catalog/demo.jsonl
var DemoCatalog []byte

// Web holds what browsers load from adlink besides the API: widget.js and
// the demo publisher pages with their logos, which publisher pages load,
// and the report dashboard, under web/.
// matcher.wasm is embedded by package web/matcher, so that rebuilding it
// does not rebuild every package that embeds the catalog.
//
//go:embed web/widget.js web/demo web/dashboard.html web/dashboard.js web/dashboard.css
var Web embed.FS
