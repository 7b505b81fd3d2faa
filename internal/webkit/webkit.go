// Package webkit drives WebKit, the engine of Safari and of every browser
// on iOS, for the browser tests: WebKitGTK's MiniBrowser on an X server of
// its own (Xvfb), through WebKitWebDriver and the W3C WebDriver protocol
// over loopback. Debian's webkit2gtk-driver and xvfb packages have them;
// .ci/run installs both.
package webkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Driver is WebKitGTK's WebDriver server.
const Driver = "/usr/bin/WebKitWebDriver"

// miniBrowser is WebKitGTK's own browser, which the driver starts; its
// directory names the architecture and the API version.
func miniBrowser() string {
	found, _ := filepath.Glob("/usr/lib/*/webkit2gtk-4.*/MiniBrowser")
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

// Has reports whether WebKit can run here: the driver, MiniBrowser and
// Xvfb.
func Has() bool {
	if _, err := os.Stat(Driver); err != nil || miniBrowser() == "" {
		return false
	}
	_, err := exec.LookPath("Xvfb")
	return err == nil
}

// Need skips the test when WebKit cannot run here, and fails it instead
// where CI is set: CI installs it.
func Need(tb testing.TB) {
	tb.Helper()
	if Has() {
		return
	}
	msg := "no WebKit: install Debian's webkit2gtk-driver and xvfb (.ci/run does) to run the WebKit tests"
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip("skipping: " + msg)
}

// Browser is one MiniBrowser window in a WebDriver session.
type Browser struct {
	session string // the session's URL
	http    *http.Client
}

// Start starts Xvfb, the driver and a MiniBrowser that names itself
// userAgent (its own when empty), all stopped when tb ends.
func Start(tb testing.TB, userAgent string) *Browser {
	tb.Helper()
	Need(tb)
	display := startXvfb(tb)
	port := startDriver(tb, display)
	b := &Browser{http: &http.Client{Timeout: time.Minute}}
	args := []string{"--automation"}
	if userAgent != "" {
		args = append(args, "--user-agent="+userAgent)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"webkitgtk:browserOptions": map[string]any{"binary": miniBrowser(), "args": args},
	}}}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := b.call(http.MethodPost, base+"/session", caps, &s); err != nil {
		tb.Fatalf("webkit: a session: %v", err)
	}
	b.session = base + "/session/" + s.SessionID
	tb.Cleanup(func() { _ = b.call(http.MethodDelete, b.session, nil, nil) })
	return b
}

// startXvfb starts an X server on a free display and returns its name.
func startXvfb(tb testing.TB) string {
	tb.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = endsWithTheTest()
	if err := cmd.Start(); err != nil {
		w.Close()
		tb.Fatalf("webkit: starting Xvfb: %v", err)
	}
	w.Close()
	// SIGTERM, on which Xvfb removes its socket and lock file in /tmp.
	tb.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if _, err := strconv.Atoi(n); err != nil {
			tb.Fatalf("webkit: Xvfb gave no display (%q)", n)
		}
		return ":" + n
	case <-time.After(30 * time.Second):
		tb.Fatal("webkit: Xvfb gave no display in 30 s")
		return ""
	}
}

// endsWithTheTest has a process killed when the test's process ends,
// even when it is killed or times out before its cleanups run: Xvfb and
// the driver would otherwise run on. MiniBrowser, the driver's, ends
// once its X server has.
func endsWithTheTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// startDriver starts WebKitWebDriver on a free loopback port for display
// and returns the port once it answers.
func startDriver(tb testing.TB, display string) int {
	tb.Helper()
	for range 3 {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(Driver, "--port="+strconv.Itoa(port), "--host=local")
		cmd.Env = append(os.Environ(), "DISPLAY="+display)
		cmd.SysProcAttr = endsWithTheTest()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			tb.Fatalf("webkit: starting %s: %v", Driver, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		tb.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		if ready(port, exited) {
			return port
		}
		tb.Logf("webkit: %s on port %d did not answer: %s", Driver, port, out.String())
	}
	tb.Fatalf("webkit: %s never answered", Driver)
	return 0
}

// ready waits until the driver on port answers its status, or has exited
// (another process took the port).
func ready(port int, exited <-chan struct{}) bool {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/status"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// call sends one WebDriver command and decodes its value into out.
func (b *Browser) call(method, url string, body, out any) error {
	var in io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return err
		}
		in = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, in)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var reply struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		return fmt.Errorf("%s %s: %d, %v", method, url, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error, Message string }
		_ = json.Unmarshal(reply.Value, &e)
		return fmt.Errorf("%s: %s: %s", method, e.Error, e.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(reply.Value, out)
}

// Navigate opens url and returns once it has loaded.
func (b *Browser) Navigate(tb testing.TB, url string) {
	tb.Helper()
	if err := b.call(http.MethodPost, b.session+"/url", map[string]string{"url": url}, nil); err != nil {
		tb.Fatalf("webkit: opening %s: %v", url, err)
	}
}

// Eval evaluates expr, an expression that may be a promise (which is
// awaited), in the page and decodes its value into out.
func (b *Browser) Eval(tb testing.TB, expr string, out any) {
	tb.Helper()
	// The newline ends a line comment that may close expr.
	body := map[string]any{"script": "return (" + expr + "\n);", "args": []any{}}
	if err := b.call(http.MethodPost, b.session+"/execute/sync", body, out); err != nil {
		tb.Fatalf("webkit: %s: %v", expr, err)
	}
}

// Click clicks the element css selects as a person's mouse would: the
// browser takes the click for the user's own.
func (b *Browser) Click(tb testing.TB, css string) {
	tb.Helper()
	if err := b.call(http.MethodPost, b.element(tb, css)+"/click", map[string]any{}, nil); err != nil {
		tb.Fatalf("webkit: clicking %s: %v", css, err)
	}
}

// Type types text into the element css selects, key by key.
func (b *Browser) Type(tb testing.TB, css, text string) {
	tb.Helper()
	if err := b.call(http.MethodPost, b.element(tb, css)+"/value", map[string]string{"text": text}, nil); err != nil {
		tb.Fatalf("webkit: typing into %s: %v", css, err)
	}
}

// element returns the URL of the first element css selects.
func (b *Browser) element(tb testing.TB, css string) string {
	tb.Helper()
	var el map[string]string
	if err := b.call(http.MethodPost, b.session+"/element", map[string]string{"using": "css selector", "value": css}, &el); err != nil {
		tb.Fatalf("webkit: finding %s: %v", css, err)
	}
	var id string
	for _, v := range el { // the element reference's one key
		id = v
	}
	if id == "" {
		tb.Fatalf("webkit: no element %s", css)
	}
	return b.session + "/element/" + id
}
