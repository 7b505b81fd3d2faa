// Command wasm is adlink's matcher compiled for the page: a
// GOOS=wasip1 -buildmode=c-shared reactor over match/ whose answers are the
// server's, byte for byte, for the same shard and request.
//
// The module is built with its Go runtime started (wasm/module.Preinit ran
// _initialize when it was built), so a host calls the exports at once; an
// _initialize call, which hosts of a reactor make, does nothing. The
// exports:
//
//	alloc(n) ptr              a buffer of n bytes (contents undefined), kept
//	                          alive until free(ptr); a host holds a few at
//	                          once (each call scans those held)
//	free(ptr)                 releases a buffer from alloc or a result
//	load_shard(ptr, n) status matches against the shard in the buffer, which
//	                          the module then owns (do not free it); 0 is
//	                          success, 1 a bad buffer, 2 a bad shard
//	match_search(ptr, n) u64  /v2/search/link for the request in the buffer
//	match_page(ptr, n) u64    /v2/page/link for a page's title and text
//	load_fragment(k, ptr, n) status
//	                          adds fragment k of a shard cut into fragments
//	                          (match.Index.EncodePage), which the module then
//	                          owns; 0 is success, 1 a bad buffer, 2 not the
//	                          shard's fragment k
//
// The match calls return ptr<<32|len of the JSON answer, {"link":[...]} or
// {"error":{...}}, which stays alive until the host frees ptr; 0 means the
// request buffer was not one from alloc. On a shard cut into fragments the
// answer may instead be {"need":[k,...]}: the fragments that hold the
// strings of the ads found. The host loads them and calls again, and gets
// the answer. Requests are described in package contract (ParseModule).
// One instance serves one call at a time.
//
// Its runtime runs with GOGC=200, read when it was built (wasm/module's
// env): the shard is most of the live heap, and at Go's default of 100 the
// runtime collects so often that matching a page's text is much slower
// (BenchmarkPage, see docs/PERFORMANCE.md), for a heap at most 3x the live
// one instead of 2x. A host's environment is not read again.
package main

import (
	"github.com/adlink/adlink/contract"
	"github.com/adlink/adlink/match"
)

// The load_shard statuses.
const (
	statusOK       = 0
	statusBadArgs  = 1
	statusBadShard = 2
)

// matcher is the module's state: the loaded shard.
type matcher struct {
	ix *match.Index
	// pairs is the last request's parameters, its memory reused by the
	// next one.
	pairs []contract.Pair
}

// maxReusedPairs bounds the parameter memory kept between requests: one
// full of made-up names does not hold it for good.
const maxReusedPairs = 64

// answer appends the JSON answer to a request to dst: the server's error
// body for the first problem, with every problem's message, or the links.
func (m *matcher) answer(req string, page bool, dst []byte) []byte {
	if cap(m.pairs) > maxReusedPairs {
		m.pairs = nil
	}
	l, problems := contract.ParseModule(req, page, &m.pairs)
	if problems != nil {
		return contract.AppendError(dst, contract.Join(problems), "")
	}
	if m.ix == nil {
		return contract.AppendError(dst, contract.NoShard(), "")
	}
	o := l.Links.Options()
	return m.ix.AppendResponse(dst, m.ix.Match(&l.Query), &o)
}
