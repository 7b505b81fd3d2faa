package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-json"
)

// TestLogLinesHoldRequestFields: what a client sends and the server logs
// (the path of every request at debug) cannot start a line of its own
// nor reach the operator's terminal as a control sequence. A path with
// a line break and a forged record, and an escape that clears the screen,
// is one line of JSON, its bytes escaped.
func TestLogLinesHoldRequestFields(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", t.TempDir(), "-demo",
			"-log-level", "debug"}, noEnv, io.Discard, pw)
		pw.Close()
	}()
	var (
		mu    sync.Mutex
		lines [][]byte
	)
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, bytes.Clone(sc.Bytes()))
			mu.Unlock()
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
				addr <- l.Addr
			}
		}
		io.Copy(io.Discard, pr)
	}()
	var base string
	select {
	case base = <-addr:
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no listening record in JSON: the log is not JSON lines")
	}

	forged := "\n{\"level\":\"ERROR\",\"msg\":\"forged\"}\x1b[2J\r"
	paths := []string{
		"/v2/search/link%0A%7B%22level%22%3A%22ERROR%22%2C%22msg%22%3A%22forged%22%7D%1B%5B2J%0D?q=handy&api_key=demo&site_id=demo",
		"/nope/%0A%7B%22level%22%3A%22ERROR%22%2C%22msg%22%3A%22forged%22%7D%1B%5B2J%0D",
	}
	for _, p := range paths {
		// The raw request line, as an attacker writes it: no client library
		// between that might clean it.
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		io.Copy(io.Discard, c)
		c.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	<-read

	mu.Lock()
	defer mu.Unlock()
	logged := 0
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Errorf("a log line that is not one JSON record: %q", l)
			continue
		}
		if rec["msg"] == "forged" {
			t.Errorf("a forged record: %q", l)
		}
		if bytes.ContainsAny(l, "\x1b\r") {
			t.Errorf("a control byte in a log line: %q", l)
		}
		if p, _ := rec["path"].(string); rec["msg"] == "request" && strings.Contains(p, forged) {
			logged++
		}
	}
	// Both paths were logged whole, escaped, so the test saw what it sent.
	// (A header field with a control byte, such as an escape in the User-Agent,
	// never reaches the handler: net/http answers 400 itself.)
	if logged != len(paths) {
		t.Errorf("%d request lines with the hostile path, want %d; lines:\n%s", logged, len(paths), bytes.Join(lines, []byte("\n")))
	}
}
