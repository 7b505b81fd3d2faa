package pages

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// h2Only is a TLS server on loopback that speaks only HTTP/2 and, to a
// client that speaks it, sends frames of an unknown type without end
// (which a client must ignore, and net/http logs one line for each). It
// returns its URL, the pool that trusts it and the count of bytes of
// such frames it sent.
func h2Only(t *testing.T) (string, *x509.CertPool, *atomic.Int64) {
	t.Helper()
	certSrc := httptest.NewTLSServer(http.NotFoundHandler())
	cert := certSrc.TLS.Certificates[0]
	roots := x509.NewCertPool()
	roots.AddCert(certSrc.Certificate())
	certSrc.Close()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	track(t, l, func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
			return
		}
		fr := http2.NewFramer(c, c)
		if fr.WriteSettings() != nil {
			return
		}
		go io.Copy(io.Discard, c)
		junk := make([]byte, 16<<10)
		for sent.Load() < 16<<20 {
			if fr.WriteRawFrame(0xfa, 0, 0, junk) != nil {
				return
			}
			sent.Add(int64(len(junk)))
		}
	})
	return "https://" + l.Addr().String(), roots, &sent
}

// track serves each connection l accepts with serve, and at the test's
// end closes l and every connection and waits for them.
func track(t *testing.T, l net.Listener, serve func(c net.Conn)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// TestFetchSpeaksNoHTTP2: over HTTP/2 a server can send frames that carry
// no body bytes without end, which no cap on the body sees. The fetcher
// speaks HTTP/1.1 only, so a server that speaks only HTTP/2 gets no
// request and sends no frame.
func TestFetchSpeaksNoHTTP2(t *testing.T) {
	u, roots, sent := h2Only(t)
	f := newFetcher(t, FetchOptions{AllowPrivate: true, MaxBytes: 64 << 10, Timeout: time.Minute, roots: roots})
	doc, err := f.Fetch(context.Background(), u+"/page", nil)
	if err == nil || sent.Load() != 0 {
		t.Fatalf("Fetch = %v (a document: %t); the server sent %d bytes of HTTP/2 frames", err, doc != nil, sent.Load())
	}
	// HTTPS itself works: the same certificate over HTTP/1.1.
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		if r.ProtoMajor != 1 {
			t.Errorf("request over %s", r.Proto)
		}
		fmt.Fprint(w, htmlPage)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	roots = x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	f = newFetcher(t, FetchOptions{AllowPrivate: true, roots: roots})
	if doc, err := f.Fetch(context.Background(), ts.URL+"/page", nil); err != nil || doc.HTML != htmlPage {
		t.Fatalf("HTTPS page: %v %v", doc, err)
	}
}

// TestFetchConnectionCapped: chunked framing lets a server send many
// bytes for each byte of body (a chunk of one byte with an extension),
// which the cap on the body does not count. What one connection reads is
// capped too: a body under the cap sent that way fails as too large.
func TestFetchConnectionCapped(t *testing.T) {
	const maxBytes = 64 << 10
	base := rawServer(t, func(c net.Conn, req *http.Request) {
		w := bufio.NewWriter(c)
		fmt.Fprint(w, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
		n, ext := maxBytes-1024, ";"+strings.Repeat("x", 12)
		if req.URL.Path == "/plain" {
			n, ext = maxBytes/2, ""
		}
		for i := range n {
			fmt.Fprintf(w, "1%s\r\n%c\r\n", ext, "<p>x</p>"[i%8])
		}
		fmt.Fprint(w, "0\r\n\r\n")
		w.Flush()
	})
	f := newFetcher(t, FetchOptions{AllowPrivate: true, MaxBytes: maxBytes, Timeout: time.Minute})
	doc, err := f.Fetch(context.Background(), base+"/extensions", nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Fetch = %v (a document: %t); want ErrTooLarge", err, doc != nil)
	}
	// One-byte chunks without extensions stay under the cap.
	if doc, err := f.Fetch(context.Background(), base+"/plain", nil); err != nil || len(doc.HTML) != maxBytes/2 {
		t.Fatalf("plain one-byte chunks: %v", err)
	}
}
