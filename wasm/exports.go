//go:build wasip1

package main

import (
	"unsafe"

	"github.com/adlink/adlink/match"
)

func main() {}

var (
	// pinned keeps every buffer the host may still read or write alive:
	// the GC does not move objects, but it reclaims what Go no longer
	// references, and a pointer held by the host is not a reference.
	pinned = make(map[uint32][]byte)
	state  matcher
)

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// pin keeps b alive until free and returns its address.
func pin(b []byte) uint32 {
	if cap(b) == 0 {
		b = make([]byte, 0, 1)
	}
	p := addr(b[:cap(b)])
	pinned[p] = b[:cap(b)]
	return p
}

// buffer returns the first n bytes of a buffer from alloc.
func buffer(p, n uint32) ([]byte, bool) {
	b, ok := pinned[p]
	if !ok || uint64(n) > uint64(len(b)) {
		return nil, false
	}
	return b[:n], true
}

//go:wasmexport alloc
func alloc(n uint32) uint32 {
	return pin(make([]byte, n))
}

//go:wasmexport free
func free(p uint32) {
	delete(pinned, p)
}

//go:wasmexport load_shard
func loadShard(p, n uint32) uint32 {
	b, ok := buffer(p, n)
	if !ok {
		return statusBadArgs
	}
	ix, err := match.Open(b)
	if err != nil {
		return statusBadShard
	}
	// The index reads b in place from now on, and keeps it alive.
	delete(pinned, p)
	state.ix = ix
	return statusOK
}

//go:wasmexport match_search
func matchSearch(p, n uint32) uint64 { return call(p, n, false) }

//go:wasmexport match_page
func matchPage(p, n uint32) uint64 { return call(p, n, true) }

func call(p, n uint32, page bool) uint64 {
	req, ok := buffer(p, n)
	if !ok {
		return 0
	}
	out := state.answer(string(req), page)
	return uint64(pin(out))<<32 | uint64(len(out))
}
