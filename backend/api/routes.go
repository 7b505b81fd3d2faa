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
	// What the page showed: the impression beacon, which gives in-page ads
	// their click tokens.
	mux.Handle("GET /v1/impression", s.jsonp(s.limitKey(s.impression)))

	// Reports, for a partner's or an advertiser's report token; same-origin
	// only (the dashboard), never JSONP.
	mux.Handle("GET /v2/report", s.plain(s.limitReports(s.reportRequest)))
	// The clicks themselves, one by one, under the reports' token and limit.
	mux.Handle("GET /v2/clicks", s.plain(s.limitReports(s.clickList)))
	// An advertiser's daily budget and its spend, under the same.
	mux.Handle("GET /v2/budget", s.plain(s.limitReports(s.budgetRequest)))

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
	// The publisher's tag names widget.js's path, so it cannot be
	// immutable; five minutes bounds how long a fix takes to reach pages.
	mux.Handle("GET /widget.js", s.plain(s.webFile("widget.js", "text/javascript; charset=utf-8", s.servedWidget, "public, max-age=300")))
	mux.Handle("GET /demo/", s.demo())

	// The report dashboard: a page of its own, for partners and
	// advertisers, over /v2/report.
	mux.Handle("GET /dashboard", s.dashboard("dashboard.html", "text/html; charset=utf-8"))
	mux.Handle("GET /dashboard.js", s.dashboard("dashboard.js", "text/javascript; charset=utf-8"))
	mux.Handle("GET /dashboard.css", s.dashboard("dashboard.css", "text/css; charset=utf-8"))

	// CORS preflight of a /v2 request.
	mux.Handle("OPTIONS /v2/", s.plain(s.preflight))
	// A /v2 path that names no endpoint (a typo) answers its 404 as the
	// API does, readable by a page's fetch and as JSONP, so the page sees
	// the path named rather than a failed request.
	mux.Handle("GET /v2/", s.jsonp(s.notFound))

	mux.Handle("/", s.plain(s.notFound))
}
