package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pgstore "github.com/adlink/adlink/backend/store/pg"
	"github.com/adlink/adlink/internal/testpg"
)

// silentPostgres is a loopback listener that takes connections and
// never answers, as a Postgres stopped with SIGSTOP does (its kernel
// still accepts). It returns a URL of it.
func silentPostgres(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "postgres://adlink@" + l.Addr().String() + "/adlink?sslmode=disable"
}

// commandErr runs the command args and returns its error. A run still
// going after a minute fails the test, rather than hangs it.
func commandErr(t *testing.T, args ...string) error {
	t.Helper()
	ended := make(chan error, 1)
	go func() {
		ended <- run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
	}()
	select {
	case err := <-ended:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%q still runs after a minute", args)
		return nil
	}
}

// The commands' -postgres reach a Postgres that never answers within
// their bound on connecting, and say so; as they do within -timeout when
// it is shorter.
func TestPostgresCommandsBoundConnecting(t *testing.T) {
	url := silentPostgres(t)
	defer func(d time.Duration) { pgConnectWithin = d }(pgConnectWithin)
	pgConnectWithin = 300 * time.Millisecond
	day := time.Now().UTC().Format(time.DateOnly)
	for _, args := range [][]string{
		{"invalidate", "-postgres", url, "-api-key", "demo", "-from", day, "-to", day, "-reason", "farm"},
		{"report", "-postgres", url, "-from", day, "-to", day},
	} {
		err := commandErr(t, args...)
		if err == nil || !strings.Contains(err.Error(), "connecting: Postgres did not answer within 300ms") {
			t.Errorf("%s on a Postgres that never answers: %v, want the connecting named", args[0], err)
		}
		err = commandErr(t, append(args, "-timeout", "200ms")...)
		if err == nil || !strings.Contains(err.Error(), "did not end within -timeout 200ms") {
			t.Errorf("%s -timeout 200ms on a Postgres that never answers: %v, want -timeout named", args[0], err)
		}
	}
}

// The commands' work in Postgres ends at -timeout: here the tables they
// read are held by an open transaction that altered them, so their
// statements wait.
func TestPostgresCommandsTimeOut(t *testing.T) {
	url := testpg.New(t)
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	holder, err := db.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), "LOCK TABLE clicks, rollups IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	for _, args := range [][]string{
		{"invalidate", "-postgres", url, "-api-key", "demo", "-from", day, "-to", day, "-reason", "farm", "-timeout", "1s"},
		{"report", "-postgres", url, "-from", day, "-to", day, "-timeout", "1s"},
	} {
		err := commandErr(t, args...)
		if err == nil || !strings.Contains(err.Error(), "did not end within -timeout 1s") {
			t.Errorf("%s on tables held: %v, want -timeout named", args[0], err)
		}
	}
}
