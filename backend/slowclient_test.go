package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowClient connects to the server at base, writes head at once, then
// one more line of trickle every tick until the server stops it, and
// returns what the server sent before it ended the connection. The test
// fails when the server keeps the connection past a minute.
func slowClient(t *testing.T, base, head, trickle string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A bound on the test, not a figure under test.
	conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(conn, trickle); err != nil {
					return
				}
			}
		}
	}()
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept a slow client's connection for a minute; it sent %q", got)
	}
	return string(got)
}

// A client that never ends its header fields, or sends a body a byte at a
// time, holds a connection only as long as the server's read timeouts
// allow: the server cuts it, answering nothing to the first and not
// waiting for the body of the second, which no route reads.
func TestSlowClientsAreCut(t *testing.T) {
	srv := startServer(t, buildServer(t), t.TempDir())
	if got := slowClient(t, srv.base, "GET /healthz HTTP/1.1\r\nHost: x\r\n", "X-Slow: a\r\n"); strings.Contains(got, "200 OK") {
		t.Errorf("headers never ended, yet the server answered %q", got)
	}
	got := slowClient(t, srv.base, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", "b")
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("a slow body's request: %v, answer %q; want 200 and the connection cut", err, got)
	}
}
