package pages

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"code.dny.dev/ssrf"

	"github.com/adlink/adlink/internal/testnet"
)

// The tests of this file follow robots.txt through its redirects (RFC
// 9309, 2.3.1.2): at least five in a row, across authorities, each one
// through the guard a page's connections pass; with no robots.txt reached
// after five, the rules are unavailable, which allows everything.

// guarded is a fetcher with the SSRF guard on, for which only the
// stand-in address is public and names resolve as answers says.
func guarded(t *testing.T, answers map[string]string, roots *x509.CertPool) *Fetcher {
	return newFetcher(t, FetchOptions{Resolve: testnet.Resolver(answers), guard: testnet.PublicStandIn(), roots: roots})
}

// TestFetchRobotsRedirectAcrossAuthorities: the redirects RFC 9309 names
// are followed, through the guard: http to https with www. added
// (example.com to https://www.example.com), www. added over http, and
// off the site's domains altogether, as to a CDN. The rules reached are
// obeyed for the page's own origin.
func TestFetchRobotsRedirectAcrossAuthorities(t *testing.T) {
	rules := func(disallow string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/robots.txt", "/rules/shop.txt":
				fmt.Fprintf(w, "User-agent: *\nDisallow: %s\n", disallow)
			default:
				fmt.Fprint(w, htmlPage)
			}
		}
	}
	secure := testnet.ServeTLSOn(t, testnet.StandIn, rules("/private/"))
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	securePort := secure.Listener.Addr().(*net.TCPAddr).Port
	var site *hosts
	moved := func(to func(r *http.Request) string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.Redirect(w, r, to(r), http.StatusMovedPermanently)
				return
			}
			fmt.Fprint(w, htmlPage)
		}
	}
	site = serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{
		"example.com": moved(func(*http.Request) string {
			return fmt.Sprintf("https://www.example.com:%d/robots.txt", securePort)
		}),
		"example.org":     moved(func(*http.Request) string { return site.url("www.example.org", "/robots.txt") }),
		"www.example.org": rules("/drafts/"),
		"shop.test":       moved(func(*http.Request) string { return site.url("cdn.test", "/rules/shop.txt") }),
		"cdn.test":        rules("/checkout/"),
	})
	f := guarded(t, map[string]string{
		"example.com": testnet.StandIn, "www.example.com": testnet.StandIn,
		"example.org": testnet.StandIn, "www.example.org": testnet.StandIn,
		"shop.test": testnet.StandIn, "cdn.test": testnet.StandIn,
	}, roots)
	for _, c := range []struct {
		host, allowed, disallowed string
	}{
		{"example.com", "/page", "/private/page"},
		{"example.org", "/page", "/drafts/page"},
		{"shop.test", "/page", "/checkout/page"},
	} {
		t.Run(c.host, func(t *testing.T) {
			// The page's own redirects stay on its host; robots.txt's
			// need not.
			onSite := func(h string) bool { return h == c.host }
			_, err := f.Fetch(context.Background(), site.url(c.host, c.disallowed), onSite)
			var fe *FetchError
			if !errors.Is(err, ErrRobots) || !errors.As(err, &fe) || fe.Reason != "robots.txt disallows fetching" {
				t.Fatalf("Fetch(%s) = %v, want robots.txt disallows fetching", c.disallowed, err)
			}
			if doc, err := f.Fetch(context.Background(), site.url(c.host, c.allowed), onSite); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
				t.Fatalf("Fetch(%s) = %v, %v", c.allowed, doc, err)
			}
			if n := site.hitsAt(c.host + "/robots.txt"); n != 1 {
				t.Errorf("%s/robots.txt asked for %d times, want once (cached)", c.host, n)
			}
		})
	}
	if n := site.hitsAt("example.com/private/page") + site.hitsAt("example.org/drafts/page") + site.hitsAt("shop.test/checkout/page"); n != 0 {
		t.Errorf("%d disallowed pages were requested", n)
	}
}

// TestFetchRobotsCachedByPageOrigin: the rules a redirect reaches are the
// page's origin's, cached under it alone. A site that points its
// robots.txt at another host's file changes nothing for that host, whose
// pages are judged by its own robots.txt.
func TestFetchRobotsCachedByPageOrigin(t *testing.T) {
	var site *hosts
	site = serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{
		"a.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.Redirect(w, r, site.url("b.test", "/rules-for-a.txt"), http.StatusFound)
				return
			}
			fmt.Fprint(w, htmlPage)
		},
		"b.test": func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/rules-for-a.txt":
				fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			case "/robots.txt":
				fmt.Fprint(w, "User-agent: *\nDisallow: /admin/\n")
			default:
				fmt.Fprint(w, htmlPage)
			}
		},
	})
	f := guarded(t, map[string]string{"a.test": testnet.StandIn, "b.test": testnet.StandIn}, nil)
	ctx := context.Background()
	if _, err := f.Fetch(ctx, site.url("a.test", "/private/x"), nil); !errors.Is(err, ErrRobots) {
		t.Fatalf("a.test/private/x = %v, want ErrRobots", err)
	}
	if _, err := f.Fetch(ctx, site.url("a.test", "/admin/x"), nil); err != nil {
		t.Fatalf("a.test/admin/x = %v: b.test's own rules applied to a.test", err)
	}
	if _, err := f.Fetch(ctx, site.url("b.test", "/private/x"), nil); err != nil {
		t.Fatalf("b.test/private/x = %v: a.test's rules applied to b.test", err)
	}
	if _, err := f.Fetch(ctx, site.url("b.test", "/admin/x"), nil); !errors.Is(err, ErrRobots) {
		t.Fatalf("b.test/admin/x = %v, want ErrRobots", err)
	}
	for hostPath, want := range map[string]int{
		"a.test/robots.txt": 1, "b.test/rules-for-a.txt": 1, "b.test/robots.txt": 1,
		"a.test/private/x": 0, "b.test/admin/x": 0,
	} {
		if n := site.hitsAt(hostPath); n != want {
			t.Errorf("%s requested %d times, want %d", hostPath, n, want)
		}
	}
}

// TestFetchRobotsRedirectChains: five redirects in a row are followed and
// their rules obeyed; a sixth is not followed, and robots.txt is then
// unavailable, which allows everything (RFC 9309), for as long as a
// robots.txt read; a loop ends the same way, after six requests.
func TestFetchRobotsRedirectChains(t *testing.T) {
	// chain answers robots.txt with n redirects in a row, the last to
	// rules that disallow /private/.
	chain := func(n int) http.HandlerFunc {
		target := func(i int) string {
			if i < n {
				return "/hop/" + strconv.Itoa(i)
			}
			return "/rules.txt"
		}
		return func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/robots.txt":
				http.Redirect(w, r, target(1), http.StatusMovedPermanently)
			case strings.HasPrefix(r.URL.Path, "/hop/"):
				i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
				http.Redirect(w, r, target(i+1), http.StatusFound)
			case r.URL.Path == "/rules.txt":
				fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			default:
				fmt.Fprint(w, htmlPage)
			}
		}
	}
	loop := func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.Redirect(w, r, "/robots-a.txt", http.StatusFound)
		case "/robots-a.txt":
			http.Redirect(w, r, "/robots-b.txt", http.StatusFound)
		case "/robots-b.txt":
			http.Redirect(w, r, "/robots.txt", http.StatusFound)
		default:
			fmt.Fprint(w, htmlPage)
		}
	}
	site := serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{"five.test": chain(5), "six.test": chain(6), "loop.test": loop})
	f := guarded(t, map[string]string{"five.test": testnet.StandIn, "six.test": testnet.StandIn, "loop.test": testnet.StandIn}, nil)
	now := time.Now()
	f.now = func() time.Time { return now }
	ctx := context.Background()

	if _, err := f.Fetch(ctx, site.url("five.test", "/private/x"), nil); !errors.Is(err, ErrRobots) {
		t.Fatalf("five redirects: %v, want the rules they reach obeyed", err)
	}
	for _, host := range []string{"six.test", "loop.test"} {
		if doc, err := f.Fetch(ctx, site.url(host, "/private/x"), nil); err != nil || !strings.Contains(doc.HTML, "Hello world.") {
			t.Fatalf("%s: %v, %v; want robots.txt unavailable, so allowed", host, doc, err)
		}
	}
	if n := site.hitsAt("six.test/rules.txt"); n != 0 {
		t.Errorf("the sixth redirect was followed (%d requests)", n)
	}
	if n := site.hitsAt("six.test/hop/5"); n != 1 {
		t.Errorf("six.test/hop/5, the fifth redirect's target, requested %d times, want 1", n)
	}
	loops := func() int {
		return site.hitsAt("loop.test/robots.txt") + site.hitsAt("loop.test/robots-a.txt") + site.hitsAt("loop.test/robots-b.txt")
	}
	if n := loops(); n != 6 {
		t.Errorf("the loop was asked %d times, want 6 (robots.txt and five redirects)", n)
	}
	// Unavailable is a robots.txt read: kept for RobotsTTL, not a
	// minute, so the loop is not walked again for every page.
	now = now.Add(unreachableRobotsTTL + time.Second)
	if _, err := f.Fetch(ctx, site.url("loop.test", "/other"), nil); err != nil {
		t.Fatal(err)
	}
	if n := loops(); n != 6 {
		t.Errorf("the loop was asked %d times after the cache, want 6", n)
	}
}

// TestFetchRobotsRedirectRefused: a robots.txt redirect to a loopback,
// private, metadata or unique-local address (by name or literal), to a
// port the guard does not allow, to a scheme other than http and https
// or to credentials is refused like a page's: nothing is dialled there,
// and the page fails for that reason. The refusal is cached for the host
// as a robots.txt read is: the next page does not ask again until
// RobotsTTL has passed.
func TestFetchRobotsRedirectRefused(t *testing.T) {
	var reached atomic.Int32
	private := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	}))
	privatePort := private.Listener.Addr().(*net.TCPAddr).Port
	// Another public host, at a port the guard of the last case closes.
	other := testnet.ServeOn(t, testnet.StandIn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	}))
	otherPort := other.Listener.Addr().(*net.TCPAddr).Port
	var target sync.Map // host -> Location
	site := serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{"site.test": func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			to, _ := target.Load("site.test")
			w.Header().Set("Location", to.(string))
			w.WriteHeader(http.StatusFound)
			return
		}
		t.Errorf("the page %s was requested", r.URL)
	}})
	answers := map[string]string{
		"site.test": testnet.StandIn, "inner.test": "127.0.0.1", "meta.test": "169.254.169.254",
		"meta6.test": "fd00:ec2::254", "mapped.test": "::ffff:127.0.0.1", "ten.test": "10.0.0.1",
		"other.test": testnet.StandIn,
	}
	for _, c := range []struct {
		location string
		err      error
		reason   string
	}{
		{fmt.Sprintf("http://inner.test:%d/robots.txt", privatePort), ErrProhibitedAddress, "address not allowed"},
		{fmt.Sprintf("http://127.0.0.1:%d/robots.txt", privatePort), ErrProhibitedAddress, "address not allowed"},
		{fmt.Sprintf("http://mapped.test:%d/robots.txt", privatePort), ErrProhibitedAddress, "address not allowed"},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/robots.txt", privatePort), ErrProhibitedAddress, "address not allowed"},
		{"http://meta.test/latest/meta-data/", ErrProhibitedAddress, "address not allowed"},
		{"http://169.254.169.254/latest/meta-data/", ErrProhibitedAddress, "address not allowed"},
		{"http://meta6.test/latest/meta-data/", ErrProhibitedAddress, "address not allowed"},
		{"http://[fd00:ec2::254]/latest/meta-data/", ErrProhibitedAddress, "address not allowed"},
		{"https://ten.test/robots.txt", ErrProhibitedAddress, "address not allowed"},
		{"file:///etc/passwd", ErrRedirectScheme, "redirect to a disallowed URL"},
		{"ftp://site.test/robots.txt", ErrRedirectScheme, "redirect to a disallowed URL"},
		{fmt.Sprintf("gopher://inner.test:%d/_GET", privatePort), ErrRedirectScheme, "redirect to a disallowed URL"},
		{"javascript:alert(1)", ErrRedirectScheme, "redirect to a disallowed URL"},
		{"data:text/plain,User-agent: *", ErrRedirectScheme, "redirect to a disallowed URL"},
		{fmt.Sprintf("http://user:pw@site.test:%d/robots.txt", site.port), ErrRedirectScheme, "redirect to a disallowed URL"},
	} {
		t.Run(c.location, func(t *testing.T) {
			target.Store("site.test", c.location)
			f := guarded(t, answers, nil)
			now := time.Now()
			f.now = func() time.Time { return now }
			before := site.hitsAt("site.test/robots.txt")
			fetch := func() {
				t.Helper()
				_, err := f.Fetch(context.Background(), site.url("site.test", "/page"), nil)
				var fe *FetchError
				if !errors.Is(err, c.err) || !errors.As(err, &fe) || fe.Reason != c.reason {
					t.Fatalf("Fetch = %v, want %v (%s)", err, c.err, c.reason)
				}
			}
			fetch()
			fetch() // cached: not asked again
			if n := site.hitsAt("site.test/robots.txt") - before; n != 1 {
				t.Errorf("robots.txt asked for %d times by two fetches, want 1", n)
			}
			now = now.Add(DefaultRobotsTTL + time.Second)
			fetch()
			if n := site.hitsAt("site.test/robots.txt") - before; n != 2 {
				t.Errorf("robots.txt asked for %d times once its refusal expired, want 2", n)
			}
		})
	}
	// Ports: under a guard that opens the site's port only, a redirect to
	// another port of a public host is refused.
	ports := newFetcher(t, FetchOptions{Resolve: testnet.Resolver(answers), guard: []ssrf.Option{
		ssrf.WithPorts(uint16(site.port)), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix(testnet.StandIn + "/32"))}})
	target.Store("site.test", fmt.Sprintf("http://other.test:%d/robots.txt", otherPort))
	if _, err := ports.Fetch(context.Background(), site.url("site.test", "/page"), nil); !errors.Is(err, ErrProhibitedAddress) {
		t.Errorf("redirect to a closed port: %v, want ErrProhibitedAddress", err)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("a refused address was reached %d times", n)
	}
}

// TestFetchRobotsRefusedChainCached: a robots.txt whose redirects lead,
// after public hops, to a refused address costs its host the walk once:
// the pages after the first fail for the same reason without a request,
// and a page of another host walks its own chain.
func TestFetchRobotsRefusedChainCached(t *testing.T) {
	hop := func(to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", to)
			w.WriteHeader(http.StatusMovedPermanently)
		}
	}
	var requests atomic.Int32
	site := serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{
		"site.test": func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			switch r.URL.Path {
			case "/robots.txt":
				hop("/hop1")(w, r)
			case "/hop1":
				hop("/hop2")(w, r)
			case "/hop2":
				hop("http://inner.test/robots.txt")(w, r)
			default:
				t.Errorf("the page %s was requested", r.URL)
			}
		},
		"other.test": func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			hop("http://inner.test/robots.txt")(w, r)
		},
	})
	f := guarded(t, map[string]string{"site.test": testnet.StandIn, "other.test": testnet.StandIn,
		"inner.test": "127.0.0.1"}, nil)
	for i, want := range []int32{3, 3, 3, 4} {
		host := "site.test"
		if i == 3 {
			host = "other.test"
		}
		_, err := f.Fetch(context.Background(), site.url(host, fmt.Sprint("/page", i)), nil)
		if !errors.Is(err, ErrProhibitedAddress) {
			t.Fatalf("fetch %d of %s: %v, want ErrProhibitedAddress", i, host, err)
		}
		if n := requests.Load(); n != want {
			t.Errorf("after fetch %d of %s: %d requests, want %d", i, host, n, want)
		}
	}
}

// TestFetchRobotsRedirectSlow: a robots.txt redirect whose target sends
// its headers a byte at a time fails at the header timeout, well before
// the fetch's own, as a robots.txt in error (a minute's disallow); one
// whose target sends its body a byte at a time ends at the robots.txt
// read's own bound, as one in error too. Neither holds the fetcher longer
// than a page could.
func TestFetchRobotsRedirectSlow(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	track(t, l, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		switch req.URL.Path {
		case "/robots.txt":
			// site.test's goes to headers sent slowly, site2.test's to a
			// body sent slowly.
			to := "/slow-headers"
			if strings.HasPrefix(req.Host, "site2.test:") {
				to = "/slow-body"
			}
			fmt.Fprintf(c, "HTTP/1.1 301 Moved Permanently\r\nLocation: http://slow.test:%d%s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
				l.Addr().(*net.TCPAddr).Port, to)
		case "/slow-headers":
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: ")
			for {
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		case "/slow-body":
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nUser-agent: *\n# ")
			for {
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		default:
			t.Errorf("%s requested", req.URL)
		}
	})
	port := l.Addr().(*net.TCPAddr).Port
	res := testnet.Resolver(map[string]string{"site.test": "127.0.0.1", "slow.test": "127.0.0.1", "site2.test": "127.0.0.1"})
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: res, Timeout: time.Minute, HeaderTimeout: 500 * time.Millisecond})
	_, err = f.Fetch(context.Background(), fmt.Sprintf("http://site.test:%d/page", port), nil)
	var fe *FetchError
	if !errors.Is(err, ErrRobots) || errors.Is(err, ErrTimeout) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
		t.Fatalf("slow headers after a redirect: %v, want robots.txt unavailable at the header timeout", err)
	}
	short := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: res, Timeout: 1500 * time.Millisecond})
	_, err = short.Fetch(context.Background(), fmt.Sprintf("http://site2.test:%d/page", port), nil)
	if !errors.Is(err, ErrRobots) || errors.Is(err, ErrTimeout) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
		t.Fatalf("slow body after a redirect: %v, want robots.txt unavailable at the read's bound", err)
	}
}

// TestFetchRobotsRedirectToDeadHost: a robots.txt redirect to a name that
// does not resolve, or to a port where nothing listens, is robots.txt in
// error (a minute's disallow), not "host not found" or "host unreachable",
// which would say so of the page's own host, which answered.
func TestFetchRobotsRedirectToDeadHost(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	site := serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{
		"a.test": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://nowhere.test/robots.txt", http.StatusFound)
		},
		"b.test": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, fmt.Sprintf("http://dead.test:%d/robots.txt", deadPort), http.StatusFound)
		},
	})
	f := newFetcher(t, FetchOptions{AllowPrivate: true, Resolve: testnet.Resolver(map[string]string{
		"a.test": testnet.StandIn, "b.test": testnet.StandIn, "dead.test": "127.0.0.1",
	})})
	for _, host := range []string{"a.test", "b.test"} {
		_, err := f.Fetch(context.Background(), site.url(host, "/page"), nil)
		var fe *FetchError
		if !errors.Is(err, ErrRobots) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
			t.Errorf("%s: %v, want robots.txt unavailable", host, err)
		}
	}
}

// TestFetchRobotsRedirectCapped: the robots.txt a redirect reaches is
// read under the same cap on its connection as a page's: one longer than
// that is cut off with no rules read and disallows, as one in error does,
// though read whole it would allow the page.
func TestFetchRobotsRedirectCapped(t *testing.T) {
	site := serveHostsOn(t, testnet.StandIn, map[string]http.HandlerFunc{
		"site.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/robots.txt" {
				fmt.Fprint(w, htmlPage)
				return
			}
			http.Redirect(w, r, "http://www.site.test:"+strconv.Itoa(r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr).Port)+"/robots.txt", http.StatusMovedPermanently)
		},
		"www.site.test": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/robots.txt" {
				t.Errorf("%s requested", r.URL)
				return
			}
			// Read whole, it would allow the page.
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n"+strings.Repeat("# a long comment\n", 20000))
		},
	})
	f := newFetcher(t, FetchOptions{MaxBytes: 1 << 10, Resolve: testnet.Resolver(map[string]string{
		"site.test": testnet.StandIn, "www.site.test": testnet.StandIn,
	}), guard: testnet.PublicStandIn()})
	_, err := f.Fetch(context.Background(), site.url("site.test", "/page"), nil)
	var fe *FetchError
	if !errors.Is(err, ErrRobots) || !errors.As(err, &fe) || fe.Reason != "robots.txt unavailable" || !errors.Is(err, ErrRobotsUnavailable) {
		t.Fatalf("Fetch under a redirected robots.txt past the cap = %v, want robots.txt unavailable", err)
	}
	if n := site.hitsAt("www.site.test/robots.txt"); n != 1 {
		t.Fatalf("the redirect's robots.txt was asked for %d times, want 1", n)
	}
}
