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
	// references, and a pointer held by the host is not a reference. A
	// few are out at once (a request, its answer, a shard or fragment on
	// its way in), so a list scanned costs the module less than a map,
	// each of whose operations took several runtime calls.
	pinned []pinnedBuf
	// spare holds freed buffers for the next alloc and result: in wazero
	// a fresh allocation of a few KB costs most of a small query, reusing
	// memory next to nothing.
	spare buffers
	state matcher
)

// buffers is a small free list of byte buffers, bounded in count and bytes
// so a large request once does not hold memory for good.
type buffers struct {
	list  [][]byte
	bytes int
}

const (
	maxSpare      = 8
	maxSpareBytes = 4 << 20
)

// get returns a buffer of length n, reused when a spare one fits.
func (s *buffers) get(n int) []byte {
	for i, b := range s.list {
		if cap(b) >= n {
			s.list[i] = s.list[len(s.list)-1]
			s.list = s.list[:len(s.list)-1]
			s.bytes -= cap(b)
			return b[:n]
		}
	}
	return make([]byte, n)
}

// put keeps b for reuse when there is room.
func (s *buffers) put(b []byte) {
	if len(s.list) < maxSpare && s.bytes+cap(b) <= maxSpareBytes {
		s.list = append(s.list, b)
		s.bytes += cap(b)
	}
}

type pinnedBuf struct {
	p uint32
	b []byte
}

// lookup returns the index of the buffer pinned at p, or -1.
func lookup(p uint32) int {
	for i := range pinned {
		if pinned[i].p == p {
			return i
		}
	}
	return -1
}

// unpin lets go of the buffer pinned at p and returns it.
func unpin(p uint32) ([]byte, bool) {
	i := lookup(p)
	if i < 0 {
		return nil, false
	}
	b, last := pinned[i].b, len(pinned)-1
	pinned[i] = pinned[last]
	pinned[last] = pinnedBuf{}
	pinned = pinned[:last]
	return b, true
}

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// pin keeps b alive until free and returns its address.
func pin(b []byte) uint32 {
	if cap(b) == 0 {
		b = make([]byte, 0, 1)
	}
	p := addr(b[:cap(b)])
	pinned = append(pinned, pinnedBuf{p, b[:cap(b)]})
	return p
}

// buffer returns the first n bytes of a buffer from alloc.
func buffer(p, n uint32) ([]byte, bool) {
	i := lookup(p)
	if i < 0 || uint64(n) > uint64(len(pinned[i].b)) {
		return nil, false
	}
	return pinned[i].b[:n], true
}

//go:wasmexport alloc
func alloc(n uint32) uint32 {
	return pin(spare.get(int(n)))
}

//go:wasmexport free
func free(p uint32) {
	if b, ok := unpin(p); ok {
		spare.put(b)
	}
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
	unpin(p)
	state.ix = ix
	return statusOK
}

//go:wasmexport load_fragment
func loadFragment(k, p, n uint32) uint32 {
	b, ok := buffer(p, n)
	if !ok {
		return statusBadArgs
	}
	if state.ix == nil || state.ix.LoadFragment(int(k), b) != nil {
		return statusBadShard
	}
	unpin(p)
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
	// The request is copied: the reused parameter map keeps strings of
	// it past the call, and the host reuses the buffer.
	out := state.answer(string(req), page, spare.get(4096)[:0])
	return uint64(pin(out))<<32 | uint64(len(out))
}
