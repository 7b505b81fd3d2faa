// Package golden compares test output with golden files under testdata/,
// which go test -update rewrites.
//
// A golden file holds a JSON or JSONP answer pretty-printed, so that a
// change to an answer reads as a diff; the comparison is still of the exact
// bytes a client gets: the file's JSON is compacted back before comparing,
// so an answer with insignificant whitespace, or different escapes, fails.
// A body that is neither JSON nor JSONP is kept as it is.
package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Update reports whether the tests run with -update.
func Update() bool { return *update }

// Check compares body, the exact bytes of an answer, with the golden file
// at path, or rewrites the file with -update.
func Check(tb testing.TB, path string, body []byte) {
	tb.Helper()
	check(tb, path, "", body)
}

// CheckTranscript is Check for a golden file that holds a head before the
// body: the request and status lines of an HTTP exchange, say. head ends
// in a blank line ("\n\n") and is compared as it is.
func CheckTranscript(tb testing.TB, path, head string, body []byte) {
	tb.Helper()
	if !strings.HasSuffix(head, "\n\n") {
		tb.Fatalf("golden: the head of %s does not end in a blank line", path)
	}
	check(tb, path, head, body)
}

func check(tb testing.TB, path, head string, body []byte) {
	tb.Helper()
	if *update {
		if err := write(path, head, body); err != nil {
			tb.Fatal(err)
		}
		return
	}
	wantHead, want, err := read(path, head != "")
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if wantHead != head || !bytes.Equal(body, want) {
		tb.Errorf("%s differs (go test -update rewrites it; read the diff):\ngot\n%s%s\nwant\n%s%s",
			path, head, pretty(body), wantHead, pretty(want))
	}
}

// Read returns the body of the golden file at path as the client got it:
// the bytes Check compares.
func Read(path string) ([]byte, error) {
	_, body, err := read(path, false)
	return body, err
}

// ReadTranscript returns the head and body of a golden file that
// CheckTranscript wrote.
func ReadTranscript(path string) (head string, body []byte, err error) {
	return read(path, true)
}

func write(path, head string, body []byte) error {
	p := pretty(body)
	if !bytes.Equal(compact(p), body) {
		return errors.New("golden: " + path + ": the answer is JSON, but not compact; golden files hold compact answers")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(head), append(p, '\n')...), 0o644)
}

func read(path string, withHead bool) (string, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	var head string
	if withHead {
		i := bytes.Index(b, []byte("\n\n"))
		if i < 0 {
			return "", nil, errors.New("golden: " + path + " has no blank line after its head")
		}
		head, b = string(b[:i+2]), b[i+2:]
	}
	b, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return "", nil, errors.New("golden: " + path + " does not end in a newline")
	}
	return head, compact(b), nil
}

// pretty indents a JSON body, or the JSON inside a JSONP body
// ("/**/cb({...});"); any other body it returns as it is.
func pretty(b []byte) []byte {
	return reformat(b, func(dst *bytes.Buffer, src []byte) error { return json.Indent(dst, src, "", "  ") })
}

// compact undoes pretty.
func compact(b []byte) []byte {
	return reformat(b, json.Compact)
}

func reformat(b []byte, f func(*bytes.Buffer, []byte) error) []byte {
	var prefix, inner, suffix []byte
	switch {
	case json.Valid(b):
		inner = b
	case jsonp(b):
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		prefix, inner, suffix = b[:i+1], b[i+1:j], b[j:]
	default:
		return b
	}
	var out bytes.Buffer
	out.Write(prefix)
	if err := f(&out, inner); err != nil {
		return b
	}
	out.Write(suffix)
	return out.Bytes()
}

// jsonp reports whether b is a callback call with one JSON argument.
func jsonp(b []byte) bool {
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	return i > 0 && j > i && bytes.IndexByte(b[:i], '{') < 0 && json.Valid(b[i+1:j]) &&
		len(bytes.TrimSpace(b[j+1:])) <= 1
}
