package redisstore_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/ratelimit"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/backend/store/storetest"
	"github.com/adlink/adlink/internal/testredis"
)

// The conformance suites run against a Redis Cluster of three masters
// too: every script's keys must be one slot's, and each command reach the
// node that serves its slot.

func TestLimiterKeepsTheContractOnACluster(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{})
	var n atomic.Int32
	storetest.Limits(t, func(t *testing.T) ratelimit.Limiter {
		c := open(t, patient(cl.URL()), redisstore.Options{Prefix: fmt.Sprintf("case%d:", n.Add(1))})
		return c.Limiter("keys", noLimiter{t})
	})
}

// persistentCluster is persistent over one cluster of top's, whose nodes
// keep every acknowledged write on disk, with a prefix of its own for each
// case. A case's store opened again finds every node killed with SIGKILL
// after the last close and started again, as persistent's. The kill waits
// for that open, not the close: a cluster started again takes seconds to
// agree, and most cases open once.
func persistentCluster[S any](top *testing.T, make func(t *testing.T, c *redisstore.Client) S) func(t *testing.T) storetest.Opener[S] {
	cl := testredis.StartCluster(top, testredis.Options{Persist: true})
	var n int
	return func(t *testing.T) storetest.Opener[S] {
		n++
		prefix := fmt.Sprintf("case%d:", n)
		opened := false
		return func() (S, func() error) {
			if opened {
				for _, s := range cl.Nodes {
					s.Kill()
				}
				for _, s := range cl.Nodes {
					s.Start()
				}
				cl.WaitOK(t)
			}
			opened = true
			c, err := redisstore.Open(patient(cl.URL()), redisstore.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			return make(t, c), c.Close
		}
	}
}

func TestWindowsKeepTheContractOnACluster(t *testing.T) {
	storetest.Windows(t, persistentCluster(t, func(t *testing.T, c *redisstore.Client) clicks.Windows {
		return c.Windows(noWindows{t})
	}))
}

func TestDecisionsKeepTheContractOnACluster(t *testing.T) {
	storetest.Decisions(t, persistentCluster(t, func(t *testing.T, c *redisstore.Client) clicks.Decisions {
		return c.Decisions(noDecisions{t})
	}))
}

func TestVersionsKeepTheContractOnACluster(t *testing.T) {
	cl := testredis.StartCluster(t, testredis.Options{})
	var n atomic.Int32
	storetest.Versions(t, func(t *testing.T) func() catalog.Versions {
		prefix := fmt.Sprintf("deployment%d:", n.Add(1))
		return func() catalog.Versions {
			return open(t, patient(cl.URL()), redisstore.Options{Prefix: prefix}).Versions()
		}
	})
}

// keys are the keys of every node of addrs, sorted.
func keys(t *testing.T, addrs ...string) []string {
	t.Helper()
	var out []string
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a, Protocol: 2})
		ks, err := rdb.Keys(t.Context(), "*").Result()
		rdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ks...)
	}
	slices.Sort(out)
	return out
}

// use takes a token from every kind of bucket and records a claim, a
// decision and a budget flag through c.
func use(t *testing.T, c *redisstore.Client) {
	t.Helper()
	ctx := t.Context()
	l := c.Limiter("keys", noLimiter{t})
	lim := ratelimit.Limit{Rate: 0.001, Burst: 5}
	if d := l.Allow(ctx, "k", lim); !d.Allowed {
		t.Fatalf("Allow: %+v", d)
	}
	if a, b := l.AllowBoth(ctx, ratelimit.Bucket{Key: "k\x00net", Limit: lim}, ratelimit.Bucket{Key: "k", Limit: lim}); !a.Allowed || !b.Allowed {
		t.Fatalf("AllowBoth: %+v and %+v", a, b)
	}
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if r, err := c.Windows(noWindows{t}).Claim(ctx, clicks.Claim{Network: "198.51.100.7", Prefix: "198.51.100.0/24",
		AdID: "ad", At: at, Limit: 10, PrefixLimit: 10}); r != "" || err != nil {
		t.Fatalf("Claim: %q, %v", r, err)
	}
	if first, err := c.Decisions(noDecisions{t}).Use(ctx, "d1", at, at.Add(time.Hour)); !first || err != nil {
		t.Fatalf("Use: %v, %v", first, err)
	}
	if err := c.BudgetFlags().Raise(ctx, "adv@10", clicks.BudgetDayIn(at, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := c.Versions().Announce(ctx, catalog.Announcement{Version: "00000000000000a1", From: "r"}); err != nil {
		t.Fatal(err)
	}
}

// TestSingleRedisKeepsItsKeyNames: replicas of an older version share a
// single Redis's keys with newer ones during a rolling upgrade, so the
// names stay those they were; a cluster's buckets of one request share a
// hash tag, so they are one slot's.
func TestSingleRedisKeepsItsKeyNames(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	use(t, open(t, patient(srv.URL()), redisstore.Options{}))
	want := []string{
		"adlink:budget:20785",
		"adlink:catalog:version",
		"adlink:dec:d1",
		"adlink:win:{19:/48 198.51.100.0/24}:12:198.51.100.7:20785:a:ad",
		"adlink:win:{19:/48 198.51.100.0/24}:12:198.51.100.7:20785:n",
		"adlink:win:{19:/48 198.51.100.0/24}:20785:p",
		"rate:adlink:keys-firsts:k\x00net",
		"rate:adlink:keys:k",
	}
	if got := keys(t, srv.Addr()); !slices.Equal(got, want) {
		t.Errorf("keys on a single Redis:\n%q\nwant\n%q", got, want)
	}

	cl := testredis.StartCluster(t, testredis.Options{})
	use(t, open(t, patient(cl.URL()), redisstore.Options{}))
	got := keys(t, cl.Addrs()...)
	// The windows' keys were one slot's already, and a decision or a
	// day's flags are one key: their names are the single Redis's.
	clusterWant := []string{
		"adlink:budget:20785",
		"adlink:dec:d1",
		"adlink:win:{19:/48 198.51.100.0/24}:12:198.51.100.7:20785:a:ad",
		"adlink:win:{19:/48 198.51.100.0/24}:12:198.51.100.7:20785:n",
		"adlink:win:{19:/48 198.51.100.0/24}:20785:p",
		"rate:adlink:keys-firsts:{1:k}k\x00net",
		"rate:adlink:keys:{1:k}",
		"{adlink:catalog}:version",
	}
	if !slices.Equal(got, clusterWant) {
		t.Errorf("keys on a cluster:\n%q\nwant\n%q", got, clusterWant)
	}
}

// TestClusterURLs: Open takes a cluster's URL in the forms an operator
// writes, and refuses what is not one, without the password in the error.
func TestClusterURLs(t *testing.T) {
	for _, u := range []string{
		"redis-cluster://127.0.0.1:7000",
		"redis-cluster://127.0.0.1:7000,127.0.0.1:7001,[::1]:7002/",
		"rediss-cluster://user:secret@a.example:7000,b.example:7001/0?dial_timeout=1s&addr=c.example:7002",
		"REDIS-CLUSTER://a.example:7000?read_timeout=2s",
	} {
		if err := redisstore.CheckURL(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{
		"redis-cluster://",
		"redis-cluster://user:secret@a.example:7000,,b.example:7001",
		"redis-cluster://user:secret@a.example",
		"redis-cluster://user:secret@a.example:7000/1",
		"redis-cluster://user:secret@a.example:7000?db=2",
		"redis-cluster://user:secret@a.example:7000?no_such_option=1",
		"redis-cluster://user:secret@a.example:7000?dial_timeout=%zz",
		"redis-cluster://user:secret@a.example:7000?addr=c.example",
		"redis-cluster://user:secret@:7000",
	} {
		err := redisstore.CheckURL(u)
		if err == nil {
			t.Errorf("%s: no error", u)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the password: %v", u, err)
		}
	}
}

// TestURLPasswordCutShortRefused: a '/', '?' or '#' in the password ends
// the host early, so that what follows would be read as the database, the
// options or a fragment, and the user name and the password's start as
// the address logged with every fallback. Such a URL, of one Redis or of
// a cluster, is refused with an error that quotes none of it.
func TestURLPasswordCutShortRefused(t *testing.T) {
	const secret = "S3CR3TPW"
	for _, scheme := range []string{"redis", "rediss", "redis-cluster", "rediss-cluster"} {
		for _, cut := range []string{"/", "?", "#", "?dial_timeout="} {
			u := scheme + "://user:12" + cut + secret + "@cache.example:6379"
			err := redisstore.CheckURL(u)
			if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "12") ||
				!strings.Contains(err.Error(), "percent-encode") {
				t.Errorf("%s: %v, want an error that says to percent-encode and quotes nothing of the password", u, err)
			}
		}
		if u := scheme + "://user:12%2F" + secret + "@cache.example:6379"; redisstore.CheckURL(u) != nil {
			t.Errorf("%s: %v", u, redisstore.CheckURL(u))
		}
	}
}

// FuzzCheckURL: no URL panics the parser, and no error quotes a URL's
// user and password.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"redis://u:secretpw@127.0.0.1:6379/0",
		"redis-cluster://u:secretpw@127.0.0.1:7000,[::1]:7001/0?dial_timeout=1s&addr=h:1",
		"rediss-cluster://u:secretpw@h:1#frag",
		"redis-cluster://u:secretpw@,",
		"redis-cluster://u:secretpw@h:1/2",
		"redis-cluster://u:secretpw@h:1?%zz",
		"redis://u:12?secretpw@h:1",
		"redis-cluster://u:12/secretpw@h:1",
		"rediss://u:12?dial_timeout=secretpw@h:1",
		"redis://us/er:secretpw@h:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := redisstore.CheckURL(s)
		if err == nil {
			return
		}
		_, rest, ok := strings.Cut(s, "://")
		userinfo, _, hasUser := strings.Cut(rest, "@")
		if ok && hasUser && len(userinfo) >= 8 && !strings.ContainsAny(userinfo, "/?#") &&
			strings.Contains(err.Error(), userinfo) {
			t.Errorf("the error quotes the URL's user and password: %v", err)
		}
		// A password cut short by a '/', '?' or '#' (the user name's
		// ending at none of '?' or '#'): no piece of it is quoted.
		authority, _, _ := strings.Cut(rest, "/")
		authority, _, _ = strings.Cut(authority, "?")
		authority, _, _ = strings.Cut(authority, "#")
		if !ok || strings.Contains(authority, "@") {
			return
		}
		user, password, hasPassword := strings.Cut(userinfo, ":")
		if !hasUser || !hasPassword || strings.ContainsAny(user, "?#") {
			return
		}
		for _, piece := range strings.FieldsFunc(password, func(r rune) bool { return strings.ContainsRune("/?#", r) }) {
			if len(piece) >= 8 && strings.Contains(err.Error(), piece) {
				t.Errorf("the error quotes %q of the password %q: %v", piece, password, err)
			}
		}
	})
}

// hungNode is a Redis Cluster node of all the slots that never answers a
// script: it tells the client its slots, then holds each script's
// connection unanswered, and counts the scripts it was sent.
func hungNode(t *testing.T) (addr string, scripts *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scripts = new(atomic.Int32)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	slots := "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + port + "\r\n"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				r := bufio.NewReader(c)
				for {
					args, err := readCommand(r)
					if err != nil {
						return
					}
					switch strings.ToUpper(args[0]) {
					case "EVALSHA", "EVAL":
						scripts.Add(1)
						return // held open, never answered
					case "CLUSTER":
						io.WriteString(c, slots)
					case "HELLO":
						io.WriteString(c, "-ERR unknown command\r\n")
					default:
						io.WriteString(c, "+OK\r\n")
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), scripts
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestAHungClusterNodeFallsBackAsOneRedis: a node that does not answer,
// frozen or cut off, delays a limit check no more than one Redis that
// does not answer: the client tries it as often, not once more for each
// of go-redis's cluster redirects.
func TestAHungClusterNodeFallsBackAsOneRedis(t *testing.T) {
	one := ratelimit.Limit{Rate: 0.001, Burst: 1}
	tries := func(scheme string) (allow, both int32) {
		addr, scripts := hungNode(t)
		c := open(t, scheme+"://"+addr+"/0?read_timeout=50ms&write_timeout=50ms", redisstore.Options{})
		l := c.Limiter("keys", ratelimit.New(ratelimit.Options{}))
		if !l.Allow(t.Context(), "k", one).Allowed {
			t.Fatalf("%s: the fallback did not allow", scheme)
		}
		allow = scripts.Swap(0)
		// Another client: this one's health leaves Redis alone now.
		c = open(t, scheme+"://"+addr+"/0?read_timeout=50ms&write_timeout=50ms", redisstore.Options{})
		c.Limiter("ips", ratelimit.New(ratelimit.Options{})).AllowBoth(t.Context(),
			ratelimit.Bucket{Key: "n", Limit: one}, ratelimit.Bucket{Key: "p", Limit: one})
		return allow, scripts.Load()
	}
	allow, both := tries("redis")
	clusterAllow, clusterBoth := tries("redis-cluster")
	if allow == 0 || clusterAllow > allow || clusterBoth > both {
		t.Errorf("a hung node was sent Allow's script %d times and AllowBoth's %d, one hung Redis %d and %d",
			clusterAllow, clusterBoth, allow, both)
	}
}
