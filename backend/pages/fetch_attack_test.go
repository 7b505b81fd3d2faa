package pages

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.dny.dev/ssrf"

	"github.com/adlink/adlink/internal/testnet"
)

// The attacks of this file are those a hostile page, its DNS or its
// server can make on the fetcher, each over a real loopback connection.

// TestFetchGuardRefusesEverySpecialRange: every address that is not the
// public internet is refused after resolution, however it is written:
// IPv4-mapped, -compatible and -translated, NAT64 (well-known and local
// use), 6to4 and Teredo around loopback or the metadata address,
// unique-local, link-local with a zone, multicast, this network, CGNAT,
// benchmarking, reserved and broadcast. Nothing is dialled.
func TestFetchGuardRefusesEverySpecialRange(t *testing.T) {
	var hits atomic.Int32
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	answers := map[string]string{
		"this-network.test":    "0.1.2.3",
		"unspecified.test":     "0.0.0.0",
		"cgnat-top.test":       "100.127.255.254",
		"bench.test":           "198.18.0.1",
		"bench-top.test":       "198.19.255.255",
		"ietf.test":            "192.0.0.170",
		"multicast.test":       "224.0.0.1",
		"ssdp.test":            "239.255.255.250",
		"reserved.test":        "240.0.0.1",
		"broadcast.test":       "255.255.255.255",
		"compatible.test":      "::7f00:1",
		"mapped-private.test":  "::ffff:10.0.0.1",
		"mapped-meta.test":     "::ffff:169.254.169.254",
		"translated.test":      "::ffff:0:7f00:1",
		"nat64-meta.test":      "64:ff9b::a9fe:a9fe",
		"nat64-local.test":     "64:ff9b:1::7f00:1",
		"6to4-loop.test":       "2002:7f00:1::",
		"6to4-meta.test":       "2002:a9fe:a9fe::1",
		"teredo.test":          "2001:0:4136:e378:8000:63bf:80ff:fffe",
		"ula.test":             "fd12:3456:789a::1",
		"ula-fc.test":          "fc00::1",
		"link-local6.test":     "fe80::1",
		"link-local-zone.test": "fe80::1%lo",
		"multicast6.test":      "ff02::1",
		"unspecified6.test":    "::",
		"discard6.test":        "100::1",
		"doc6.test":            "2001:db8::1",
		// What a resolver built on inet_aton (glibc's) answers for the
		// decimal, hex, octal and short spellings of 127.0.0.1.
		"2130706433": "127.0.0.1",
		"0x7f.1":     "127.0.0.1",
		"0177.0.0.1": "127.0.0.1",
		"127.1":      "127.0.0.1",
		"0x7f000001": "127.0.0.1",
	}
	// Any port: only the address is on trial.
	f := newFetcher(t, FetchOptions{Resolve: testnet.Resolver(answers), guard: []ssrf.Option{ssrf.WithAnyPort()}})
	var urls []string
	for host := range answers {
		urls = append(urls, fmt.Sprintf("http://%s:%d/", host, port))
	}
	for _, literal := range []string{
		"[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]", "[64:ff9b::127.0.0.1]",
		"[2002:7f00:1::]", "[fd00::1]", "[fe80::1%25lo]", "[ff02::1]", "0.0.0.0", "100.64.0.1", "198.18.0.1",
		"224.0.0.1",
	} {
		urls = append(urls, fmt.Sprintf("http://%s:%d/", literal, port))
	}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), u, nil)
			if !errors.Is(err, ErrProhibitedAddress) {
				t.Fatalf("Fetch(%s) = %v, want ErrProhibitedAddress", u, err)
			}
		})
	}
	// The system's resolver either answers as glibc does, and the guard
	// refuses the answer, or finds no such host; never the server.
	sys := newFetcher(t, FetchOptions{guard: []ssrf.Option{ssrf.WithAnyPort()}})
	for _, host := range []string{"2130706433", "0x7f.1", "0177.0.0.1", "127.1", "localhost"} {
		u := fmt.Sprintf("http://%s:%d/", host, port)
		_, err := sys.Fetch(context.Background(), u, nil)
		if !errors.Is(err, ErrProhibitedAddress) && !errors.Is(err, ErrHostNotFound) {
			t.Errorf("Fetch(%s) with the system resolver = %v", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the loopback server", n)
	}
}

// TestFetchDNSRebinding: a name that answers a public address for the
// check and a private one for the next connection reaches nothing
// private, because the guard judges the address of each connection, not
// the answer of an earlier lookup.
func TestFetchDNSRebinding(t *testing.T) {
	pub, priv := testnet.ListenPair(t)
	var reached atomic.Int32
	page := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			// A new connection for the page, so a new lookup.
			w.Header().Set("Connection", "close")
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, htmlPage)
	}
	servePublic := &http.Server{Handler: http.HandlerFunc(page)}
	servePrivate := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		page(w, r)
	})}
	go servePublic.Serve(pub)
	go servePrivate.Serve(priv)
	t.Cleanup(func() { servePublic.Close(); servePrivate.Close() })

	var lookups atomic.Int32
	f := newFetcher(t, FetchOptions{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if lookups.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		guard: []ssrf.Option{ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.2/32"))},
	})
	u := fmt.Sprintf("http://rebind.test:%d/", pub.Addr().(*net.TCPAddr).Port)
	_, err := f.Fetch(context.Background(), u, nil)
	if !errors.Is(err, ErrProhibitedAddress) {
		t.Fatalf("Fetch = %v, want ErrProhibitedAddress", err)
	}
	if lookups.Load() < 2 {
		t.Fatalf("%d lookups: the page's connection did not look the name up again", lookups.Load())
	}
	if reached.Load() != 0 {
		t.Fatalf("the private server was reached %d times", reached.Load())
	}
	// A lookup answering a refused address beside an allowed one connects
	// to the allowed one only.
	lookups.Store(0)
	both := newFetcher(t, FetchOptions{
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}, nil
		},
		guard: []ssrf.Option{ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.2/32"))},
	})
	if doc, err := both.Fetch(context.Background(), u, nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("Fetch with a refused and an allowed answer = %v, %v", doc, err)
	}
	if reached.Load() != 0 {
		t.Fatalf("the private server was reached %d times", reached.Load())
	}
}

// TestFetchRedirectTargets: a redirect to another scheme, to credentials,
// to a host off the site (scheme-relative included) or to a private
// address is not followed.
func TestFetchRedirectTargets(t *testing.T) {
	var offsite atomic.Int32
	evil := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offsite.Add(1)
		fmt.Fprint(w, htmlPage)
	}))
	evilPort := evil.Listener.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", http.NotFound)
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("l"))
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	site := serve(t, mux)
	port := site.Listener.Addr().(*net.TCPAddr).Port
	res := testnet.Resolver(map[string]string{"site.test": "127.0.0.1", "evil.test": "127.0.0.1"})
	onSite := func(host string) bool { return host == "site.test" }
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: res})
	for _, c := range []struct {
		location string
		err      error
	}{
		{"javascript:alert(1)", ErrRedirectScheme},
		{"file:///etc/passwd", ErrRedirectScheme},
		{"data:text/html,<p>x</p>", ErrRedirectScheme},
		{"gopher://site.test:" + fmt.Sprint(port) + "/_GET", ErrRedirectScheme},
		{"ftp://site.test/", ErrRedirectScheme},
		{fmt.Sprintf("http://user:pw@site.test:%d/ok", port), ErrRedirectScheme},
		{fmt.Sprintf("http://site.test:%d@evil.test:%d/", port, evilPort), ErrRedirectScheme},
		{fmt.Sprintf("//evil.test:%d/", evilPort), ErrOffSite},
		{fmt.Sprintf("http://evil.test:%d/", evilPort), ErrOffSite},
		{fmt.Sprintf("http://site.test.evil.test:%d/", evilPort), ErrOffSite},
		{fmt.Sprintf("http://127.0.0.1:%d/", evilPort), ErrOffSite},
	} {
		t.Run(c.location, func(t *testing.T) {
			u := fmt.Sprintf("http://site.test:%d/to?l=%s", port, urlQueryEscape(c.location))
			_, err := f.Fetch(context.Background(), u, onSite)
			if !errors.Is(err, c.err) {
				t.Fatalf("Fetch = %v, want %v", err, c.err)
			}
		})
	}
	if offsite.Load() != 0 {
		t.Fatalf("the off-site server was reached %d times", offsite.Load())
	}
	// With the guard on, a redirect on the site's own name to a private
	// address is refused at the connection.
	guarded := newFetcher(t, FetchOptions{
		Resolve: testnet.Resolver(map[string]string{"site.test": "127.0.0.2", "inner.site.test": "10.1.2.3"}),
		guard:   []ssrf.Option{ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.2/32"))},
	})
	outer := testnet.ServeOn(t, "127.0.0.2", mux)
	u := fmt.Sprintf("http://site.test:%d/to?l=%s", outer.Listener.Addr().(*net.TCPAddr).Port,
		urlQueryEscape("http://inner.site.test/latest/meta-data/"))
	if _, err := guarded.Fetch(context.Background(), u, func(h string) bool { return strings.HasSuffix(h, "site.test") }); !errors.Is(err, ErrProhibitedAddress) {
		t.Fatalf("redirect to a private address on the site's name: %v", err)
	}
}

func urlQueryEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// emptyGzipMember is a whole gzip member that decodes to nothing.
func emptyGzipMember() []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Close()
	return b.Bytes()
}

// TestFetchBodyCappedAsSent: the size cap holds for the bytes the server
// sends, not only for what they decode to. A gzip body of endless empty
// members (or of one small page followed by them) decodes to next to
// nothing, so a cap on the decoded bytes alone never stops it, and the
// fetcher would download until its timeout.
func TestFetchBodyCappedAsSent(t *testing.T) {
	const maxBytes = 64 << 10
	var page bytes.Buffer
	zw := gzip.NewWriter(&page)
	zw.Write([]byte(htmlPage))
	zw.Close()
	empty := emptyGzipMember()
	// The server stops at 16 MiB, so that a fetcher without the cap ends
	// (with the page) instead of running to its timeout.
	const stopAt = 16 << 20
	var sent atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", http.NotFound)
	endless := func(first []byte, next []byte, encoding string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			if encoding != "" {
				w.Header().Set("Content-Encoding", encoding)
			}
			n, _ := w.Write(first)
			chunk := bytes.Repeat(next, 32<<10/len(next))
			for total := int64(n); total < stopAt; {
				n, err := w.Write(chunk)
				total += int64(n)
				sent.Store(total)
				if err != nil {
					return
				}
			}
		}
	}
	mux.HandleFunc("/empty-members", endless(empty, empty, "gzip"))
	mux.HandleFunc("/page-then-empty-members", endless(page.Bytes(), empty, "gzip"))
	mux.HandleFunc("/endless-chunked", endless([]byte("<html><body>"), []byte("<p>again</p>"), ""))
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true, MaxBytes: maxBytes, Timeout: time.Minute})
	for _, path := range []string{"/empty-members", "/page-then-empty-members", "/endless-chunked"} {
		t.Run(path, func(t *testing.T) {
			doc, err := f.Fetch(context.Background(), ts.URL+path, nil)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Fetch = %v (a document: %t) after the server sent %d bytes; want ErrTooLarge", err, doc != nil, sent.Load())
			}
		})
	}
}

// TestFetchRefusesOtherEncodings: only gzip is asked for and decoded; a
// body in another encoding (br, zstd, deflate, or gzip twice) is refused
// rather than read as HTML.
func TestFetchRefusesOtherEncodings(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(htmlPage))
	zw.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", http.NotFound)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", r.URL.Query().Get("ce"))
		w.Write(gz.Bytes())
	})
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	for _, ce := range []string{"br", "zstd", "deflate", "compress", "gzip, gzip", "identity, gzip"} {
		_, err := f.Fetch(context.Background(), ts.URL+"/?ce="+urlQueryEscape(ce), nil)
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Reason != "unsupported content encoding" {
			t.Errorf("Content-Encoding %q: %v, want unsupported content encoding", ce, err)
		}
	}
	if doc, err := f.Fetch(context.Background(), ts.URL+"/?ce=gzip", nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("gzip: %v %v", doc, err)
	}
}

// rawServer answers robots.txt with 404 and every other request with
// answer, over plain TCP, so a test can send what net/http would not.
func rawServer(t *testing.T, answer func(c net.Conn, req *http.Request)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	track(t, l, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if req.URL.Path == "/robots.txt" {
			fmt.Fprint(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
		answer(c, req)
	})
	return "http://" + l.Addr().String()
}

// TestFetchHostileHeaders: headers past the cap fail at once, and headers
// sent a byte at a time (slowloris) fail at the header timeout, well
// before the fetch's own.
func TestFetchHostileHeaders(t *testing.T) {
	huge := rawServer(t, func(c net.Conn, _ *http.Request) {
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		for range 4 << 10 { // 4 MB of headers
			if _, err := c.Write([]byte(line)); err != nil {
				return
			}
		}
		fmt.Fprint(c, "\r\n"+htmlPage)
	})
	slow := rawServer(t, func(c net.Conn, _ *http.Request) {
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: ")
		for {
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Timeout: time.Minute, HeaderTimeout: 500 * time.Millisecond})
	_, err := f.Fetch(context.Background(), huge+"/", nil)
	if err == nil || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "header") {
		t.Errorf("4 MB of headers: %v, want the header cap's error", err)
	}
	_, err = f.Fetch(context.Background(), slow+"/", nil)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "awaiting response headers") {
		t.Errorf("slow headers: %v, want the header timeout's ErrTimeout", err)
	}
}

// TestFetchJudgesTheDeclaredTypeFirst: a body whose declared type is not
// HTML is refused before it is read, so an endless download of a file
// that is no page ends at once; and the media type a reason names is the
// server's choice, so one past a few dozen bytes is not repeated in it.
func TestFetchJudgesTheDeclaredTypeFirst(t *testing.T) {
	var written atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", http.NotFound)
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := make([]byte, 32<<10)
		for written.Load() < 64<<20 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	longType := "application/" + strings.Repeat("x", 30000)
	mux.HandleFunc("/long-type", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", longType)
		fmt.Fprint(w, htmlPage)
	})
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Timeout: time.Minute})
	_, err := f.Fetch(context.Background(), ts.URL+"/stream", nil)
	var fe *FetchError
	if !errors.Is(err, ErrNotHTML) || !errors.As(err, &fe) || fe.Reason != "not HTML (application/octet-stream)" {
		t.Errorf("endless octet stream: %v, want not HTML", err)
	}
	_, err = f.Fetch(context.Background(), ts.URL+"/long-type", nil)
	if !errors.As(err, &fe) || fe.Reason != "not HTML (unknown)" {
		t.Errorf("a 30 KB media type: %.200v, want not HTML (unknown)", err)
	}
}

// TestFetchUsesNoProxy: the page fetcher connects to the page's server
// itself, whatever HTTPS_PROXY and HTTP_PROXY say (the catalog's feed
// fetcher honours them): through a proxy the guard would judge the
// proxy's address, and a page could lead the proxy anywhere.
func TestFetchUsesNoProxy(t *testing.T) {
	f := newFetcher(t, FetchOptions{})
	if f.tr.Proxy != nil {
		t.Fatal("the page fetcher's transport picks a proxy")
	}
}

// TestFetchRefusesPortsButWebOnes: a site's name that resolves to a public
// address reaches it on ports 80 and 443 only, so that a publisher cannot
// point the fetcher at another service of a public host (a mail or
// database port) by naming a port in its page URL. The same host on the
// same port is fetched once any port is allowed: the port alone refuses.
func TestFetchRefusesPortsButWebOnes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><body><p>Hello world.</p></body></html>")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
	}
	public := ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.2/32"))
	u := fmt.Sprintf("http://shop.test:%d/", ln.Addr().(*net.TCPAddr).Port)

	f := newFetcher(t, FetchOptions{Resolve: resolve, guard: []ssrf.Option{public}})
	if _, err := f.Fetch(context.Background(), u, nil); err == nil || reached.Load() != 0 {
		t.Fatalf("Fetch %s = %v, the host reached %d times; want a refusal before any connection", u, err, reached.Load())
	}
	any := newFetcher(t, FetchOptions{Resolve: resolve, guard: []ssrf.Option{public, ssrf.WithAnyPort()}})
	if doc, err := any.Fetch(context.Background(), u, nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("Fetch %s with any port allowed = %v, %v", u, doc, err)
	}
}
