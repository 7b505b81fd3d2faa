package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

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

// A server whose migrations give up on their lock timeout at every try
// for -postgres-migrate-wait exits with status 1 and an error that names
// the session holding up its last try, and never tells systemd it is
// ready. Here the last migration's ALTER TABLE (00016's, of removed_ads)
// waits for an open transaction that holds the table.
func TestBinaryStopsWhenMigrationsWaitTooLong(t *testing.T) {
	bin := buildServer(t)
	url := testpg.New(t)
	db, err := pgstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Undo the migrations from 00016 on, so that a start applies them
	// again.
	sqlDB := stdlib.OpenDBFromPool(db.Pool())
	defer sqlDB.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, os.DirFS(filepath.Join("store", "pg", "migrations")),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(t.Context(), 15); err != nil {
		t.Fatalf("down to 00015: %v", err)
	}
	holder, err := db.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), "LOCK TABLE removed_ads IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	var holderPID int32
	if err := holder.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&holderPID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0", "-admin-addr", "", "-data", t.TempDir(), "-demo",
		"-postgres-lock-timeout", "100ms", "-postgres-migrate-wait", "1500ms")
	// Under systemd: a start that fails never says READY=1, so that
	// Restart=on-failure starts it again.
	sd := listenNotify(t)
	cmd.Env = []string{"ADLINK_POSTGRES_URL=" + url, "NOTIFY_SOCKET=" + sd.path}
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the server still started a minute past its migrations' wait:\n%s", stderr.Bytes())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the server's migrations held past their wait: %v, want exit status 1\n%s", err, stderr.Bytes())
	}
	if msg := sd.pending(t); msg != "" {
		t.Errorf("the server that did not start told systemd %q, want nothing", msg)
	}
	out := stderr.String()
	for _, want := range []string{"adlink: postgres: migrating: gave up after ", fmt.Sprintf("pid %d ", holderPID), "-postgres-migrate-wait"} {
		if !strings.Contains(out, want) {
			t.Errorf("the server's stderr does not say %q (the holder's pid is %d):\n%s", want, holderPID, out)
		}
	}
}
