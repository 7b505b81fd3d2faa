package pages

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.dny.dev/ssrf"

	"github.com/adlink/adlink/internal/testnet"
)

func newFetcher(t testing.TB, o FetchOptions) *Fetcher {
	t.Helper()
	f := NewFetcher(o)
	t.Cleanup(f.Close)
	return f
}

// allowAllRobots adds to mux a robots.txt that allows everything and
// returns the count of its reads.
func allowAllRobots(mux *http.ServeMux) *atomic.Int32 {
	var robots atomic.Int32
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		robots.Add(1)
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	})
	return &robots
}

func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

const htmlPage = `<!doctype html><html lang="en"><head><title>T</title></head><body><article><p>Hello world.</p></article></body></html>`

func TestFetchGuardRefusesInternalAddresses(t *testing.T) {
	var hits atomic.Int32
	// Nothing should ever be dialled; the server only counts if it were.
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	_ = ts
	res := testnet.Resolver(map[string]string{
		"loopback.test":  "127.0.0.1",
		"private.test":   "10.0.0.1",
		"metadata.test":  "169.254.169.254",
		"v6loop.test":    "::1",
		"mapped.test":    "::ffff:127.0.0.1",
		"nat64.test":     "64:ff9b::7f00:1",
		"cgnat.test":     "100.64.0.1",
		"private16.test": "192.168.1.1",
	})
	f := newFetcher(t, FetchOptions{Resolve: res})
	for _, u := range []string{
		"http://loopback.test/", "http://private.test/", "http://metadata.test/latest/meta-data/",
		"http://v6loop.test/", "http://mapped.test/", "http://nat64.test/", "http://cgnat.test/",
		"https://private16.test/", "http://127.0.0.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
		"http://169.254.169.254/", "http://0.0.0.0/",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), u, nil)
			if !errors.Is(err, ErrProhibitedAddress) {
				t.Fatalf("Fetch(%s) = %v, want ErrProhibitedAddress", u, err)
			}
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Reason != "address not allowed" {
				t.Fatalf("reason of %v", err)
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached a server", hits.Load())
	}
}

func TestFetchGuardRefusesRedirectToLoopback(t *testing.T) {
	var internal atomic.Int32
	inner := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			internal.Add(1)
		}
		fmt.Fprint(w, htmlPage)
	}))
	// The outer server plays a public host (127.0.0.2, allowed through the
	// guard for this test only) that redirects to loopback.
	outer := testnet.ServeOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/hop":
			http.Redirect(w, r, "http://loopback.test:"+inner.Listener.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]+"/", http.StatusFound)
		default:
			http.Redirect(w, r, inner.URL+"/", http.StatusFound)
		}
	}))
	f := newFetcher(t, FetchOptions{
		Resolve: testnet.Resolver(map[string]string{"public.test": "127.0.0.2", "loopback.test": "127.0.0.1"}),
		guard:   []ssrf.Option{ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.2/32"))},
	})
	port := outer.Listener.Addr().(*net.TCPAddr).Port
	for _, path := range []string{"/", "/hop"} {
		u := fmt.Sprintf("http://public.test:%d%s", port, path)
		_, err := f.Fetch(context.Background(), u, nil)
		if !errors.Is(err, ErrProhibitedAddress) {
			t.Fatalf("Fetch(%s) = %v, want ErrProhibitedAddress", u, err)
		}
	}
	if internal.Load() != 0 {
		t.Fatalf("the loopback server was reached %d times", internal.Load())
	}
	// The same public page without a redirect is fetched: the guard only
	// refuses the hop.
	ok := testnet.ServeOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, htmlPage)
	}))
	u := fmt.Sprintf("http://public.test:%d/", ok.Listener.Addr().(*net.TCPAddr).Port)
	if _, err := f.Fetch(context.Background(), u, nil); err != nil {
		t.Fatalf("allowed page: %v", err)
	}
}

// hostile serves the bad pages of the fetch tests on loopback.
func hostile(t *testing.T) *httptest.Server {
	var zeros bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zeros, gzip.BestCompression)
	chunk := make([]byte, 1<<20)
	for range 50 {
		zw.Write(chunk)
	}
	zw.Close()
	bomb := zeros.Bytes()

	latin1 := []byte("<html><head><title>Caf\xe9</title></head><body><article><p>Le caf\xe9 cr\xe8me co\xfbte trois euros \xe0 Paris, na\xefvement.</p></article></body></html>")

	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: adlink-pagebot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /all-bots-but-us\n")
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, htmlPage)
	})
	mux.HandleFunc("/all-bots-but-us", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	mux.HandleFunc("/private/page", func(w http.ResponseWriter, r *http.Request) {
		t.Error("robots.txt disallowed page was requested")
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop2", http.StatusFound)
	})
	mux.HandleFunc("/loop2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/to-private", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/private/page", http.StatusFound)
	})
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.com/", http.StatusFound)
	})
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fl := w.(http.Flusher)
		for i := 0; ; i++ {
			if _, err := w.Write([]byte{"<html>"[i%6]}); err != nil {
				return
			}
			fl.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
	mux.HandleFunc("/404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("/doc.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n"))
	})
	mux.HandleFunc("/untyped.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		w.Write([]byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n"))
	})
	mux.HandleFunc("/untyped.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		fmt.Fprint(w, htmlPage)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(latin1)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		p := bytes.Repeat([]byte("<p>lorem ipsum dolor sit amet</p>\n"), 5<<20/34+1)
		w.Write(p)
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		line := []byte("<p>lorem ipsum dolor sit amet</p>\n")
		for i := 0; i < 5<<20/len(line)+1; i++ {
			if _, err := w.Write(line); err != nil {
				return
			}
			if i%1000 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	})
	return serve(t, mux)
}

func TestFetchBadPages(t *testing.T) {
	ts := hostile(t)
	// Only /trickle is to time out: the others get time enough for a
	// machine that is busy with other work.
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Timeout: time.Minute})
	short := newFetcher(t, FetchOptions{AllowPrivate: true, Timeout: 1500 * time.Millisecond})
	for _, c := range []struct {
		path   string
		err    error
		reason string
	}{
		{"/loop", ErrRedirects, "too many redirects"},
		{"/to-ftp", ErrRedirectScheme, "redirect to a disallowed URL"},
		{"/bomb", ErrTooLarge, "page too large"},
		{"/big", ErrTooLarge, "page too large"},
		{"/big-chunked", ErrTooLarge, "page too large"},
		{"/trickle", ErrTimeout, "fetch timed out"},
		{"/404", ErrHTTPStatus, "HTTP status 404"},
		{"/500", ErrHTTPStatus, "HTTP status 500"},
		{"/doc.pdf", ErrNotHTML, "not HTML (application/pdf)"},
		{"/untyped.pdf", ErrNotHTML, "not HTML (application/pdf)"},
		{"/private/page", ErrRobots, "robots.txt disallows fetching"},
		{"/to-private", ErrRobots, "robots.txt disallows fetching"},
	} {
		t.Run(c.path, func(t *testing.T) {
			f := f
			if c.err == ErrTimeout {
				f = short
			}
			doc, err := f.Fetch(context.Background(), ts.URL+c.path, nil)
			if !errors.Is(err, c.err) {
				t.Fatalf("Fetch = %v, %v; want %v", doc, err, c.err)
			}
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Reason != c.reason {
				t.Fatalf("reason %q, want %q", fe.Reason, c.reason)
			}
		})
	}
}

func TestFetchGoodPages(t *testing.T) {
	ts := hostile(t)
	var ua atomic.Value
	uats := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.Header.Get("User-Agent"))
		fmt.Fprint(w, htmlPage)
	}))
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	for _, path := range []string{"/ok", "/untyped.html", "/all-bots-but-us"} {
		doc, err := f.Fetch(context.Background(), ts.URL+path, nil)
		if err != nil || !strings.Contains(doc.HTML, "Hello world.") {
			t.Fatalf("%s: %v %v", path, doc, err)
		}
	}
	doc, err := f.Fetch(context.Background(), ts.URL+"/latin1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.HTML, "Le café crème coûte trois euros à Paris, naïvement.") {
		t.Fatalf("Latin-1 decoded as %q", doc.HTML)
	}
	ex, err := ExtractPage(doc.HTML, doc.URL)
	if err != nil || ex.Title != "Café" {
		t.Fatalf("extract %+v %v", ex, err)
	}
	if _, err := f.Fetch(context.Background(), uats.URL+"/", nil); err != nil {
		t.Fatal(err)
	}
	if got := ua.Load(); got != DefaultUserAgent {
		t.Fatalf("User-Agent %q", got)
	}
}

func TestFetchRobotsUnreachableDisallows(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	_, err := f.Fetch(context.Background(), ts.URL+"/", nil)
	var fe *FetchError
	if !errors.Is(err, ErrRobots) || errors.Is(err, ErrHostUnreachable) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
		t.Fatalf("robots.txt 503: %v, want robots.txt unavailable", err)
	}
}

// A host where nothing listens fails its page as RFC 9309 has it (no
// robots.txt read, nothing fetched), and the reason says the host took no
// connection rather than blaming a robots.txt it does not have.
func TestFetchHostUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	now := time.Now()
	f.now = func() time.Time { return now }
	for range 2 { // the second from the robots cache
		_, err := f.Fetch(context.Background(), "http://"+addr+"/page", nil)
		var fe *FetchError
		if !errors.Is(err, ErrHostUnreachable) || !errors.Is(err, ErrRobots) || !errors.As(err, &fe) || fe.Reason != "host unreachable" {
			t.Fatalf("Fetch of a closed port = %v, want reason host unreachable", err)
		}
	}
	// The host comes up: once the short disallow has passed, well before
	// RobotsTTL, its page is fetched.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, htmlPage)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	now = now.Add(unreachableRobotsTTL + time.Second)
	if doc, err := f.Fetch(context.Background(), "http://"+addr+"/page", nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("Fetch once the host is up = %v, %v", doc, err)
	}
}

// TestFetchRobotsServerErrorIsBrief: a robots.txt answered with a 5xx
// disallows the host (RFC 9309), said as robots.txt, not as an
// unreachable host, and only for as long as an unreachable host's: once
// the server is well again, well before RobotsTTL, its page is fetched.
func TestFetchRobotsServerErrorIsBrief(t *testing.T) {
	var ill atomic.Bool
	ill.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		if ill.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	now := time.Now()
	f.now = func() time.Time { return now }
	_, err := f.Fetch(context.Background(), ts.URL+"/page", nil)
	var fe *FetchError
	if !errors.Is(err, ErrRobots) || errors.Is(err, ErrHostUnreachable) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
		t.Fatalf("Fetch while robots.txt answers 503 = %v, want robots.txt unavailable", err)
	}
	ill.Store(false)
	if _, err := f.Fetch(context.Background(), ts.URL+"/page", nil); !errors.Is(err, ErrRobots) {
		t.Fatalf("Fetch within the brief disallow = %v, want the cached disallow", err)
	}
	now = now.Add(unreachableRobotsTTL + time.Second)
	if doc, err := f.Fetch(context.Background(), ts.URL+"/page", nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("Fetch once robots.txt is well = %v, %v", doc, err)
	}
}

// TestFetchRobotsConnectedThenFailed: a host that takes the connection
// and then drops it before any answer is no unreachable host: the page
// fails as robots.txt disallowing it, briefly.
func TestFetchRobotsConnectedThenFailed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	track(t, l, func(c net.Conn) {}) // closed at once
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	_, err = f.Fetch(context.Background(), "http://"+l.Addr().String()+"/page", nil)
	var fe *FetchError
	if !errors.Is(err, ErrRobots) || errors.Is(err, ErrHostUnreachable) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
		t.Fatalf("Fetch from a host that drops its connections = %v, want robots.txt unavailable", err)
	}
}

// TestFetchRobotsCutShortDisallows: a robots.txt longer than a
// connection may read (its cap follows the page's) is cut off with no
// rules read; it disallows, as one in error does, rather than allow
// everything it may have forbidden, and the page says robots.txt was
// unavailable, not that its rules disallow it.
func TestFetchRobotsCutShortDisallows(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /\n"+strings.Repeat("# a long comment\n", 20000))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true, MaxBytes: 1 << 10})
	_, err := f.Fetch(context.Background(), ts.URL+"/page", nil)
	var fe *FetchError
	if !errors.Is(err, ErrRobots) || !errors.Is(err, ErrRobotsUnavailable) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" {
		t.Fatalf("Fetch under a robots.txt cut short = %v, want robots.txt unavailable: no rules were read", err)
	}
}

func TestFetchRobotsCachedPerHost(t *testing.T) {
	mux := http.NewServeMux()
	robots := allowAllRobots(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage) })
	ts := serve(t, mux)
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	for i := range 5 {
		if _, err := f.Fetch(context.Background(), fmt.Sprintf("%s/p%d", ts.URL, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if robots.Load() != 1 {
		t.Fatalf("robots.txt fetched %d times", robots.Load())
	}
}

// TestFetchIgnoresProxyEnvironment: a proxy would hide the target's address
// from the guard, so HTTP_PROXY must not be used.
func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	var proxied atomic.Int32
	proxy := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxied.Add(1) }))
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, htmlPage)
	}))
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: testnet.Resolver(map[string]string{"pages.test": "127.0.0.1"})})
	doc, err := f.Fetch(context.Background(), fmt.Sprintf("http://pages.test:%d/", port), nil)
	if err != nil || !strings.Contains(doc.HTML, "Hello world.") || proxied.Load() != 0 {
		t.Fatalf("%v %v, %d requests through the proxy", doc, err, proxied.Load())
	}
}

// TestOversizedRobotsIsReadInPart: a robots.txt past the size cap is read
// as far as the cap (RFC 9309 asks for at least 500 KiB), not taken as
// allowing everything.
func TestOversizedRobotsIsReadInPart(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			w.Write(bytes.Repeat([]byte("# padding\n"), maxRobotsBytes/5))
		default:
			t.Errorf("%s was requested despite robots.txt", r.URL.Path)
		}
	}))
	defer srv.Close()
	f := newFetcher(t, FetchOptions{AllowPrivate: true})
	_, err := f.Fetch(context.Background(), srv.URL+"/private/page", nil)
	if !errors.Is(err, ErrRobots) {
		t.Fatalf("err %v, want robots.txt to disallow", err)
	}
}

func TestDecodeHTMLCharset(t *testing.T) {
	// A UTF-8 page whose first 1,024 bytes are ASCII and declare nothing.
	utf := "<html><head><title>t</title></head><body>" + strings.Repeat("<p>plain</p>", 100) + "<p>Größe – naïve</p></body></html>"
	latin1 := func(s string) []byte {
		var out []byte
		for _, r := range s {
			out = append(out, byte(r))
		}
		return out
	}
	for _, c := range []struct {
		name, ctype string
		body        []byte
		want        string
	}{
		{"utf-8 without any declaration", "text/html", []byte(utf), "Größe – naïve"},
		{"utf-8 under a meta that says latin-1", "text/html", []byte(`<meta charset="iso-8859-1">` + utf), "Größe – naïve"},
		{"latin-1 without any declaration", "text/html", latin1("<p>Größe</p>"), "Größe"},
		{"latin-1 declared in the header", "text/html; charset=iso-8859-1", latin1("<p>Größe</p>"), "Größe"},
		{"utf-8 bytes under a header that says latin-1", "text/html; charset=iso-8859-1", []byte("<p>Größe</p>"), "GrÃ¶ÃŸe"},
		{"shift_jis declared in a meta", "text/html", []byte("<meta charset=\"shift_jis\"><p>\x93\xfa\x96\x7b</p>"), "日本"},
	} {
		if got := decodeHTML(c.body, c.ctype); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q does not contain %q", c.name, got, c.want)
		}
	}
}

// TestFetchRobotsCachedPerHostInEitherSpelling: a redirect may name an
// internationalised host in Unicode, in any case, while the page's URL
// names it in A-labels; both are one host, whose robots.txt is read once.
func TestFetchRobotsCachedPerHostInEitherSpelling(t *testing.T) {
	mux := http.NewServeMux()
	robots := allowAllRobots(mux)
	var host, port string // the host in A-labels and the server's port
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Host != host {
			t.Errorf("asked for %s under the host %q, want %q", r.URL.Path, r.Host, host)
		}
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "http://BÜCHER.test:"+port+"/b", http.StatusFound)
			return
		case "/bad":
			http.Redirect(w, r, "http://a_ä.test:"+port+"/b", http.StatusFound)
			return
		}
		fmt.Fprint(w, htmlPage)
	})
	ts := serve(t, mux)
	port = strconv.Itoa(ts.Listener.Addr().(*net.TCPAddr).Port)
	host = "xn--bcher-kva.test:" + port
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: testnet.Resolver(map[string]string{"xn--bcher-kva.test": "127.0.0.1"})})
	doc, err := f.Fetch(context.Background(), "http://"+host+"/a", nil)
	if err != nil || !strings.Contains(doc.HTML, "Hello world.") {
		t.Fatalf("%v %v", doc, err)
	}
	if n := robots.Load(); n != 1 {
		t.Fatalf("robots.txt of one host in two spellings fetched %d times, want once", n)
	}
	if _, err := f.Fetch(context.Background(), "http://"+host+"/bad", nil); !errors.Is(err, ErrRedirectHost) {
		t.Fatalf("a redirect to a host IDNA refuses: %v, want %v", err, ErrRedirectHost)
	}
}
