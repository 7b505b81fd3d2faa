package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// notifySocket is the socket systemd gives a Type=notify service in
// NOTIFY_SOCKET, here read by the test.
type notifySocket struct {
	path string
	conn *net.UnixConn
}

// listenNotify listens where systemd would, in a directory short enough
// for a socket's path.
func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "adlink-notify-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &notifySocket{path: path, conn: conn}
}

// pending is the message already queued, or "" when none is: once the
// process has exited, every message it sent is queued.
func (s *notifySocket) pending(t *testing.T) string {
	t.Helper()
	raw, err := s.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var n int
	var recvErr error
	if err := raw.Read(func(fd uintptr) bool {
		n, _, recvErr = syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT)
		return true // no waiting for one
	}); err != nil {
		t.Fatal(err)
	}
	if errors.Is(recvErr, syscall.EAGAIN) {
		return ""
	}
	if recvErr != nil {
		t.Fatal(recvErr)
	}
	return string(buf[:n])
}

// want reads the next message, failing the test when none comes within
// a minute.
func (s *notifySocket) want(t *testing.T, after string) string {
	t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 4096)
	n, err := s.conn.Read(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("no message to NOTIFY_SOCKET within a minute %s", after)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// readyState is what /readyz says: its status and the catalog served.
type readyState struct {
	code    int
	Status  string
	Catalog struct {
		Version     string
		LastRefresh *struct{ Result string } `json:"last_refresh"`
	}
}

func getReady(t *testing.T, base string) readyState {
	t.Helper()
	res, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	s := readyState{code: res.StatusCode}
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("/readyz: %v in %s", err, body)
	}
	return s
}

// TestBinaryNotifiesSystemd: under systemd (NOTIFY_SOCKET set) the server
// says READY=1 once /readyz says ready, RELOADING=1 with the moment on
// SIGHUP and READY=1 once the refreshed catalog is served, and STOPPING=1
// on SIGTERM, and then stops cleanly.
func TestBinaryNotifiesSystemd(t *testing.T) {
	bin := buildServer(t)
	demo, err := os.ReadFile(filepath.Join("..", "testdata", "catalog", "demo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	feed := filepath.Join(t.TempDir(), "feed.jsonl")
	if err := os.WriteFile(feed, demo, 0o644); err != nil {
		t.Fatal(err)
	}
	sd := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", sd.path)
	srv := startServer(t, bin, t.TempDir(), "-catalog", feed)

	if msg := sd.want(t, "of the server's start"); msg != "READY=1" {
		t.Fatalf("first message %q, want READY=1", msg)
	}
	first := getReady(t, srv.base)
	if first.code != http.StatusOK || first.Status != "ready" || first.Catalog.Version == "" {
		t.Fatalf("/readyz at READY=1: %d %+v, want 200 ready with a catalog", first.code, first)
	}

	// One ad fewer: the refresh swaps the catalog.
	lines := bytes.SplitAfter(bytes.TrimSuffix(demo, []byte("\n")), []byte("\n"))
	if err := os.WriteFile(feed, bytes.Join(lines[:len(lines)-1], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	msg := sd.want(t, "of SIGHUP")
	fields := strings.Split(strings.TrimSuffix(msg, "\n"), "\n")
	if len(fields) != 2 || fields[0] != "RELOADING=1" || !strings.HasPrefix(fields[1], "MONOTONIC_USEC=") {
		t.Fatalf("on SIGHUP %q, want RELOADING=1 and MONOTONIC_USEC=", msg)
	}
	if usec, err := strconv.ParseUint(strings.TrimPrefix(fields[1], "MONOTONIC_USEC="), 10, 64); err != nil || usec == 0 {
		t.Errorf("MONOTONIC_USEC in %q is no count of microseconds", msg)
	}
	if msg := sd.want(t, "after RELOADING=1"); msg != "READY=1" {
		t.Fatalf("after RELOADING=1 %q, want READY=1", msg)
	}
	after := getReady(t, srv.base)
	if after.code != http.StatusOK || after.Catalog.Version == first.Catalog.Version ||
		after.Catalog.LastRefresh == nil || after.Catalog.LastRefresh.Result != "swapped" {
		t.Errorf("/readyz at READY=1 after SIGHUP: %d %+v, want the refreshed catalog (was %s)", after.code, after, first.Catalog.Version)
	}

	srv.stop()
	if msg := sd.want(t, "of SIGTERM"); msg != "STOPPING=1" {
		t.Errorf("on SIGTERM %q, want STOPPING=1", msg)
	}
	if !srv.cmd.ProcessState.Success() {
		t.Errorf("the server's graceful stop: %v, want exit status 0", srv.cmd.ProcessState)
	}
	// Every message was sent before the process exited.
	if msg := sd.pending(t); msg != "" {
		t.Errorf("after STOPPING=1 %q, want nothing", msg)
	}
}

// unitBinary is where docs/adlink.service runs the server.
const unitBinary = "/usr/local/bin/adlink"

// maxExposure is the highest exposure systemd-analyze security may rate
// the unit: 10 is a unit without hardening, under 2 is "OK".
const maxExposure = 1.5

// TestServiceUnit: systemd accepts docs/adlink.service as it is, running
// a real binary, and rates its hardening OK.
func TestServiceUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is not installed (apt-get install systemd); CI is set, so this test may not skip")
		}
		t.Skip("skipping: systemd-analyze is not installed (Debian's systemd package has it)")
	}
	unit, err := os.ReadFile(filepath.Join("..", "docs", "adlink.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("ExecStart="+unitBinary+" ")) {
		t.Fatalf("docs/adlink.service: no ExecStart=%s", unitBinary)
	}
	// A reload that waits for the refresh (TestBinaryReloadWaits), not
	// a signal that returns at once.
	if !bytes.Contains(unit, []byte("\nExecReload="+unitBinary+" reload\n")) {
		t.Errorf("docs/adlink.service: no ExecReload=%s reload", unitBinary)
	}
	path := filepath.Join(t.TempDir(), "adlink.service")
	unit = bytes.ReplaceAll(unit, []byte(unitBinary), []byte(buildServer(t)))
	if err := os.WriteFile(path, unit, 0o644); err != nil {
		t.Fatal(err)
	}

	// verify exits 0 on a warning such as an unknown key, which it prints.
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	out, err = exec.Command(analyze, "security", "--offline=true", "--no-pager", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for adlink\.service: ([0-9.]+) (\w+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security names no exposure level:\n%s", out)
	}
	t.Logf("systemd-analyze security: exposure %s %s", m[1], m[2])
	if level, err := strconv.ParseFloat(string(m[1]), 64); err != nil || level > maxExposure {
		t.Errorf("exposure %s, want at most %.1f:\n%s", m[1], maxExposure, out)
	}
}

// TestServiceMayDenyWriteExecute: docs/adlink.service sets
// MemoryDenyWriteExecute, which a WebAssembly compiler's code would
// break: the server binary has none.
func TestServiceMayDenyWriteExecute(t *testing.T) {
	info, err := buildinfo.ReadFile(buildServer(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range info.Deps {
		if strings.HasPrefix(dep.Path, "github.com/tetratelabs/wazero") {
			t.Errorf("the server links %s: its compiled code needs writable and executable memory, which docs/adlink.service denies", dep.Path)
		}
	}
}

// heldFeed serves a feed at /feed.jsonl whose answer a test may hold:
// while held, a request says it came on asked, then waits for release.
type heldFeed struct {
	mu      sync.Mutex
	body    []byte
	held    bool
	asked   chan struct{}
	release chan struct{}
}

func (f *heldFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	body, held := f.body, f.held
	f.mu.Unlock()
	if held {
		f.asked <- struct{}{}
		<-f.release
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Write(body)
}

func (f *heldFeed) set(body []byte, held bool) {
	f.mu.Lock()
	f.body, f.held = body, held
	f.mu.Unlock()
}

// TestBinaryReloadWaits: adlink reload, the unit's ExecReload, returns
// only once the refresh it asked for has ended, the refreshed catalog
// served, exiting 0; and exits non-zero when the refresh fails (a broken
// feed), the catalog served before staying.
func TestBinaryReloadWaits(t *testing.T) {
	bin := buildServer(t)
	demo, err := os.ReadFile(filepath.Join("..", "testdata", "catalog", "demo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	feed := &heldFeed{body: demo, asked: make(chan struct{}, 1), release: make(chan struct{})}
	feedSrv := httptest.NewServer(feed)
	defer feedSrv.Close()
	defer close(feed.release)
	srv := startServer(t, bin, t.TempDir(), "-catalog", feedSrv.URL+"/feed.jsonl")
	first := getReady(t, srv.base)
	if first.code != http.StatusOK || first.Catalog.Version == "" {
		t.Fatalf("/readyz at the start: %d %+v", first.code, first)
	}
	reload := func(env ...string) *exec.Cmd {
		cmd := exec.Command(bin, "reload")
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
		return cmd
	}

	// One ad fewer, its feed held until the command is seen waiting.
	lines := bytes.SplitAfter(bytes.TrimSuffix(demo, []byte("\n")), []byte("\n"))
	feed.set(bytes.Join(lines[:len(lines)-1], nil), true)
	cmd := reload("ADLINK_ADMIN_ADDR=" + srv.admin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-feed.asked:
	case err := <-exited:
		t.Fatalf("adlink reload exited (%v) before the refresh read the feed: %s%s", err, cmd.Stdout, cmd.Stderr)
	}
	select {
	case err := <-exited:
		t.Fatalf("adlink reload exited (%v) while the refresh was reading the feed: %s%s", err, cmd.Stdout, cmd.Stderr)
	default:
	}
	feed.set(bytes.Join(lines[:len(lines)-1], nil), false)
	feed.release <- struct{}{}
	if err := <-exited; err != nil {
		t.Fatalf("adlink reload of a good feed: %v: %s%s", err, cmd.Stdout, cmd.Stderr)
	}
	after := getReady(t, srv.base)
	if after.Catalog.Version == first.Catalog.Version || after.Catalog.LastRefresh == nil || after.Catalog.LastRefresh.Result != "swapped" {
		t.Fatalf("/readyz once adlink reload returned: %+v, want the refreshed catalog (was %s)", after, first.Catalog.Version)
	}
	if out := cmd.Stdout.(*bytes.Buffer).String(); !strings.Contains(out, "swapped") || !strings.Contains(out, after.Catalog.Version) {
		t.Errorf("adlink reload printed %q, want the catalog swapped and its version %s", out, after.Catalog.Version)
	}

	// A broken feed: the refresh fails, the command says so and exits 1.
	feed.set([]byte("{not json\n"), false)
	cmd = reload()
	cmd.Args = append(cmd.Args, "-admin-addr", srv.admin)
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(cmd.Stderr.(*bytes.Buffer).String(), "failed") {
		t.Errorf("adlink reload of a broken feed: %v: %s%s, want exit status 1 saying the refresh failed", err, cmd.Stdout, cmd.Stderr)
	}
	if now := getReady(t, srv.base); now.Catalog.Version != after.Catalog.Version || now.Catalog.LastRefresh == nil || now.Catalog.LastRefresh.Result != "failed" {
		t.Errorf("/readyz after a failed reload: %+v, want %s still served and the refresh failed", now, after.Catalog.Version)
	}
}
