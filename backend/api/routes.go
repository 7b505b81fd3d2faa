package api

import "net/http"

// routes registers every route of the service, in one place.
func (s *server) routes(mux *http.ServeMux) {
	// Search context.
	mux.Handle("GET /v2/search/link", s.jsonp(s.limitKey(s.search)))

	// Page context.
	mux.Handle("GET /v2/page/link", s.jsonp(s.limitKey(s.page)))

	// Clicks.
	mux.Handle("GET /v1/redirect", s.plain(s.limitIP(s.redirect)))

	// Operations.
	mux.Handle("GET /healthz", s.plain(s.healthz))
	mux.Handle("GET /readyz", s.plain(s.readyz))
	mux.Handle("GET /openapi.json", s.plain(s.openAPI))

	// In the page: the market shards, matcher.wasm, widget.js and the demo
	// publisher pages.
	mux.Handle("GET /v2/shards", s.jsonp(s.limitKey(s.shardManifest)))
	mux.Handle("GET /v2/shards/{sha256}", s.public(s.shard))
	mux.Handle("GET /v2/shards/{sha256}/{k}", s.public(s.fragment))
	mux.Handle("GET /matcher.wasm", s.public(s.matcherWasm))
	mux.Handle("GET /widget.js", s.plain(s.webFile("widget.js", "text/javascript; charset=utf-8", stripComments)))
	mux.Handle("GET /demo/", s.demo())

	// CORS preflight of a /v2 request.
	mux.Handle("OPTIONS /v2/", s.plain(s.preflight))

	mux.Handle("/", s.plain(s.notFound))
}
