package module

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// mergeGap is the longest run of zero bytes mergeData fills in to join two
// data segments. Go's linker emits ~24,000 segments for the matcher, most
// of them one symbol each, and each costs a header of 8 to 12 bytes that
// compresses poorly; a run of zeros costs next to nothing once
// compressed. 64 saved the most: a shorter gap saves less, a longer one no
// more (docs/PERFORMANCE.md).
const mergeGap = 64

// Section ids of the WebAssembly binary format
// (https://webassembly.github.io/spec/core/binary/modules.html).
const (
	secCustom    = 0
	secData      = 11
	secDataCount = 12
	secTag       = 13 // exception handling, between memory and global
)

// sectionRank is where each known section may appear: non-custom sections
// come at most once each, in this order.
var sectionRank = [...]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, secTag: 6, 6: 7, 7: 8, 8: 9, 9: 10, secDataCount: 11, 10: 12, secData: 13}

var wasmHeader = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

// section is one section of a module: raw is all of it (id, size and
// body), copied as is unless it is the data or datacount section.
type section struct {
	id   byte
	raw  []byte
	body []byte
}

// segment is one active data segment of memory 0: data is copied to
// memory at off when the module is instantiated.
type segment struct {
	off  uint32
	data []byte
}

// end is the offset just past the segment.
func (s segment) end() uint64 { return uint64(s.off) + uint64(len(s.data)) }

// mergeData rewrites a module with its data segments in ascending order
// and joined wherever fewer than mergeGap zero bytes separate them, and
// with its datacount section, if any, saying how many are left. The memory
// the module starts with is the same: the segments are active and do not
// overlap, so the order they are written in does not matter, and nothing
// wrote the gap between two, which stays zero. (Go's linker emits two
// ascending runs, the second filling holes in the first.) Every other
// section is copied byte for byte.
//
// It takes only what Go's linker makes and returns an error for anything
// else: a passive segment, an offset that is not a constant, overlapping
// segments, or a custom section that names segments by index. Code may
// name segments too (memory.init, data.drop): only passive segments can be
// read that way, and those are rejected; data.drop of an active segment is
// a no-op, and one naming an index past the merged count fails validation
// when the module is compiled, not silently.
func mergeData(mod []byte) ([]byte, error) {
	secs, err := readSections(mod)
	if err != nil {
		return nil, err
	}
	dataAt, countAt := -1, -1
	for i, s := range secs {
		switch s.id {
		case secData:
			dataAt = i
		case secDataCount:
			countAt = i
		case secCustom:
			if err := checkCustom(s.body); err != nil {
				return nil, err
			}
		}
	}
	var segs []segment
	if dataAt >= 0 {
		if segs, err = readData(secs[dataAt].body); err != nil {
			return nil, err
		}
	}
	if countAt >= 0 {
		r := reader{b: secs[countAt].body}
		n := r.u32("datacount")
		if r.err == nil && r.off != len(r.b) {
			r.fail("datacount section has %d bytes after the count", len(r.b)-r.off)
		}
		if r.err != nil {
			return nil, r.err
		}
		if int64(n) != int64(len(segs)) {
			return nil, fmt.Errorf("wasm: datacount says %d segments, the data section has %d", n, len(segs))
		}
	}
	merged := merge(segs)
	out := make([]byte, 0, len(mod))
	out = append(out, wasmHeader...)
	for i, s := range secs {
		switch i {
		case dataAt:
			out = appendSection(out, secData, appendData(nil, merged))
		case countAt:
			out = appendSection(out, secDataCount, appendU32(nil, uint32(len(merged))))
		default:
			out = append(out, s.raw...)
		}
	}
	return out, nil
}

// merge joins runs of segments (sorted, not overlapping) each
// fewer than mergeGap bytes after the one before, filling the gaps with
// zeros.
func merge(segs []segment) []segment {
	var out []segment
	for i := 0; i < len(segs); {
		j := i + 1
		for j < len(segs) && uint64(segs[j].off)-segs[j-1].end() < mergeGap {
			j++
		}
		if j == i+1 {
			out = append(out, segs[i])
			i = j
			continue
		}
		data := make([]byte, segs[j-1].end()-uint64(segs[i].off))
		for _, s := range segs[i:j] {
			copy(data[s.off-segs[i].off:], s.data)
		}
		out = append(out, segment{off: segs[i].off, data: data})
		i = j
	}
	return out
}

// readSections splits a module into its sections, checking its header and
// the order of its sections.
func readSections(mod []byte) ([]section, error) {
	if !bytes.HasPrefix(mod, wasmHeader) {
		return nil, errors.New("wasm: not a WebAssembly 1.0 module (bad magic or version)")
	}
	r := reader{b: mod, off: len(wasmHeader)}
	var secs []section
	rank := 0
	for r.err == nil && r.off < len(mod) {
		start := r.off
		id := r.byte("section id")
		size := r.u32("section size")
		body := r.bytes(size, "section body")
		if r.err != nil {
			break
		}
		if id != secCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				return nil, fmt.Errorf("wasm: unknown section id %d at byte %d", id, start)
			}
			if sectionRank[id] <= rank {
				return nil, fmt.Errorf("wasm: section %d at byte %d is out of order or repeated", id, start)
			}
			rank = sectionRank[id]
		}
		secs = append(secs, section{id: id, raw: mod[start:r.off], body: body})
	}
	return secs, r.err
}

// checkCustom rejects the custom sections that name data segments by
// index, which merging would make wrong: a name section's data segment
// names, and an object file's linking and relocation sections.
func checkCustom(body []byte) error {
	r := reader{b: body}
	name := string(r.bytes(r.u32("custom section name length"), "custom section name"))
	if r.err != nil {
		return r.err
	}
	if name == "linking" || strings.HasPrefix(name, "reloc.") {
		return fmt.Errorf("wasm: custom section %q: an object file, not a linked module", name)
	}
	if name != "name" {
		return nil
	}
	for r.err == nil && r.off < len(r.b) {
		id := r.byte("name subsection id")
		r.bytes(r.u32("name subsection size"), "name subsection")
		if id == 9 {
			return errors.New("wasm: the name section names data segments")
		}
	}
	return r.err
}

// readData reads the data section's segments, each active in memory 0 at
// a constant offset, and returns them in ascending order of offset.
func readData(body []byte) ([]segment, error) {
	r := reader{b: body}
	n := r.u32("data segment count")
	var segs []segment
	for i := uint32(0); r.err == nil && i < n; i++ {
		if flags := r.u32("data segment flags"); r.err == nil && flags != 0 {
			// 1 is passive, 2 active with a memory index: Go emits neither.
			return nil, fmt.Errorf("wasm: data segment %d: flags %d, want 0 (active, memory 0)", i, flags)
		}
		if op := r.byte("offset opcode"); r.err == nil && op != 0x41 {
			return nil, fmt.Errorf("wasm: data segment %d: offset opcode %#x, want i32.const", i, op)
		}
		off := uint32(r.s32("offset"))
		if op := r.byte("offset end"); r.err == nil && op != 0x0b {
			return nil, fmt.Errorf("wasm: data segment %d: offset expression goes on (%#x), want end", i, op)
		}
		data := r.bytes(r.u32("data segment size"), "data segment bytes")
		if r.err != nil {
			break
		}
		s := segment{off: off, data: data}
		if s.end() > 1<<32 {
			return nil, fmt.Errorf("wasm: data segment %d at %#x runs past 4 GiB", i, off)
		}
		segs = append(segs, s)
	}
	if r.err == nil && r.off != len(body) {
		r.fail("data section has %d bytes after its %d segments", len(body)-r.off, n)
	}
	if r.err != nil {
		return nil, r.err
	}
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.off, b.off) })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].off) < segs[i-1].end() {
			return nil, fmt.Errorf("wasm: the data segment at %#x overlaps the one at %#x", segs[i].off, segs[i-1].off)
		}
	}
	return segs, nil
}

// appendData appends a data section's body holding segs.
func appendData(dst []byte, segs []segment) []byte {
	dst = appendU32(dst, uint32(len(segs)))
	for _, s := range segs {
		dst = append(dst, 0, 0x41)
		dst = appendS32(dst, int32(s.off))
		dst = append(dst, 0x0b)
		dst = appendU32(dst, uint32(len(s.data)))
		dst = append(dst, s.data...)
	}
	return dst
}

func appendSection(dst []byte, id byte, body []byte) []byte {
	dst = append(dst, id)
	dst = appendU32(dst, uint32(len(body)))
	return append(dst, body...)
}

func appendU32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendS32 appends v as a signed LEB128: the same bytes as its value
// sign-extended to 64 bits.
func appendS32(dst []byte, v int32) []byte { return appendS64(dst, int64(v)) }

// reader reads the binary format; its first error sticks, and every read
// after it returns zero.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("wasm: byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *reader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("truncated %s", what)
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) bytes(n uint32, what string) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("%s of %d bytes runs past the end", what, n)
		return nil
	}
	r.off += int(n)
	return r.b[r.off-int(n) : r.off]
}

// u32 reads an unsigned LEB128 of at most 5 bytes, as the format allows
// (Go's linker pads sizes to 5 bytes).
func (r *reader) u32(what string) uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		c := r.byte(what)
		if r.err != nil {
			return 0
		}
		if i == 4 && c > 0x0f {
			r.fail("%s overflows 32 bits", what)
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	return 0 // not reached: the fifth byte is < 0x10
}

// s32 reads a signed LEB128 of at most 5 bytes.
func (r *reader) s32(what string) int32 {
	var v uint32
	for i := 0; i < 5; i++ {
		c := r.byte(what)
		if r.err != nil {
			return 0
		}
		if i == 4 {
			// The last byte holds bits 28-31; its unused bits must repeat
			// the sign.
			if c&0x80 != 0 || (c&0x08 == 0 && c&0x70 != 0) || (c&0x08 != 0 && c&0x70 != 0x70) {
				r.fail("%s overflows 32 bits", what)
				return 0
			}
			return int32(v | uint32(c)<<28)
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c&0x40 != 0 && i < 4 {
				v |= ^uint32(0) << (7 * (i + 1))
			}
			return int32(v)
		}
	}
	return 0
}
