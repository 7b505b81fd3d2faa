package redisstore_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/ratelimit"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/internal/testredis"
)

// TestReadmeACLIsEnough: a Redis user made by the README's ACL SETUSER
// line runs every store the replicas keep in Redis, its scripts'
// commands included, without one call going to the fallback, on one
// Redis and on a Redis Cluster.
func TestReadmeACLIsEnough(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^ACL SETUSER adlink .*$`).Find(b)
	if line == nil {
		t.Fatal("README.md has no ACL SETUSER adlink line")
	}
	const password = "acl-test-password"
	var args []any
	for _, f := range strings.Fields(strings.Replace(string(line), ">PASSWORD", ">"+password, 1)) {
		args = append(args, f)
	}
	setUser := func(t *testing.T, addr string) {
		t.Helper()
		admin := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		defer admin.Close()
		if err := admin.Do(t.Context(), args...).Err(); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		// The user may do no more than the line says: one command it
		// does not name is refused, so the calls prove the line enough.
		as := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, Username: "adlink", Password: password})
		defer as.Close()
		if err := as.Do(t.Context(), "DEL", "adlink:x").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("DEL as the README's user: %v, want NOPERM", err)
		}
	}
	t.Run("redis", func(t *testing.T) {
		srv := testredis.Start(t, testredis.Options{})
		setUser(t, srv.Addr())
		useEveryStore(t, open(t, patient("redis://adlink:"+password+"@"+srv.Addr()+"/0"), redisstore.Options{}))
	})
	t.Run("cluster", func(t *testing.T) {
		cl := testredis.StartCluster(t, testredis.Options{})
		for _, addr := range cl.Addrs() {
			setUser(t, addr)
		}
		url := strings.Replace(cl.URL(), "redis-cluster://", "redis-cluster://adlink:"+password+"@", 1)
		useEveryStore(t, open(t, patient(url), redisstore.Options{}))
	})
}

// useEveryStore calls each store of c once, failing t on an error or a
// call its fallback answered.
func useEveryStore(t *testing.T, c *redisstore.Client) {
	ctx := t.Context()
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	lim := c.Limiter("keys", noLimiter{t})
	limit := ratelimit.Limit{Rate: 10, Burst: 20}
	if d := lim.Allow(ctx, "demo", limit); !d.Allowed {
		t.Errorf("Allow: %+v", d)
	}
	if a, b := lim.AllowBoth(ctx, ratelimit.Bucket{Key: "net", Limit: limit}, ratelimit.Bucket{Key: "demo", Limit: limit}); !a.Allowed || !b.Allowed {
		t.Errorf("AllowBoth: %+v, %+v", a, b)
	}
	if a, b, d := lim.AllowThree(ctx, ratelimit.Bucket{Key: "net", Limit: limit}, ratelimit.Bucket{Key: "prefix", Limit: limit},
		ratelimit.Bucket{Key: "demo", Limit: limit}); !a.Allowed || !b.Allowed || !d.Allowed {
		t.Errorf("AllowThree: %+v, %+v, %+v", a, b, d)
	}

	now := time.Now()
	ip := "2001:db8:1:2::7"
	if _, err := c.Windows(noWindows{t}).Claim(ctx, clicks.Claim{Network: clicks.Network(ip), AdID: "a.example", At: now,
		Limit: 50, Prefix: clicks.Prefix(ip), PrefixLimit: 500, PrefixAdLimit: 10}); err != nil {
		t.Errorf("Windows.Claim: %v", err)
	}
	if fresh, err := c.Decisions(noDecisions{t}).Use(ctx, "d1", now, now.Add(time.Hour)); err != nil || !fresh {
		t.Errorf("Decisions.Use: %v, %v; want a first use", fresh, err)
	}

	flags := c.BudgetFlags()
	day := clicks.BudgetDay(now.Unix() / 86400)
	if err := flags.Raise(ctx, "a.example@25000000", day); err != nil {
		t.Errorf("BudgetFlags.Raise: %v", err)
	}
	if got, err := flags.Raised(ctx, day); err != nil || len(got) != 1 {
		t.Errorf("BudgetFlags.Raised: %v, %v; want the flag raised", got, err)
	}
	if err := flags.Clear(ctx, "a.example", day); err != nil {
		t.Errorf("BudgetFlags.Clear: %v", err)
	}

	v := c.Versions()
	heard := make(chan catalog.Announcement, 4)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Listen(lctx, func(a catalog.Announcement, recorded bool) {
			if !recorded {
				heard <- a
			}
		})
	}()
	defer func() { stop(); <-done }()
	a := catalog.Announcement{Version: "0123456789abcdef", From: "r1"}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Announced until heard: the listener may subscribe after the first.
	for tick := time.NewTicker(50 * time.Millisecond); ; {
		if err := v.Announce(ctx, a); err != nil {
			t.Fatalf("Versions.Announce: %v", err)
		}
		select {
		case got := <-heard:
			if got != a {
				t.Fatalf("heard %+v, want %+v", got, a)
			}
			tick.Stop()
			return
		case <-tick.C:
		case <-wait.Done():
			t.Fatal("the announcement was not heard within 30 s")
		}
	}
}
