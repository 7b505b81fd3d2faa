package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/adlink/adlink/internal/testpg"
	"github.com/adlink/adlink/wasm/module"
	"github.com/adlink/adlink/web/matcher"
)

// The tests that run the server binary share one build, made as "make
// build" makes it: the module built from this tree embedded, a version
// set by the linker.

func TestMain(m *testing.M) {
	code := testpg.Main(m)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// testVersion is the version the test build is stamped with.
const testVersion = "v0.0.0-test"

// built is the shared build: the binary and the module it embeds.
var built struct {
	once sync.Once
	dir  string
	bin  string
	wasm []byte
	err  error
}

// buildServer returns the server binary, built on first use.
func buildServer(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "adlink-bin-")
		if built.err == nil {
			built.bin, built.wasm, built.err = build(built.dir)
		}
	})
	if built.err != nil {
		tb.Fatalf("building the server: %v", built.err)
	}
	return built.bin
}

// build compiles this package into dir with the module built from this
// tree in place of whatever web/matcher/dist holds: an overlay, so the
// tree is left as it is.
func build(dir string) (bin string, wasm []byte, err error) {
	if wasm, err = module.Matcher(); err != nil {
		return "", nil, err
	}
	mod := filepath.Join(dir, "matcher.wasm")
	if err := os.WriteFile(mod, wasm, 0o644); err != nil {
		return "", nil, err
	}
	zst := mod + ".zst"
	switch err := module.WriteZstd(mod); {
	case errors.Is(err, module.ErrNoZstd):
		zst = "" // an overlay's empty name removes the file
	case err != nil:
		return "", nil, err
	}
	dist, err := filepath.Abs(filepath.Join("..", matcher.Dir))
	if err != nil {
		return "", nil, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(dist, "matcher.wasm"):     mod,
		filepath.Join(dist, "matcher.wasm.zst"): zst,
	}})
	if err != nil {
		return "", nil, err
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "adlink")
	cmd := exec.Command("go", "build", "-trimpath", "-overlay", ov, "-ldflags", "-X main.version="+testVersion, "-o", bin, ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("%v\n%s", err, stderr.Bytes())
	}
	return bin, wasm, nil
}

// serverProcess is the binary running on a loopback port.
type serverProcess struct {
	cmd  *exec.Cmd
	base string
	// admin is the admin listener's address.
	admin string
	done  chan struct{} // closed when the process has exited
}

// startServer runs bin with the demo partner on a free loopback port over
// data, from a working directory of its own, with the limits raised so
// that one client may click as fast as it can, and extra flags.
func startServer(tb testing.TB, bin, data string, extra ...string) *serverProcess {
	tb.Helper()
	args := []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", data, "-demo",
		"-rate-key", "1e9", "-rate-key-burst", "1000000000", "-rate-ip", "1e9", "-rate-ip-burst", "1000000000"}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Dir = tb.TempDir()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, done: make(chan struct{})}
	addr := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Msg, Addr string
				AdminAddr string `json:"admin_addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- [2]string{line.Addr, line.AdminAddr}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(p.kill)
	select {
	case a := <-addr:
		p.base, p.admin = "http://"+a[0], a[1]
		return p
	case <-p.done:
		tb.Fatal("the server exited before listening")
	case <-time.After(time.Minute):
		tb.Fatal("the server did not start within a minute")
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *serverProcess) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to shut down gracefully and waits for it.
func (p *serverProcess) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}

// TestBinaryServesFromAnyDirectory: the binary carries the module, the
// widget and the demo pages, so it serves them from a working directory
// that holds none of them.
func TestBinaryServesFromAnyDirectory(t *testing.T) {
	srv := startServer(t, buildServer(t), t.TempDir())
	for _, tt := range []struct {
		path, ctype string
		check       func([]byte) bool
	}{
		{"/matcher.wasm", "application/wasm", func(b []byte) bool { return bytes.Equal(b, built.wasm) }},
		{"/widget.js", "text/javascript; charset=utf-8", func(b []byte) bool { return bytes.Contains(b, []byte("matcher.wasm")) }},
		{"/demo/", "text/html; charset=utf-8", func(b []byte) bool { return bytes.Contains(b, []byte("widget.js")) }},
	} {
		res, err := http.Get(srv.base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != tt.ctype || !tt.check(body) {
			t.Errorf("%s: %s, %q, %d bytes; want 200, %q and the embedded file", tt.path, res.Status, res.Header.Get("Content-Type"), len(body), tt.ctype)
		}
	}
}

// TestBinaryVersion: -version prints the version the linker set, the
// commit and the Go toolchain, and exits 0, whatever else is configured.
func TestBinaryVersion(t *testing.T) {
	cmd := exec.Command(buildServer(t), "-version")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("adlink -version: %v", err)
	}
	line := strings.TrimSpace(string(out))
	if !strings.HasPrefix(line, "adlink "+testVersion+" commit ") || !strings.HasSuffix(line, " "+runtime.Version()) || strings.Contains(line, "\n") {
		t.Errorf("adlink -version printed %q, want one line: adlink %s commit <rev> %s", line, testVersion, runtime.Version())
	}
}
