// Package testpg gives a test binary a Postgres server of its own: Main
// runs initdb and postgres from the installed binaries in a temporary
// directory, on a free loopback port, before the tests, and stops the
// server after them; New hands each test a new, empty database on it.
// Start gives a test a server of its own that it may stop, kill and start
// again on the same data directory and port (the outage tests). Without
// the binaries the tests that need it skip, unless CI is set in the
// environment: then they fail.
package testpg

import (
	"bytes"
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
	"strings"
	"sync"
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
	tmpl.use = true
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
	if tmpl.dir != "" {
		os.RemoveAll(tmpl.dir)
	}
	return code
}

// tmpl is the data directory initdb makes once for a test binary that
// runs Main, which removes it: each server's is a copy, since initdb
// takes seconds and a copy a fraction of one. A binary without Main
// runs initdb for each server, as nothing would remove the template.
var tmpl struct {
	use  bool
	once sync.Once
	dir  string // holds data, the template
	err  error
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
	srv, err := initServer()
	if err != nil {
		return nil, err
	}
	if err := srv.Restart(); err != nil {
		os.RemoveAll(srv.dir)
		return nil, err
	}
	base = srv.base()
	return func() error {
		base = ""
		return srv.remove()
	}, nil
}

// Server is a Postgres server of one test's own, on its own data
// directory and loopback port, which the test may stop, kill and start
// again on both: the faults the tests of outages need.
type Server struct {
	bin, dir, data string
	port           int
	cred           *syscall.Credential

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
}

// Start runs a new server for tb, stopped and removed when tb ends.
// Without the binaries it skips tb, or under CI fails it.
func Start(tb testing.TB) *Server {
	tb.Helper()
	fail := tb.Skipf
	if os.Getenv("CI") != "" {
		fail = tb.Fatalf
	}
	srv, err := initServer()
	if err != nil {
		fail("no Postgres for the test: %v", err)
	}
	tb.Cleanup(func() { srv.remove() })
	if err := srv.Restart(); err != nil {
		tb.Fatalf("testpg: %v", err)
	}
	return srv
}

// URL is the server's postgres database.
func (s *Server) URL() string { return s.base() + "postgres" }

func (s *Server) base() string { return "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.port) + "/" }

// Stop shuts the server down as an operator does (fast shutdown:
// connections are closed, the data is checkpointed) and waits for it.
func (s *Server) Stop() error { return s.end(syscall.SIGINT) }

// Kill kills the server and every one of its processes with SIGKILL, as
// a crash of its machine would: its next start recovers from the WAL.
func (s *Server) Kill() error { return s.end(syscall.SIGKILL) }

func (s *Server) end(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if sig == syscall.SIGKILL {
		// Its backends too, which outlive a postmaster killed alone and
		// lead process groups of their own.
		children := childrenOf(s.cmd.Process.Pid)
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range children {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		defer waitGone(children)
	} else {
		s.cmd.Process.Signal(sig)
	}
	var err error
	select {
	case err = <-s.exited:
	case <-time.After(30 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		err = <-s.exited
	}
	s.cmd = nil
	if sig == syscall.SIGKILL || errors.As(err, new(*exec.ExitError)) {
		return nil // killed, as asked
	}
	return err
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if ppid, _ := parentOf(child); ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// parentOf reads pid's parent and state from /proc.
func parentOf(pid int) (ppid int, state string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}

// waitGone waits, up to 10 s, until each of pids is gone or a zombie.
func waitGone(pids []int) {
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if _, state := parentOf(pid); state == "" || state == "Z" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Restart starts the server on its data directory and port, unless it
// runs, and waits until it answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// fsync and synchronous_commit stay on: what the tests and benchmarks
	// measure is the durable commit.
	pg := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	pg.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	pg.Dir = s.dir
	pg.Stdout, pg.Stderr = logFile, logFile
	if err := pg.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- pg.Wait() }()
	if err := waitReady(s.base()+"postgres", exited); err != nil {
		syscall.Kill(-pg.Process.Pid, syscall.SIGKILL)
		log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
		return fmt.Errorf("postgres did not start: %w\n%s", err, log)
	}
	s.cmd, s.exited = pg, exited
	return nil
}

// remove stops the server and removes its directory.
func (s *Server) remove() error {
	err := s.Stop()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// initServer runs initdb in a new directory and picks a port.
func initServer() (srv *Server, err error) {
	bin := Bin()
	if bin == "" {
		return nil, errors.New("no initdb and postgres in /usr/lib/postgresql/*/bin or on PATH")
	}
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
	}
	dir, err := ownDir("testpg-", cred)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")
	if !tmpl.use {
		err = initdb(bin, dir, cred)
	} else {
		tmpl.once.Do(func() {
			if tmpl.dir, tmpl.err = ownDir("testpg-template-", cred); tmpl.err == nil {
				tmpl.err = initdb(bin, tmpl.dir, cred)
			}
		})
		if err = tmpl.err; err == nil {
			// -a keeps the owner and the data directory's 0700, which
			// postgres insists on.
			if out, cpErr := exec.Command("cp", "-a", filepath.Join(tmpl.dir, "data"), data).CombinedOutput(); cpErr != nil {
				err = fmt.Errorf("copying the initdb template: %w: %s", cpErr, out)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &Server{bin: bin, dir: dir, data: data, port: port, cred: cred}, nil
}

// ownDir makes a new temporary directory owned by cred's user, when
// given.
func ownDir(pattern string, cred *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// initdb makes a data directory, data, in dir, as cred's user.
func initdb(bin, dir string, cred *syscall.Credential) error {
	// --no-sync: initdb's flush of its thousand files waited on the disk
	// for up to minutes on a busy machine, and guards only against the
	// machine's crash, which no test makes; a killed server finds them in
	// the page cache. The server's own fsync stays on.
	cmd := exec.Command(filepath.Join(bin, "initdb"), "--no-sync", "-D", filepath.Join(dir, "data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	return nil
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
