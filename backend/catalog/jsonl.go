package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"sync"

	"github.com/adlink/adlink/match"
)

// jsonlBlock is the bytes of a JSON-lines feed one core reads at a time.
const jsonlBlock = 1 << 20

// readJSONLOn reads a JSON-lines feed on workers cores, in blocks of
// about size bytes cut at line ends: each block's lines are decoded (or
// found in the last read's) and checked at once, the blocks joined in
// order, and the ids checked for duplicates in shards, so that it gives
// the ads and errors of readJSONL, the same in the same order.
func (p *parser) readJSONLOn(r io.Reader, workers, size int) {
	if workers < 2 {
		p.readJSONL(r)
		return
	}
	blocks := make(chan *jsonlBlockRead, 2*workers)
	work := make(chan *jsonlBlockRead, 2*workers)
	quit := make(chan struct{})
	free := make(chan []byte, 3*workers+2)
	var end jsonlEnd
	go func() {
		defer close(blocks)
		defer close(work)
		end = splitLines(r, size, free, quit, func(b *jsonlBlockRead) bool {
			select {
			case work <- b:
			case <-quit:
				return false
			}
			select {
			case blocks <- b:
				return true
			case <-quit:
				return false
			}
		})
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wp := &parser{name: p.name, opts: p.opts, rename: p.rename, lines: p.lines,
				defAdvertiser: p.defAdvertiser, defMarkets: p.defMarkets, defBid: p.defBid, allowed: p.allowed}
			for b := range work {
				wp.readBlock(b)
				close(b.done)
			}
		})
	}

	var (
		read    []*jsonlBlockRead
		errs    []*LineError
		more    int
		tokens  int
		tooLong bool
	)
	for b := range blocks {
		<-b.done
		read = append(read, b)
		for _, e := range b.errs {
			if len(errs) < MaxErrors {
				errs = append(errs, e)
			} else {
				more++
			}
		}
		more += b.more
		tokens = b.first - 1 + b.tokens
		select {
		case free <- b.data[:0]:
		default:
		}
		b.data = nil
		if b.tooLong {
			tooLong = true
			close(quit)
			break
		}
	}
	if tooLong {
		for range blocks { // the reader stops at quit
		}
	}
	wg.Wait()

	dups, dupMore := duplicateIDs(read, workers)
	for _, d := range dups {
		d.File = p.name
		if f, ok := p.rename[d.Field]; ok {
			d.Field = f
		}
	}
	// The problems in the order readJSONL finds them: by line, a line's
	// own before its duplicate id.
	for len(errs) > 0 || len(dups) > 0 {
		if len(dups) == 0 || len(errs) > 0 && errs[0].Line <= dups[0].Line {
			p.report(errs[0])
			errs = errs[1:]
		} else {
			p.report(dups[0])
			dups = dups[1:]
		}
	}
	p.dropped += more + dupMore
	switch {
	case tooLong || end.tooLong:
		p.fail(tokens+1, "", fmt.Sprintf("line longer than %d bytes", maxLine))
	case end.err != nil:
		p.fail(tokens+1, "", end.err.Error())
	}
	if len(p.errs)+p.dropped == 0 {
		p.ads = joinAds(p.ads, read, workers)
		if p.lines != nil {
			keys := make([][]lineKey, len(read))
			for i, b := range read {
				keys[i] = b.keys
			}
			p.lines.noteAll(keys)
		}
	}
}

// joinAds copies the blocks' ads in order into one slice, into into's
// room when it has enough, on workers cores.
func joinAds(into []match.Ad, read []*jsonlBlockRead, workers int) []match.Ad {
	n := 0
	at := make([]int, len(read))
	for i, b := range read {
		at[i] = n
		n += len(b.ads)
	}
	if n == 0 {
		return nil
	}
	if cap(into) < n {
		into = make([]match.Ad, n)
	}
	into = into[:n]
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(read); i += workers {
				copy(into[at[i]:], read[i].ads)
				read[i].ads = nil
			}
		})
	}
	wg.Wait()
	return into
}

// report adds a problem found elsewhere, within MaxErrors.
func (p *parser) report(e *LineError) {
	if len(p.errs) >= MaxErrors {
		p.dropped++
		return
	}
	p.errs = append(p.errs, e)
}

// jsonlBlockRead is a block of a JSON-lines feed, whole lines, and what
// was read from it.
type jsonlBlockRead struct {
	data  []byte
	first int // the line number of its first line
	done  chan struct{}

	// ads are the ads of the lines that decode, line by line, whatever
	// their problems (their ids count for duplicates), lineOf their lines
	// and keys their keys (lines).
	ads    []match.Ad
	lineOf []int32
	keys   []lineKey
	// errs are the block's first MaxErrors problems; more counts the
	// rest.
	errs []*LineError
	more int
	// tokens is the lines read, up to a line longer than maxLine when
	// tooLong.
	tokens  int
	tooLong bool
}

// readBlock reads b's lines as readJSONL reads them, into b; p is the
// worker's own parser (its shared strings and its problems).
func (p *parser) readBlock(b *jsonlBlockRead) {
	p.errs, p.dropped = p.errs[:0], 0
	data := b.data
	n := bytes.Count(data, []byte{'\n'}) + 1
	b.ads, b.lineOf = make([]match.Ad, 0, n), make([]int32, 0, n)
	if p.lines != nil {
		b.keys = make([]lineKey, 0, n)
	}
	for len(data) > 0 {
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(raw) >= maxLine {
			b.tooLong = true
			break
		}
		b.tokens++
		line := b.first + b.tokens - 1
		s := raw
		if len(s) > 0 && s[len(s)-1] == '\r' {
			s = s[:len(s)-1]
		}
		if line == 1 {
			s = bytes.TrimPrefix(s, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(s)) == 0 {
			continue
		}
		var key lineKey
		if p.lines != nil {
			key = p.lines.key(s)
			if a, ok := p.lines.known(key); ok {
				b.ads, b.lineOf, b.keys = append(b.ads, a), append(b.lineOf, int32(line)), append(b.keys, key)
				continue
			}
		}
		var rec record
		if field, msg, ok := decodeLine(s, &rec); !ok {
			p.fail(line, field, msg)
			continue
		}
		a := p.check(line, &rec)
		b.ads, b.lineOf = append(b.ads, a), append(b.lineOf, int32(line))
		if p.lines != nil {
			b.keys = append(b.keys, key)
		}
	}
	for _, e := range p.errs {
		var le *LineError
		if errors.As(e, &le) {
			b.errs = append(b.errs, le)
		}
	}
	b.more = p.dropped
}

// jsonlEnd is how a feed's reading ended: at its end, at a line longer
// than maxLine, or at a read error (err).
type jsonlEnd struct {
	tooLong bool
	err     error
}

// splitLines reads r in blocks of whole lines of about size bytes (a
// longer line makes a longer block), numbers their lines and hands each
// to send, until send returns false, a line is longer than maxLine or r
// ends. As bufio.Scanner does, it gives the lines before a read error,
// the last one unended, and then the error. Buffers are taken from free
// when it has some.
func splitLines(r io.Reader, size int, free <-chan []byte, quit <-chan struct{}, send func(*jsonlBlockRead) bool) jsonlEnd {
	buf := func(n int) []byte {
		select {
		case b := <-free:
			if cap(b) >= n {
				return b[:0]
			}
		default:
		}
		return make([]byte, 0, max(n, size))
	}
	line := 1
	carry := buf(size) // the start of the next block
	for {
		select {
		case <-quit:
			return jsonlEnd{}
		default:
		}
		data := carry
		var err error
		for empty := 0; len(data) < cap(data) && err == nil; {
			var n int
			n, err = r.Read(data[len(data):cap(data)])
			data = data[:len(data)+n]
			if n == 0 && err == nil {
				if empty++; empty == 100 {
					err = io.ErrNoProgress
				}
			}
		}
		if err != nil {
			// The rest is the last line, ended or not.
			if len(data) > 0 && !send(&jsonlBlockRead{data: data, first: line, done: make(chan struct{})}) {
				return jsonlEnd{}
			}
			if err == io.EOF {
				return jsonlEnd{}
			}
			return jsonlEnd{err: err}
		}
		cut := bytes.LastIndexByte(data, '\n')
		if cut < 0 {
			if len(data) >= maxLine {
				return jsonlEnd{tooLong: true}
			}
			// A line longer than a block: read on into a larger one.
			carry = append(make([]byte, 0, 2*cap(data)), data...)
			continue
		}
		b := &jsonlBlockRead{data: data[:cut+1], first: line, done: make(chan struct{})}
		line += bytes.Count(b.data, []byte{'\n'})
		rest := data[cut+1:]
		carry = append(buf(len(rest)+size), rest...)
		if !send(b) {
			return jsonlEnd{}
		}
		if len(rest) >= maxLine {
			return jsonlEnd{tooLong: true}
		}
	}
}

// duplicateIDs finds the ads whose id an ad before them has, each shard
// of the ids on a core of its own, and returns the first MaxErrors of
// them by line and how many more there are.
func duplicateIDs(read []*jsonlBlockRead, workers int) ([]*LineError, int) {
	n := 0
	for _, b := range read {
		n += len(b.ads)
	}
	seed := maphash.MakeSeed()
	found := make([][]*LineError, workers)
	more := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			first := make(map[string]int32, n/workers+n/(8*workers))
			for _, b := range read {
				for i := range b.ads {
					id := b.ads[i].ID
					if id == "" || maphash.String(seed, id)%uint64(workers) != uint64(w) {
						continue
					}
					if f, dup := first[id]; dup {
						if len(found[w]) < MaxErrors {
							found[w] = append(found[w], &LineError{Line: int(b.lineOf[i]), Field: "id",
								Msg: fmt.Sprintf("duplicate id %q (first on line %d)", id, f)})
						} else {
							more[w]++
						}
						continue
					}
					first[id] = b.lineOf[i]
				}
			}
		})
	}
	wg.Wait()
	var all []*LineError
	left := 0
	for w := range workers {
		all = append(all, found[w]...)
		left += more[w]
	}
	slices.SortStableFunc(all, func(a, b *LineError) int { return a.Line - b.Line })
	if len(all) > MaxErrors {
		left += len(all) - MaxErrors
		all = all[:MaxErrors]
	}
	return all, left
}
