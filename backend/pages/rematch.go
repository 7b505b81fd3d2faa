package pages

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A page's analysis is reduced against the catalog of its day: only the
// passages where that catalog's criteria occur are matched. So that a new
// catalog answers for pages analysed before it without fetching them
// again, the analysis also keeps the page's title and text, compressed,
// with the version of the catalog it was reduced against; a lookup under
// another version reduces them again against the current catalog, and
// keeps the result in memory for the pages asked for again.

// rematchEntries bounds the pages reduced again kept in memory; past it
// the cache starts over.
const rematchEntries = 4096

var (
	fullEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	fullDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(4*MaxTextBytes))
)

// packFull compresses a page's title and text for Record.Full.
func packFull(title, text string) []byte {
	b := make([]byte, 0, len(title)+1+len(text))
	b = append(append(append(b, title...), 0), text...)
	return fullEncoder.EncodeAll(b, nil)
}

// unpackFull is packFull undone.
func unpackFull(full []byte) (title, text string, ok bool) {
	b, err := fullDecoder.DecodeAll(full, nil)
	if err != nil {
		return "", "", false
	}
	t, x, ok := bytes.Cut(b, []byte{0})
	return string(t), string(x), ok
}

type rematchKey struct{ url, version string }

// rematchCache holds pages reduced again against the current catalog.
type rematchCache struct {
	mu sync.Mutex
	m  map[rematchKey][2]string
}

// current returns the reducer of the catalog served and its version: ""
// when the service was given a bare reducer.
func (s *Service) current() (Reducer, string) {
	if s.o.Catalog != nil {
		return s.o.Catalog()
	}
	if s.reduce != nil {
		return s.reduce(), ""
	}
	return nil, ""
}

// rematch gives res the page's text as the current catalog reduces it,
// when rec was reduced against another.
func (s *Service) rematch(rec *Record, res *Result) {
	if s.o.Catalog == nil || len(rec.Full) == 0 {
		return
	}
	r, version := s.o.Catalog()
	if r == nil || version == rec.Catalog {
		return
	}
	key := rematchKey{rec.URL, version}
	s.rematched.mu.Lock()
	v, ok := s.rematched.m[key]
	s.rematched.mu.Unlock()
	if !ok {
		title, text, ok := unpackFull(rec.Full)
		if !ok {
			s.log.Warn("a page's stored text does not decode; served as reduced before", "url", rec.URL)
			return
		}
		v[0], v[1] = r.Reduce(title, text)
		s.rematched.mu.Lock()
		if s.rematched.m == nil || len(s.rematched.m) >= rematchEntries {
			s.rematched.m = make(map[rematchKey][2]string)
		}
		s.rematched.m[key] = v
		s.rematched.mu.Unlock()
	}
	res.Title, res.Text = v[0], v[1]
}
