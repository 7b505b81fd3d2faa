package testpg

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy between a test's clients and a Postgres
// server. It forwards the protocol's messages both ways and, when told
// (LoseReply), loses the server's reply to a statement: the client's
// messages reach the server, which runs the statement and, outside a
// transaction block, commits it; once the server's reply is complete (its
// ReadyForQuery), the proxy closes both connections without forwarding
// any of it. The client sees the connection end after it sent the
// statement, as when a network or a server's machine fails between the
// commit and the answer.
type Proxy struct {
	target string // the server's host:port
	l      net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	pattern []byte        // what a statement's text holds for its reply to be lost
	left    int           // how many more replies to lose
	lost    int           // replies lost so far
	onLoss  chan struct{} // closed, and replaced, at each loss
	conns   map[net.Conn]struct{}
	closed  bool
}

// NewProxy starts a proxy to the server of the postgres:// URL u, closed
// when tb ends; its URL is u through the proxy.
func NewProxy(tb testing.TB, u string) *Proxy {
	tb.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("testpg: proxy: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testpg: proxy: %v", err)
	}
	p := &Proxy{target: parsed.Host, l: l, conns: map[net.Conn]struct{}{}, onLoss: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL returns u, a URL of the proxy's server, with the proxy's address in
// place of the server's.
func (p *Proxy) URL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	parsed.Host = p.l.Addr().String()
	return parsed.String()
}

// LoseReply loses the replies to the next n statements whose text holds
// pattern: a simple query's text, or an extended query's prepared
// statement, when a portal of it is executed.
func (p *Proxy) LoseReply(pattern string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pattern, p.left = []byte(pattern), n
}

// Lost returns how many replies the proxy lost.
func (p *Proxy) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// WaitLost returns once the proxy lost n replies, or with ctx's error.
func (p *Proxy) WaitLost(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		lost, ch := p.lost, p.onLoss
		p.mu.Unlock()
		if lost >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("testpg: proxy: %d replies lost, not %d: %w", lost, n, ctx.Err())
		}
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.l.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.l.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.mu.Unlock()
		c := &proxied{p: p, client: client, server: server, stmts: map[string]string{}, portals: map[string]string{}}
		p.wg.Add(2)
		go c.fromClient()
		go c.fromServer()
	}
}

// proxied is one client's connection and the server's.
type proxied struct {
	p              *Proxy
	client, server net.Conn

	// The client's goroutine's: the text of each prepared statement and
	// of each portal's.
	stmts, portals map[string]string

	mu      sync.Mutex
	flights []*flight // what the server answers, oldest first
	open    *flight   // the flight the client is sending, not yet ended
}

// flight is the client's messages up to one that the server answers with
// ReadyForQuery: the startup message, a simple query, or an extended
// query's messages up to their Sync.
type flight struct{ lose bool }

func (c *proxied) close() {
	c.client.Close()
	c.server.Close()
	c.p.mu.Lock()
	delete(c.p.conns, c.client)
	delete(c.p.conns, c.server)
	c.p.mu.Unlock()
}

// The protocol's startup codes that are not a startup message.
const (
	sslRequest    = 80877103
	gssEncRequest = 80877104
)

// fromClient forwards the client's messages to the server, and marks the
// flights whose replies are to be lost.
func (c *proxied) fromClient() {
	defer c.p.wg.Done()
	defer c.close()
	r := bufio.NewReader(c.client)
	// The startup: a request for TLS or GSS encryption is refused here,
	// as the test's server offers neither; then the startup message,
	// whose reply ends with the first ReadyForQuery.
	for {
		var head [8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[:4]))
		if n < 8 || n > 1<<20 {
			return
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(head[4:]); code == sslRequest || code == gssEncRequest {
			if _, err := c.client.Write([]byte{'N'}); err != nil {
				return
			}
			continue
		}
		c.begin()
		if _, err := c.server.Write(append(head[:], body...)); err != nil {
			return
		}
		break
	}
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return
		}
		body := msg[5:]
		switch typ {
		case 'd', 'c', 'f', 'X': // copy data, done, fail; terminate: no flight of their own
		default:
			c.begin()
		}
		switch typ {
		case 'Q':
			c.match(c.holds(cstring(body)))
		case 'P':
			name, rest := cut(body)
			c.stmts[name] = cstring(rest)
		case 'B':
			portal, rest := cut(body)
			c.portals[portal] = c.stmts[cstring(rest)]
		case 'E':
			c.match(c.holds(c.portals[cstring(body)]))
		}
		if typ == 'Q' || typ == 'S' || typ == 'F' {
			// The server's ReadyForQuery ends the flight.
			c.mu.Lock()
			c.open = nil
			c.mu.Unlock()
		}
		if _, err := c.server.Write(msg); err != nil {
			return
		}
	}
}

// begin opens a flight unless one is open: before its first message
// reaches the server, so that the server's reply finds it.
func (c *proxied) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = &flight{}
		c.flights = append(c.flights, c.open)
	}
}

// holds reports whether text holds the proxy's pattern.
func (c *proxied) holds(text string) bool {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return len(c.p.pattern) > 0 && bytes.Contains([]byte(text), c.p.pattern)
}

// match marks the open flight's reply to be lost when a statement that
// holds the pattern runs in it and replies are still to be lost.
func (c *proxied) match(holds bool) {
	if !holds {
		return
	}
	c.p.mu.Lock()
	lose := c.p.left > 0
	if lose {
		c.p.left--
	}
	c.p.mu.Unlock()
	if lose {
		c.mu.Lock()
		c.open.lose = true
		c.mu.Unlock()
	}
}

// fromServer forwards the server's messages to the client, but those of
// a flight whose reply is lost: at its ReadyForQuery both connections
// close.
func (c *proxied) fromServer() {
	defer c.p.wg.Done()
	defer c.close()
	r := bufio.NewReader(c.server)
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return
		}
		c.mu.Lock()
		var head *flight
		if len(c.flights) > 0 {
			head = c.flights[0]
			if typ == 'Z' {
				c.flights = c.flights[1:]
				if c.open == head {
					c.open = nil // the startup's, which no message of the client's ends
				}
			}
		}
		c.mu.Unlock()
		if head != nil && head.lose {
			if typ == 'Z' {
				c.p.mu.Lock()
				c.p.lost++
				close(c.p.onLoss)
				c.p.onLoss = make(chan struct{})
				c.p.mu.Unlock()
				return
			}
			continue
		}
		if _, err := c.client.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one message of the protocol after the startup: its
// type byte and the message whole.
func readMessage(r *bufio.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(head[1:]))
	if n < 4 || n > 1<<30 {
		return 0, nil, fmt.Errorf("testpg: proxy: a message of %d bytes", n)
	}
	msg := make([]byte, 1+n)
	copy(msg, head[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, errors.Join(err, io.ErrUnexpectedEOF)
	}
	return head[0], msg, nil
}

// cstring is b up to its first NUL, as the protocol ends its strings.
func cstring(b []byte) string {
	s, _ := cut(b)
	return s
}

// cut splits b after its first NUL: the string before, the bytes after.
func cut(b []byte) (string, []byte) {
	before, after, _ := bytes.Cut(b, []byte{0})
	return string(before), after
}
