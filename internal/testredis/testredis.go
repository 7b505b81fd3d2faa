// Package testredis runs a real redis-server for tests: in a temporary
// directory, on a free loopback port, stopped when the test ends. Without
// redis-server on the PATH a test skips, unless the CI variable is set:
// then it fails, so that CI never passes by skipping. StartCluster runs
// three of them as a Redis Cluster.
package testredis

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options choose how the server keeps its data.
type Options struct {
	// Persist keeps every write in an append-only file fsync'd before the
	// write is answered, so a server killed with SIGKILL and started again
	// has every write it acknowledged. Without it the server keeps nothing
	// on disk.
	Persist bool
	// Cluster starts the server as a node of a Redis Cluster (StartCluster
	// makes one of several).
	Cluster bool
	// PartialCoverage has a cluster's nodes serve their slots while
	// another node's are served by none (cluster-require-full-coverage
	// no). By default, once the nodes agree that a master without a
	// replica is down (the node timeout, 15 seconds), every node refuses
	// every command.
	PartialCoverage bool
}

// Server is one redis-server process, which Stop and Start stop and start
// again on the same port and directory.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	bus  int // the cluster bus's port, with Options.Cluster
	opts Options

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts a redis-server for t and stops it when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed (apt-get install redis-server); CI is set, so this test may not skip")
		}
		t.Skip("redis-server is not installed (apt-get install redis-server): skipping the tests against a real Redis")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), opts: o}
	// Another process may take the free port before the server binds it:
	// then another one.
	for try := 0; ; try++ {
		s.port = freePort(t)
		if o.Cluster {
			s.bus = freePort(t)
		}
		log, ok := s.start()
		if ok {
			break
		}
		if try == 2 || !strings.Contains(log, "Address already in use") {
			t.Fatalf("redis-server on port %d did not start:\n%s", s.port, log)
		}
	}
	t.Cleanup(s.Kill)
	return s
}

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start starts the server if it is not running, on the port and
// directory it had, and returns once it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if log, ok := s.start(); !ok {
		s.t.Fatalf("redis-server on port %d did not start:\n%s", s.port, log)
	}
}

// start starts the server unless it is running and reports whether it
// accepts connections, with its log when it does not.
func (s *Server) start() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return "", true
	}
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--daemonize", "no", "--logfile", "", "--save", ""}
	if s.opts.Cluster {
		// The node's view of the cluster is kept in its directory, so a
		// node started again rejoins it.
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(s.bus))
		if s.opts.PartialCoverage {
			args = append(args, "--cluster-require-full-coverage", "no")
		}
	}
	if s.opts.Persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	log := &readyLog{ready: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err.Error(), false
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// The server says when it accepts connections; its log is the signal.
	select {
	case <-log.ready:
	case <-exited:
		return log.String(), false
	}
	s.cmd, s.exited = cmd, exited
	return "", true
}

// readyLog is the server's log, closing ready once the server accepts
// connections.
type readyLog struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan struct{}
	seen  bool
}

func (l *readyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() < 1<<16 {
		l.buf.Write(p)
	}
	if !l.seen && strings.Contains(l.buf.String(), "Ready to accept connections") {
		l.seen = true
		close(l.ready)
	}
	return len(p), nil
}

func (l *readyLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// CPU is the CPU time the running server has used (user and system, from
// /proc); 0 where /proc does not tell. Benchmarks weigh what Redis costs
// beside their own CPU time.
func (s *Server) CPU() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command's name, in parentheses, may hold spaces: fields count
	// from after it. utime and stime are fields 14 and 15, in clock ticks
	// (100 a second on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * (time.Second / 100)
}

// Running reports whether the server runs: started, and not killed since.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Kill stops the server at once with SIGKILL, as a crash would; Start
// starts it again. A stopped server refuses connections.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Pause freezes the running server (SIGSTOP), as a machine that stops
// answering without closing its connections: commands sent to it wait
// for their timeouts. Resume thaws it; Kill ends it paused or not.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume thaws a server Pause froze (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("redis-server on port %d is not running", s.port)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redis-server on port %d: %v", s.port, err)
	}
}
