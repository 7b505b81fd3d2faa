// Package contract is adlink's request contract as code: the parameter
// rules of every endpoint, the parse of a search, page, shard manifest and
// click request into what package match needs (match.Query and
// match.LinkOptions), the requests of the page's module, every error code
// and the messages of the refusals, the JSONP callback rule and the click
// URL format.
//
// The server (backend/api) and the page's module (wasm) each call it once
// a request, so the two read a request alike and answer alike, byte for
// byte. It is compiled into the module, which every first view downloads:
// like match, it imports no fmt, strings, net/url, reflection-based JSON or
// x/text (wasm's TestForbiddenImports keeps it so).
package contract
