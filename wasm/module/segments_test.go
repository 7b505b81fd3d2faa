package module

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

// testSection is a section for testModule: its size is written padded to
// five bytes, as Go's linker writes it, when pad is set.
type testSection struct {
	id   byte
	body []byte
	pad  bool
}

func testModule(secs ...testSection) []byte {
	mod := slices.Clone(wasmHeader)
	for _, s := range secs {
		mod = append(mod, s.id)
		if s.pad {
			n := uint32(len(s.body))
			mod = append(mod, byte(n)|0x80, byte(n>>7)|0x80, byte(n>>14)|0x80, byte(n>>21)|0x80, byte(n>>28))
		} else {
			mod = appendU32(mod, uint32(len(s.body)))
		}
		mod = append(mod, s.body...)
	}
	return mod
}

func dataSection(segs ...segment) testSection {
	return testSection{id: secData, body: appendData(nil, segs), pad: true}
}

func customSection(name string, body ...byte) testSection {
	return testSection{id: secCustom, body: append(append(appendU32(nil, uint32(len(name))), name...), body...)}
}

// memorySection is one memory of a page, as a module with data needs.
var memorySection = testSection{id: 5, body: []byte{1, 0, 1}, pad: true}

func seg(off uint32, data string) segment { return segment{off: off, data: []byte(data)} }

// dataOf returns a module's data segments as mergeData reads them.
func dataOf(t testing.TB, mod []byte) []segment {
	t.Helper()
	secs, i := sectionOf(t, mod, secData)
	if i < 0 {
		return nil
	}
	segs, err := readData(secs[i].body)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// sectionOf returns mod's sections and the index of its first section of
// the given id, -1 for none.
func sectionOf(t testing.TB, mod []byte, id byte) ([]section, int) {
	t.Helper()
	secs, err := readSections(mod)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range secs {
		if s.id == id {
			return secs, i
		}
	}
	return secs, -1
}

// exportsOf returns mod's sections, the index of its export section and
// its exports; it fails t when mod has none.
func exportsOf(t testing.TB, mod []byte) ([]section, int, []export) {
	t.Helper()
	secs, i := sectionOf(t, mod, secExport)
	if i < 0 {
		t.Fatal("no export section")
	}
	es, err := readExports(secs[i].body)
	if err != nil {
		t.Fatal(err)
	}
	return secs, i, es
}

// image is the memory the segments initialise, up to the end of the last;
// false when that is past limit.
func image(segs []segment, limit uint64) ([]byte, bool) {
	var end uint64
	for _, s := range segs {
		end = max(end, s.end())
	}
	if end > limit {
		return nil, false
	}
	mem := make([]byte, end)
	for _, s := range segs {
		copy(mem[s.off:], s.data)
	}
	return mem, true
}

func TestMergeDataJoinsSegmentsCloseTogether(t *testing.T) {
	head := customSection("go:buildid", 'i', 'd')
	tail := customSection("producers", 0)
	code := testSection{id: 10, body: []byte{1, 2, 0, 0x0b}, pad: true}
	in := testModule(head, memorySection, code, dataSection(
		seg(0, "ab"),
		seg(2+mergeGap-1, "cd"),            // 63 zeros after "ab": joined
		seg(2+mergeGap-1+2+mergeGap, "ef"), // 64 zeros after "cd": not
	), tail)
	out, err := mergeData(in)
	if err != nil {
		t.Fatal(err)
	}
	want := testModule(head, memorySection, code, testSection{id: secData, body: appendData(nil, []segment{
		{off: 0, data: []byte("ab" + strings.Repeat("\x00", mergeGap-1) + "cd")},
		seg(2+mergeGap-1+2+mergeGap, "ef"),
	})}, tail)
	if !bytes.Equal(out, want) {
		t.Errorf("merged module:\n%x\nwant\n%x", out, want)
	}
}

func TestMergeDataSortsSegments(t *testing.T) {
	// Go's linker writes two ascending runs, the second filling holes in
	// the first.
	in := testModule(memorySection, dataSection(seg(0, "a"), seg(1000, "z"), seg(10, "b"), seg(2000, "y"), seg(1001, "m")))
	out, err := mergeData(in)
	if err != nil {
		t.Fatal(err)
	}
	got := dataOf(t, out)
	want := []segment{{off: 0, data: []byte("a\x00\x00\x00\x00\x00\x00\x00\x00\x00b")}, seg(1000, "zm"), seg(2000, "y")}
	if !slices.EqualFunc(got, want, func(a, b segment) bool { return a.off == b.off && bytes.Equal(a.data, b.data) }) {
		t.Errorf("segments %+v, want %+v", got, want)
	}
	before, _ := image(dataOf(t, in), 1<<20)
	after, _ := image(got, 1<<20)
	if !bytes.Equal(before, after) {
		t.Error("the memory image changed")
	}
}

func TestMergeDataRewritesDataCount(t *testing.T) {
	count := testSection{id: secDataCount, body: []byte{3}}
	in := testModule(memorySection, count, dataSection(seg(0, "a"), seg(4, "b"), seg(8, "c")))
	out, err := mergeData(in)
	if err != nil {
		t.Fatal(err)
	}
	want := testModule(memorySection, testSection{id: secDataCount, body: []byte{1}}, testSection{id: secData, body: appendData(nil, []segment{seg(0, "a\x00\x00\x00b\x00\x00\x00c")})})
	if !bytes.Equal(out, want) {
		t.Errorf("merged module:\n%x\nwant\n%x", out, want)
	}
}

func TestMergeDataWithoutData(t *testing.T) {
	for _, in := range [][]byte{
		testModule(),
		testModule(customSection("name"), testSection{id: 1, body: []byte{0}, pad: true}),
		testModule(testSection{id: secDataCount, body: []byte{0}}),
	} {
		out, err := mergeData(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, in) {
			t.Errorf("mergeData(%x) = %x, want it unchanged", in, out)
		}
	}
}

func TestMergeDataRejects(t *testing.T) {
	hdr := string(wasmHeader)
	data := func(body ...byte) []byte { return testModule(memorySection, testSection{id: secData, body: body}) }
	for _, tc := range []struct {
		name string
		mod  []byte
		want string
	}{
		{"empty", nil, "not a WebAssembly"},
		{"text", []byte("(module)"), "not a WebAssembly"},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), "not a WebAssembly"},
		{"truncated section", []byte(hdr + "\x0b\x05\x01\x00"), "runs past the end"},
		{"truncated size", []byte(hdr + "\x0b\x80"), "truncated"},
		{"size past 32 bits", []byte(hdr + "\x0b\x80\x80\x80\x80\x10"), "overflows"},
		{"size of six bytes", []byte(hdr + "\x0b\x80\x80\x80\x80\x80\x00"), "overflows"},
		{"unknown section", testModule(testSection{id: 14}), "unknown section id 14"},
		{"sections out of order", testModule(testSection{id: 3, body: []byte{0}}, testSection{id: 1, body: []byte{0}}), "out of order"},
		{"datacount after code", testModule(testSection{id: 10, body: []byte{0}}, testSection{id: secDataCount, body: []byte{0}}), "out of order"},
		{"two data sections", testModule(dataSection(), dataSection()), "out of order"},
		{"passive segment", data(1, 1, 1, 'a'), "flags 1"},
		{"memory index", data(1, 2, 0, 0x41, 0, 0x0b, 1, 'a'), "flags 2"},
		{"global offset", data(1, 0, 0x23, 0, 0x0b, 1, 'a'), "want i32.const"},
		{"i64 offset", data(1, 0, 0x42, 0, 0x0b, 1, 'a'), "want i32.const"},
		{"offset goes on", data(1, 0, 0x41, 0, 0x41, 0, 0x6a, 0x0b, 1, 'a'), "goes on"},
		{"offset past 32 bits", data(1, 0, 0x41, 0x80, 0x80, 0x80, 0x80, 0x70, 0x0b, 1, 'a'), "overflows"},
		{"segment past 4 GiB", data(1, 0, 0x41, 0x7f, 0x0b, 2, 'a', 'b'), "past 4 GiB"},
		{"segment runs past the section", data(1, 0, 0x41, 0, 0x0b, 5, 'a'), "runs past the end"},
		{"count past the segments", data(2, 0, 0x41, 0, 0x0b, 1, 'a'), "truncated"},
		{"bytes after the segments", data(1, 0, 0x41, 0, 0x0b, 1, 'a', 0), "after its 1 segments"},
		{"overlap", testModule(memorySection, dataSection(seg(0, "abcd"), seg(2, "xy"))), "overlaps"},
		{"overlap out of order", testModule(memorySection, dataSection(seg(8, "abcd"), seg(0, "xy"), seg(9, "z"))), "overlaps"},
		{"datacount too high", testModule(testSection{id: secDataCount, body: []byte{2}}, dataSection(seg(0, "a"))), "datacount says 2"},
		{"datacount without data", testModule(testSection{id: secDataCount, body: []byte{1}}), "datacount says 1"},
		{"datacount goes on", testModule(testSection{id: secDataCount, body: []byte{1, 0}}, dataSection(seg(0, "a"))), "after the count"},
		{"data segment names", testModule(customSection("name", 9, 0), dataSection(seg(0, "a"))), "names data segments"},
		{"bad name section", testModule(customSection("name", 1, 5, 0)), "runs past the end"},
		{"custom name past its section", testModule(testSection{id: secCustom, body: []byte{9, 'n'}}), "runs past the end"},
		{"linking section", testModule(customSection("linking", 2)), "object file"},
		{"relocations", testModule(customSection("reloc.DATA", 0)), "object file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := mergeData(tc.mod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("mergeData(%x) = %x, %v; want an error saying %q", tc.mod, out, err, tc.want)
			}
		})
	}
}

func TestLEB128(t *testing.T) {
	for _, v := range []int32{0, 1, 63, 64, -64, -65, 127, 128, -1, 1 << 20, math.MaxInt32, math.MinInt32, 0x1052a8} {
		b := appendS32(nil, v)
		r := reader{b: b}
		if got := r.s32("v"); r.err != nil || got != v || r.off != len(b) {
			t.Errorf("s32(%x) = %d after %d bytes, %v; want %d", b, got, r.off, r.err, v)
		}
		u := uint32(v)
		b = appendU32(nil, u)
		r = reader{b: b}
		if got := r.u32("v"); r.err != nil || got != u || r.off != len(b) {
			t.Errorf("u32(%x) = %d after %d bytes, %v; want %d", b, got, r.off, r.err, u)
		}
	}
	// Longer than need be, as the format allows.
	for b, want := range map[string]int32{
		"\x80\x00":             0,
		"\xff\x7f":             -1,
		"\xff\xff\xff\xff\x7f": -1,
		"\x80\x80\x80\x80\x78": math.MinInt32,
		"\xff\xff\xff\xff\x07": math.MaxInt32,
		"\xc0\xbb\x78":         -123456,
		"\xc0\xbb\xf8\xff\x7f": -123456,
		"\xe5\x8e\x26":         624485,
		"\xe5\x8e\xa6\x80\x00": 624485,
	} {
		r := reader{b: []byte(b)}
		if got := r.s32("v"); r.err != nil || got != want {
			t.Errorf("s32(%x) = %d, %v; want %d", b, got, r.err, want)
		}
	}
	for _, b := range []string{"\x80\x80\x80\x80\x80\x00", "\x80\x80\x80\x80\x10", "\xff\xff\xff\xff\x77", "\x80\x80\x80\x80\x40", "\x80"} {
		r := reader{b: []byte(b)}
		if got := r.s32("v"); r.err == nil {
			t.Errorf("s32(%x) = %d, want an error", b, got)
		}
	}
	r := reader{b: []byte("\xff\xff\xff\xff\x0f")}
	if got := r.u32("v"); r.err != nil || got != math.MaxUint32 {
		t.Errorf("u32(ffffffff0f) = %d, %v", got, r.err)
	}
}

// FuzzMergeData: mergeData never panics, and what it returns parses, is
// merged already, and starts memory as the input does.
func FuzzMergeData(f *testing.F) {
	f.Add(testModule(customSection("go:buildid", 'x'), memorySection, dataSection(seg(0, "ab"), seg(70, "cd"), seg(40, "x"), seg(200, "ef")), customSection("producers")))
	f.Add(testModule(memorySection, testSection{id: secDataCount, body: []byte{2}}, testSection{id: 10, body: []byte{0}}, dataSection(seg(0x10000, "a"), seg(0x10002, "b"))))
	f.Add(testModule(memorySection, dataSection(seg(0xffffffff, "a"), seg(0x7fffffff, "b"))))
	f.Add(testModule(customSection("name", 1, 0), testSection{id: 1, body: []byte{0}}))
	f.Add([]byte(string(wasmHeader) + "\x0b\x80\x80\x80\x80\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := mergeData(in)
		if err != nil {
			return
		}
		again, err := mergeData(out)
		if err != nil {
			t.Fatalf("the merged module does not parse: %v", err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("merging twice changed the module:\n%x\n%x", out, again)
		}
		inSecs, _ := readSections(in)
		outSecs, _ := readSections(out)
		if len(inSecs) != len(outSecs) {
			t.Fatalf("%d sections became %d", len(inSecs), len(outSecs))
		}
		for i := range inSecs {
			if a, b := inSecs[i], outSecs[i]; a.id != b.id || (a.id != secData && a.id != secDataCount && !bytes.Equal(a.raw, b.raw)) {
				t.Fatalf("section %d changed: %x became %x", i, a.raw, b.raw)
			}
		}
		before, ok := image(dataOf(t, in), 1<<20)
		if !ok {
			return
		}
		after, _ := image(dataOf(t, out), 1<<20)
		if !bytes.Equal(before, after) {
			t.Fatal("the memory image changed")
		}
	})
}
