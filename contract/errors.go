package contract

import "github.com/adlink/adlink/match"

// The codes of the error body, {"error":{"code":...}}. A client can branch
// on them; the message is for people.
const (
	// CodeMissingParameter: a required parameter is absent or blank (400).
	CodeMissingParameter = "missing_parameter"
	// CodeInvalidParameter: a parameter's value is not allowed, is given
	// twice, or the query string is malformed (400).
	CodeInvalidParameter = "invalid_parameter"
	// CodeUnknownAPIKey: no partner has the api_key (401).
	CodeUnknownAPIKey = "unknown_api_key"
	// CodeForeignSite: the site_id is not the api_key's (403).
	CodeForeignSite = "site_not_allowed"
	// CodeForeignURL: a page URL outside the site's domains (403).
	CodeForeignURL = "url_not_allowed"
	// CodeNotFound: no such ad, shard, file or endpoint (404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: a method other than GET or HEAD (or OPTIONS,
	// the CORS preflight, under /v2); every endpoint is read-only (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeURITooLong: a request URL longer than the server reads (414).
	CodeURITooLong = "uri_too_long"
	// CodeHeadersTooLarge: request header fields larger together than the
	// server reads (431).
	CodeHeadersTooLarge = "headers_too_large"
	// CodeRateLimited: over a rate limit (429 with Retry-After).
	CodeRateLimited = "rate_limited"
	// CodeQueueFull: an unseen page that cannot be queued now (503 with
	// Retry-After).
	CodeQueueFull = "queue_full"
	// CodeNotReady: /readyz while the server cannot serve: starting,
	// shutting down, or its store closed (503).
	CodeNotReady = "not_ready"
	// CodeInternal: a fault of the server (500).
	CodeInternal = "internal_error"
	// CodeNoShard: the page's module was asked before a shard was loaded.
	CodeNoShard = "no_shard"
)

// Problem is what is wrong with a request: its code, the parameter at
// fault (if any) and a message for the client.
type Problem struct {
	Code, Param, Message string
	_                    [0]func() // not comparable: no equality function in the module
}

// Join returns the problem one answer reports for all of them: the first
// one's code and parameter, and every message, separated by "; ".
func Join(problems []Problem) Problem {
	p := problems[0]
	for _, q := range problems[1:] {
		p.Message += "; " + q.Message
	}
	return p
}

// AppendError appends the error body of p to dst, with the request id
// when it is not "", which a client quotes when it reports a fault of the
// server:
//
//	{"error":{"code":"invalid_parameter","message":"...","param":"q"}}
//
// The server and the page's module both write it.
func AppendError(dst []byte, p Problem, requestID string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = match.AppendJSONString(dst, p.Code)
	dst = append(dst, `,"message":`...)
	dst = match.AppendJSONString(dst, p.Message)
	if p.Param != "" {
		dst = append(dst, `,"param":`...)
		dst = match.AppendJSONString(dst, p.Param)
	}
	if requestID != "" {
		dst = append(dst, `,"request_id":`...)
		dst = match.AppendJSONString(dst, requestID)
	}
	return append(dst, "}}"...)
}

// The problems of requests well formed but refused, as the server and the
// module word them.

// UnknownAPIKey is the problem of an api_key no partner has.
func UnknownAPIKey() Problem {
	return Problem{Code: CodeUnknownAPIKey, Param: "api_key", Message: "api_key is not known"}
}

// ForeignSite is the problem of a site_id that is not the api_key's.
func ForeignSite(siteID string) Problem {
	return Problem{Code: CodeForeignSite, Param: "site_id", Message: "site_id " + match.Quote(siteID) + " does not belong to this api_key"}
}

// ForeignURL is the problem of a page URL outside the site's domains.
func ForeignURL(siteID string) Problem {
	return Problem{Code: CodeForeignURL, Param: "url", Message: "url must be on one of the domains of site " + match.Quote(siteID)}
}

// QueueFull is the problem of an unseen page that cannot be queued now.
func QueueFull() Problem {
	return Problem{Code: CodeQueueFull, Message: "too many pages are waiting for analysis; retry later"}
}

// NoAd is the problem of a click on an adId the catalog does not have.
func NoAd(adID string) Problem {
	return Problem{Code: CodeNotFound, Param: "adId", Message: "no ad has adId " + match.Quote(adID)}
}

// NoShards is the problem of a shard manifest asked of a server that
// serves no shards.
func NoShards() Problem {
	return Problem{Code: CodeNotFound, Message: "this server serves no shards"}
}

// NoShard is the page's module's problem when it is asked before a shard
// is loaded.
func NoShard() Problem {
	return Problem{Code: CodeNoShard, Message: "no shard is loaded: call load_shard first"}
}

// Internal is the problem of a fault of the server; it tells the client
// nothing of it.
func Internal() Problem {
	return Problem{Code: CodeInternal, Message: "internal error"}
}
