package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/catalog"
	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/ratelimit"
	redisstore "github.com/adlink/adlink/backend/store/redis"
	"github.com/adlink/adlink/backend/store/storetest"
	"github.com/adlink/adlink/internal/testredis"
)

// The conformance suites run against Redis alone: a fallback that is
// asked anything fails the test.

type noLimiter struct{ t *testing.T }

func (n noLimiter) Allow(context.Context, string, ratelimit.Limit) ratelimit.Decision {
	n.t.Error("the fallback limiter was asked while Redis was up")
	return ratelimit.Decision{Allowed: true}
}

func (n noLimiter) AllowBoth(context.Context, ratelimit.Bucket, ratelimit.Bucket) (ratelimit.Decision, ratelimit.Decision) {
	n.t.Error("the fallback limiter was asked while Redis was up")
	return ratelimit.Decision{Allowed: true}, ratelimit.Decision{Allowed: true}
}

func (n noLimiter) AllowThree(context.Context, ratelimit.Bucket, ratelimit.Bucket, ratelimit.Bucket) (ratelimit.Decision, ratelimit.Decision, ratelimit.Decision) {
	n.t.Error("the fallback limiter was asked while Redis was up")
	return ratelimit.Decision{Allowed: true}, ratelimit.Decision{Allowed: true}, ratelimit.Decision{Allowed: true}
}

type noWindows struct{ t *testing.T }

func (n noWindows) Claim(context.Context, clicks.Claim) (string, error) {
	n.t.Error("the fallback windows were asked while Redis was up")
	return "", nil
}

type noDecisions struct{ t *testing.T }

func (n noDecisions) Use(context.Context, string, time.Time, time.Time) (bool, error) {
	n.t.Error("the fallback decisions were asked while Redis was up")
	return false, nil
}

var (
	_ ratelimit.Limiter = noLimiter{}
	_ clicks.Windows    = noWindows{}
	_ clicks.Decisions  = noDecisions{}
)

// patient is url with timeouts a loaded machine meets under the race
// detector. The tests given it are of what Redis answers: a call past the
// server's default of 250 ms would go to the fallback, which fails them.
// The fault tests keep the defaults.
func patient(url string) string {
	return url + "?dial_timeout=10s&read_timeout=10s&write_timeout=10s"
}

// open returns a Client for srv's URL, closed at the end of t.
func open(t *testing.T, url string, o redisstore.Options) *redisstore.Client {
	t.Helper()
	c, err := redisstore.Open(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLimiterKeepsTheContract(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	var n atomic.Int32
	storetest.Limits(t, func(t *testing.T) ratelimit.Limiter {
		// A prefix of its own gives each case empty state on one server.
		c := open(t, patient(srv.URL()), redisstore.Options{Prefix: fmt.Sprintf("case%d:", n.Add(1))})
		return c.Limiter("keys", noLimiter{t})
	})
}

// persistent opens, over one Redis that keeps every acknowledged write on
// disk, the store make builds; closing it kills the server with SIGKILL,
// and the next open starts it again, so the durability cases prove what a
// crash of Redis keeps.
func persistent[S any](make func(t *testing.T, c *redisstore.Client) S) func(t *testing.T) storetest.Opener[S] {
	return func(t *testing.T) storetest.Opener[S] {
		srv := testredis.Start(t, testredis.Options{Persist: true})
		return func() (S, func() error) {
			srv.Start()
			c, err := redisstore.Open(patient(srv.URL()), redisstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return make(t, c), func() error {
				err := c.Close()
				srv.Kill()
				return err
			}
		}
	}
}

func TestWindowsKeepTheContract(t *testing.T) {
	storetest.Windows(t, persistent(func(t *testing.T, c *redisstore.Client) clicks.Windows {
		return c.Windows(noWindows{t})
	}))
}

func TestDecisionsKeepTheContract(t *testing.T) {
	storetest.Decisions(t, persistent(func(t *testing.T, c *redisstore.Client) clicks.Decisions {
		return c.Decisions(noDecisions{t})
	}))
}

func TestVersionsKeepTheContract(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	var n atomic.Int32
	storetest.Versions(t, func(t *testing.T) func() catalog.Versions {
		prefix := fmt.Sprintf("deployment%d:", n.Add(1))
		return func() catalog.Versions {
			return open(t, patient(srv.URL()), redisstore.Options{Prefix: prefix}).Versions()
		}
	})
}
