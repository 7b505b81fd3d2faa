// Package testpg gives a test binary a Postgres server of its own: Main
// runs initdb and postgres from the installed binaries in a temporary
// directory, on a free loopback port, before the tests, and stops the
// server after them; New hands each test a new, empty database on it.
// Without the binaries the tests that need it skip, unless CI is set in
// the environment: then they fail.
package testpg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The package's server: its base URL and why there is none.
var (
	base     string
	startErr error
	dbs      atomic.Int64
)

// Main starts the server, runs m's tests and stops the server; a test
// binary's TestMain returns what it returns:
//
//	func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }
func Main(m *testing.M) int {
	stop, err := start()
	if err != nil {
		startErr = err
	}
	code := m.Run()
	if stop != nil {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testpg: stopping postgres:", err)
		}
	}
	return code
}

// New returns the URL of a new, empty database on the test binary's
// server: a schema of its own, the connections' search_path. Without a server it skips t, or under CI fails it.
func New(tb testing.TB) string {
	tb.Helper()
	if base == "" {
		why := startErr
		if why == nil {
			why = errors.New("testpg.Main did not run: the package's TestMain must call it")
		}
		if os.Getenv("CI") != "" {
			tb.Fatalf("no Postgres for the test: %v", why)
		}
		tb.Skipf("skipping: no Postgres: %v (install Debian's postgresql package; .ci/run does)", why)
	}
	name := "t" + strconv.FormatInt(dbs.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base+"postgres")
	if err != nil {
		tb.Fatalf("testpg: %v", err)
	}
	defer conn.Close(ctx)
	// A schema of its own is a new, empty database to the test, and far
	// cheaper to make than a database.
	if _, err = conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		tb.Fatalf("testpg: %v", err)
	}
	return base + "postgres?search_path=" + name
}

// Bin is the directory of the Postgres binaries, or "" when there are
// none: Debian's /usr/lib/postgresql/<version>/bin, newest first, else
// initdb's directory on PATH.
func Bin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil && isFile(filepath.Join(filepath.Dir(p), "postgres")) {
			return filepath.Dir(p)
		}
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// start runs initdb and postgres and returns the function that stops
// the server and removes its directory.
func start() (stop func() error, err error) {
	bin := Bin()
	if bin == "" {
		return nil, errors.New("no initdb and postgres in /usr/lib/postgresql/*/bin or on PATH")
	}
	dir, err := os.MkdirTemp("", "testpg-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	// Postgres refuses to run as root: then it runs as nobody, in a
	// directory of nobody's.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root and no user nobody to run postgres as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// fsync and synchronous_commit stay on: what the tests and benchmarks
	// measure is the durable commit.
	pg := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	pg.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	pg.Dir = dir
	pg.Stdout, pg.Stderr = logFile, logFile
	if err := pg.Start(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- pg.Wait() }()
	url := "postgres://postgres@127.0.0.1:" + strconv.Itoa(port) + "/"
	if err := waitReady(url+"postgres", exited); err != nil {
		pg.Process.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		return nil, fmt.Errorf("postgres did not start: %w\n%s", err, log)
	}
	base = url
	return func() error {
		base = ""
		// SIGINT is postgres's fast shutdown.
		pg.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			pg.Process.Kill()
			<-exited
		}
		return os.RemoveAll(dir)
	}, nil
}

// waitReady connects until the server answers, it exits, or a minute
// passes.
func waitReady(url string, exited <-chan error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, url)
		cancel()
		if err == nil {
			return conn.Close(context.Background())
		}
		select {
		case e := <-exited:
			return fmt.Errorf("postgres exited: %v", e)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// freePort returns a loopback TCP port no one listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
