package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// readOn reads data as a JSON-lines feed on workers cores in blocks of
// size bytes (workers 1 is readJSONL), with the lines of the read before
// when ls is set.
func readOn(r io.Reader, workers, size int, ls *lines) readResult {
	p := parser{name: "feed.jsonl", seen: map[string]int{}, lines: ls}
	p.readJSONLOn(r, workers, size)
	ads, err := p.result()
	return readResult{ads, err}
}

// readSerialAndParallel reads data on one core and on several in small
// blocks, each after a read of before (nil for none), and fails the test
// when they differ; it returns the one-core read.
func readSerialAndParallel(t testing.TB, before, data []byte, size int) readResult {
	t.Helper()
	prev := func() *lines {
		if before == nil {
			return nil
		}
		ls := nextLines(nil, Options{})
		r := readOn(bytes.NewReader(before), 1, size, ls)
		if r.err != nil {
			return nil
		}
		ls.done(r.ads)
		return nextLines(ls, Options{})
	}
	serialLines := prev()
	serial := readOn(bytes.NewReader(data), 1, size, serialLines)
	for _, workers := range []int{2, 3} {
		parLines := prev()
		par := readOn(bytes.NewReader(data), workers, size, parLines)
		if !par.same(serial) {
			t.Fatalf("%d cores, blocks of %d bytes: %d ads, %v\none core: %d ads, %v", workers, size, len(par.ads), par.err, len(serial.ads), serial.err)
		}
		// The next read finds the same lines in either.
		if serial.err == nil && serialLines != nil {
			for i, line := range bytes.Split(data, []byte("\n")) {
				line = bytes.TrimSuffix(line, []byte("\r"))
				k, pk := serialLines.key(line), parLines.key(line)
				got, want := parLines.at[pk.shard()][pk], serialLines.at[k.shard()][k]
				if got != want {
					t.Fatalf("line %d: noted as ad %d, on one core %d", i+1, got, want)
				}
			}
		}
	}
	return serial
}

// adLines are n valid feed lines.
func adLines(n int) []string {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"kind":"product","id":"p-%d","title":"Kabel Nummer %d","price":"%d.99","currency":"EUR","landing":"https://shop.example/p/%d","markets":["de-DE"]}`, i, i, i, i))
	}
	return lines
}

// TestParallelReadNamesTheLine: a bad line, a duplicate id and an unknown
// field in later blocks than the first are reported with their own line
// numbers, as a read on one core reports them.
func TestParallelReadNamesTheLine(t *testing.T) {
	lines := adLines(200)
	good := []byte(strings.Join(lines, "\n") + "\n")
	r := readSerialAndParallel(t, nil, good, 1024)
	if r.err != nil || len(r.ads) != 200 || r.ads[150].ID != "p-150" {
		t.Fatalf("good feed: %d ads, %v", len(r.ads), r.err)
	}

	bad := append([]string{}, lines...)
	bad[40] = `{"kind":"product","id":"p-40",` // line 41, in the second block or later
	bad[120] = strings.Replace(bad[120], `"p-120"`, `"p-7"`, 1)
	bad[160] = strings.Replace(bad[160], `"title"`, `"titel"`, 1)
	r = readSerialAndParallel(t, nil, []byte(strings.Join(bad, "\n")), 1024)
	var le []*LineError
	for _, e := range r.err.(interface{ Unwrap() []error }).Unwrap() {
		var l *LineError
		if errors.As(e, &l) {
			le = append(le, l)
		}
	}
	if len(le) < 3 || le[0].Line != 41 || le[0].File != "feed.jsonl" {
		t.Fatalf("errors: %v", r.err)
	}
	if !strings.Contains(r.err.Error(), `feed.jsonl:121: id: duplicate id "p-7" (first on line 8)`) ||
		!strings.Contains(r.err.Error(), "feed.jsonl:161: titel: unknown field") {
		t.Fatalf("errors: %v", r.err)
	}
}

// TestParallelReadManyErrors: past MaxErrors, the errors kept are the
// first by line, duplicates and bad lines mixed, and the rest counted.
func TestParallelReadManyErrors(t *testing.T) {
	lines := adLines(400)
	for i := 10; i < 400; i += 7 {
		lines[i] = strings.Replace(lines[i], fmt.Sprintf(`"p-%d"`, i), `"p-1"`, 1)
	}
	for i := 12; i < 400; i += 5 {
		lines[i] = strings.Replace(lines[i], `"EUR"`, `"euro"`, 1)
	}
	r := readSerialAndParallel(t, nil, []byte(strings.Join(lines, "\n")), 512)
	if r.err == nil || !strings.Contains(r.err.Error(), "more errors not shown") {
		t.Fatalf("errors: %v", r.err)
	}
}

// TestParallelReadAgain: a changed feed read beside the read before takes
// its unchanged lines' ads from it, and gives what one core gives.
func TestParallelReadAgain(t *testing.T) {
	lines := adLines(300)
	before := []byte(strings.Join(lines, "\r\n"))
	changed := append([]string{"\xef\xbb\xbf" + lines[1]}, lines[2:]...)
	changed[100] = strings.Replace(changed[100], `"price":"101.99"`, `"price":"1.99"`, 1)
	changed = append(changed, "", "  ")
	r := readSerialAndParallel(t, before, []byte(strings.Join(changed, "\n")), 700)
	if r.err != nil || len(r.ads) != 299 || r.ads[100].PriceCents != 199 {
		t.Fatalf("%d ads, %v", len(r.ads), r.err)
	}
	// An unchanged line given twice is a duplicate id.
	changed = append(changed, lines[250])
	r = readSerialAndParallel(t, before, []byte(strings.Join(changed, "\n")), 700)
	if r.err == nil || !strings.Contains(r.err.Error(), `duplicate id "p-250" (first on line 250)`) {
		t.Fatalf("errors: %v", r.err)
	}
}

// TestParallelReadLongLine: a line of maxLine bytes or more ends the read
// with an error on its line, after the lines before it, whatever block it
// falls in; one a byte shorter is read.
func TestParallelReadLongLine(t *testing.T) {
	lines := adLines(50)
	for _, n := range []int{maxLine - 1, maxLine, maxLine + 5} {
		for _, at := range []int{0, 30, 49} {
			l := append([]string{}, lines...)
			l[at] = `{"kind":"product","id":"long","title":"` + strings.Repeat("x", n-len(`{"kind":"product","id":"long","title":""}`)) + `"}`
			for _, end := range []string{"", "\n"} {
				r := readSerialAndParallel(t, nil, []byte(strings.Join(l, "\n")+end), 4096)
				long := r.err != nil && strings.Contains(r.err.Error(), fmt.Sprintf("feed.jsonl:%d: line longer than", at+1))
				if long != (n >= maxLine) {
					t.Fatalf("line %d of %d bytes: %v", at+1, n, r.err)
				}
			}
		}
	}
}

// failingReader gives data and then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(b []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(b, f.data[:min(len(f.data), 300)])
	f.data = f.data[n:]
	return n, nil
}

// TestParallelReadError: a read that fails gives the lines before it, the
// cut one last, and then the error on the next line, as one core does.
func TestParallelReadError(t *testing.T) {
	data := []byte(strings.Join(adLines(100), "\n"))
	for _, at := range []int{0, 1, 2000, 2001, len(data) / 2, len(data)} {
		boom := errors.New("connection reset")
		serial := readOn(&failingReader{data: data[:at], err: boom}, 1, 1024, nil)
		for _, workers := range []int{2, 3} {
			par := readOn(&failingReader{data: data[:at], err: boom}, workers, 1024, nil)
			if !par.same(serial) {
				t.Fatalf("cut at %d, %d cores: %v\none core: %v", at, workers, par.err, serial.err)
			}
		}
		if serial.err == nil || !strings.Contains(serial.err.Error(), "connection reset") {
			t.Fatalf("cut at %d: %v", at, serial.err)
		}
	}
}

// FuzzParallelJSONL: any bytes, in blocks of any size, read on several
// cores give the ads and errors a read on one core gives, with and
// without the lines of a read before.
func FuzzParallelJSONL(f *testing.F) {
	lines := adLines(6)
	f.Add([]byte(strings.Join(lines, "\n")), []byte(strings.Join(lines[2:], "\n")), uint16(64))
	f.Add([]byte(strings.Join(lines, "\r\n")+"\n\n"), []byte("\xef\xbb\xbf"+lines[0]+"\n"+lines[0]), uint16(1))
	f.Add([]byte(lines[0]+"\n{"), []byte(lines[3]+"\n"+strings.Replace(lines[4], "p-4", "p-3", 1)), uint16(200))
	f.Fuzz(func(t *testing.T, before, data []byte, size uint16) {
		readSerialAndParallel(t, nil, data, int(size)+1)
		readSerialAndParallel(t, before, data, int(size)+1)
	})
}
