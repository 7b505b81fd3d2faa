package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backupCopies is an AdminDeps.Backup that hands out sparse files of size
// bytes (no disk written) and counts the copies it made.
type backupCopies struct {
	size int64
	made atomic.Int64
}

func (b *backupCopies) backup(t *testing.T) func() (*os.File, error) {
	return func() (*os.File, error) {
		b.made.Add(1)
		f, err := os.CreateTemp(t.TempDir(), "backup-*")
		if err != nil {
			return nil, err
		}
		if err := f.Truncate(b.size); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
}

// adminServer serves NewAdmin(d) on loopback and sends each connection's
// return to idle or close on done.
func adminServer(t *testing.T, d AdminDeps) (string, <-chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 64)
	srv := httptest.NewUnstartedServer(NewAdmin(d))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateIdle || s == http.StateClosed {
			done <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, done
}

// stalledBackup asks base for a backup on a connection of its own, reads
// its status line and headers, and then reads nothing more until resume
// is called, which reads the rest and returns how many body bytes came.
func stalledBackup(t *testing.T, base string) (header http.Header, resume func() (int64, error)) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, "GET /admin/backup HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(conn, 512)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("first backup: %d", res.StatusCode)
	}
	return res.Header, func() (int64, error) { return io.Copy(io.Discard, res.Body) }
}

// HEAD /admin/backup copies nothing; one backup runs at a time, from its
// copy to the end of its sending, and another asked for meanwhile gets a
// 503 with Retry-After, as does a HEAD; once the first is sent, the next
// is taken.
func TestBackupOneAtATime(t *testing.T) {
	// Larger than loopback's socket buffers, so that the first backup's
	// handler is still sending while its client reads nothing.
	copies := &backupCopies{size: 64 << 20}
	base, done := adminServer(t, AdminDeps{Backup: copies.backup(t)})

	res, err := http.Head(base + "/admin/backup")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	<-done
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/octet-stream" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("HEAD: %d %v", res.StatusCode, res.Header)
	}
	if n := copies.made.Load(); n != 0 {
		t.Fatalf("HEAD made %d copies, want 0", n)
	}

	header, resume := stalledBackup(t, base)
	if got := header.Get("Content-Length"); got != strconv.FormatInt(copies.size, 10) {
		t.Fatalf("first backup's Content-Length %s, want %d", got, copies.size)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, base+"/admin/backup", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		<-done
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s during a backup: %d Retry-After %q, want 503 with Retry-After", method, res.StatusCode, res.Header.Get("Retry-After"))
		}
		if method == http.MethodGet && !strings.Contains(string(body), CodeBackupBusy) {
			t.Errorf("GET during a backup: %s, want %s", body, CodeBackupBusy)
		}
	}
	if n := copies.made.Load(); n != 1 {
		t.Fatalf("%d copies made while one backup was sent, want 1", n)
	}

	if n, err := resume(); err != nil || n != copies.size {
		t.Fatalf("first backup: %d bytes (%v), want %d", n, err, copies.size)
	}
	<-done // its handler returned
	res, err = http.Get(base + "/admin/backup")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || n != copies.size || copies.made.Load() != 2 {
		t.Errorf("backup after the first: %d, %d bytes, %d copies", res.StatusCode, n, copies.made.Load())
	}
}

// A client that stops reading is dropped once a write has waited
// BackupStall, and the next backup is taken.
func TestBackupDropsAStalledClient(t *testing.T) {
	copies := &backupCopies{size: 64 << 20}
	base, done := adminServer(t, AdminDeps{Backup: copies.backup(t), BackupStall: 50 * time.Millisecond})
	_, resume := stalledBackup(t, base)
	<-done // dropped: the handler returned and the connection closed
	if n, _ := resume(); n >= copies.size {
		t.Fatalf("the stalled client got all %d bytes", n)
	}
	// Its turn is free: the next is taken (and, read as fast as a loaded
	// machine reads, may itself stall past so short a bound).
	res, err := http.Get(base + "/admin/backup")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || copies.made.Load() != 2 {
		t.Errorf("backup after a dropped one: %d, %d copies made, want 200 and 2", res.StatusCode, copies.made.Load())
	}
}

// A backup refused while another runs is told to retry after the time the
// running one has left at its pace so far: at least a second, and no more
// than maxBackupRetry however slowly its client reads.
func TestBackupRetryAfterFollowsProgress(t *testing.T) {
	// Far larger than loopback's socket buffers hold, so the stalled
	// client has taken well under a quarter of it.
	copies := &backupCopies{size: 256 << 20}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	base, done := adminServer(t, AdminDeps{Backup: copies.backup(t), Now: clock})
	retryAfter := func(method string) string {
		t.Helper()
		req, _ := http.NewRequest(method, base+"/admin/backup", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		<-done
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s during a backup: %d, want 503", method, res.StatusCode)
		}
		after := res.Header.Get("Retry-After")
		if method == http.MethodGet {
			var e errorResponse
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if strconv.Itoa(e.Error.RetryAfter) != after || strings.Contains(e.Error.Message, "retry") {
				t.Errorf("GET during a backup: %s, want retry_after %s, as Retry-After, and a message without it", body, after)
			}
		}
		return after
	}
	_, resume := stalledBackup(t, base)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		if got := retryAfter(method); got != "1" {
			t.Errorf("%s as the backup starts: Retry-After %q, want 1", method, got)
		}
	}
	mu.Lock()
	now = now.Add(100 * time.Second)
	mu.Unlock()
	// Under a quarter sent in 100 s: more than 300 s left, capped. Until
	// the handler has counted the first bytes the client took, the pace is
	// unknown and the answer is as long again as it ran, 100 s: on a busy
	// machine the client can have the headers before that.
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		got := retryAfter(method)
		for deadline := time.Now().Add(10 * time.Second); got == "100" && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			got = retryAfter(method)
		}
		if got != strconv.Itoa(maxBackupRetry) {
			t.Errorf("%s 100 s into a stalled backup: Retry-After %q, want %d", method, got, maxBackupRetry)
		}
	}
	if n, err := resume(); err != nil || n != copies.size {
		t.Fatalf("first backup: %d bytes (%v), want %d", n, err, copies.size)
	}
}

// backupRetry is the rest of a backup at its pace so far, in whole
// seconds rounded up, from 1 to maxBackupRetry.
func TestBackupRetry(t *testing.T) {
	for _, c := range []struct {
		elapsed    time.Duration
		sent, size int64
		want       int
	}{
		{0, 0, 0, 1},                    // just begun
		{10 * time.Second, 0, 0, 10},    // copying for 10 s: as long again
		{10 * time.Second, 0, 100, 10},  // nothing taken yet
		{10 * time.Second, 25, 100, 30}, // a quarter in 10 s
		{1500 * time.Millisecond, 50, 100, 2},
		{10 * time.Second, 100, 100, 1}, // all sent, the connection closing
		{10 * time.Second, 200, 100, 1},
		{time.Hour, 1, 100, maxBackupRetry},
		{time.Hour, 0, 100, maxBackupRetry},
	} {
		if got := backupRetry(c.elapsed, c.sent, c.size); got != c.want {
			t.Errorf("backupRetry(%v, %d, %d) = %d, want %d", c.elapsed, c.sent, c.size, got, c.want)
		}
	}
}

// TestAdminRefusesWebPages: a web page open in a browser on the admin
// listener's machine cannot use it. A cross-origin POST (a form or a
// no-cors fetch) reloads nothing, and a page whose own name the attacker
// rebinds to loopback (DNS rebinding) reads no backup and reloads
// nothing. The operator's tools, by address, localhost or the machine's
// name, are served, and a scraper may name the host in full for /metrics.
func TestAdminRefusesWebPages(t *testing.T) {
	var reloads atomic.Int64
	copies := &backupCopies{size: 1 << 10}
	base, _ := adminServer(t, AdminDeps{Backup: copies.backup(t), Reload: func(context.Context, bool) Reload {
		reloads.Add(1)
		return Reload{Result: "unchanged"}
	}, Hosts: []string{"adlink-1.Internal.example"}})
	port := base[strings.LastIndexByte(base, ':'):]
	for _, c := range []struct {
		name, method, path, host string
		header                   http.Header
		status                   int
	}{
		{"cross-site form", http.MethodPost, "/admin/reload?force=true", "127.0.0.1" + port,
			http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"cross-origin fetch without Sec-Fetch", http.MethodPost, "/admin/reload?force=true", "localhost" + port,
			http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"another site's <img> of a backup", http.MethodGet, "/admin/backup", "127.0.0.1" + port,
			http.Header{"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"no-cors"}}, http.StatusForbidden},
		{"rebound name reads a backup", http.MethodGet, "/admin/backup", "rebind.evil.example" + port, nil, http.StatusForbidden},
		{"rebound name reloads", http.MethodPost, "/admin/reload", "rebind.evil.example" + port,
			http.Header{"Sec-Fetch-Site": {"same-origin"}}, http.StatusForbidden},
		{"rebound name with a trailing dot", http.MethodGet, "/admin/backup", "rebind.evil.example." + port, nil, http.StatusForbidden},
		{"curl by address", http.MethodPost, "/admin/reload", "127.0.0.1" + port, nil, http.StatusOK},
		{"curl by localhost", http.MethodPost, "/admin/reload", "localhost" + port, nil, http.StatusOK},
		{"curl by localhost.", http.MethodPost, "/admin/reload", "localhost." + port, nil, http.StatusOK},
		{"curl by IPv6 address", http.MethodPost, "/admin/reload", "[::1]" + port, nil, http.StatusOK},
		{"curl by the machine's name", http.MethodGet, "/admin/backup", "adlink-1" + port, nil, http.StatusOK},
		{"scraper by full name", http.MethodGet, "/metrics", "adlink-1.internal.example" + port, nil, http.StatusNotFound},
		{"curl by a name the operator gave", http.MethodPost, "/admin/reload", "ADLINK-1.internal.example." + port, nil, http.StatusOK},
		{"a name under the one the operator gave", http.MethodGet, "/admin/backup", "x.adlink-1.internal.example" + port, nil, http.StatusForbidden},
		{"a name the operator gave, from another site", http.MethodGet, "/admin/backup", "adlink-1.internal.example" + port,
			http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			beforeReloads, beforeCopies := reloads.Load(), copies.made.Load()
			req, err := http.NewRequest(c.method, base+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			for k, vs := range c.header {
				req.Header[k] = vs
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != c.status {
				t.Fatalf("%s %s (Host %s): %s %.200q, want %d", c.method, c.path, c.host, res.Status, body, c.status)
			}
			if c.status == http.StatusForbidden {
				if reloads.Load() != beforeReloads || copies.made.Load() != beforeCopies {
					t.Fatalf("refused, yet reloaded or copied the state file")
				}
				if res.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"code":"forbidden"`) {
					t.Fatalf("refusal %v %s, want a JSON error", res.Header, body)
				}
			}
		})
	}
}

// TestAdminWrongMethod: a method an admin route does not take is refused
// as every other admin error is, in JSON, with the methods it takes in
// Allow and a message naming the method and the path, and does nothing.
func TestAdminWrongMethod(t *testing.T) {
	var reloads atomic.Int64
	copies := &backupCopies{size: 1 << 10}
	base, _ := adminServer(t, AdminDeps{Backup: copies.backup(t), Reload: func(context.Context, bool) Reload {
		reloads.Add(1)
		return Reload{Result: "unchanged"}
	}})
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/admin/reload", "POST"},
		{http.MethodPut, "/admin/reload", "POST"},
		{http.MethodDelete, "/admin/backup", "GET, HEAD"},
		{http.MethodPost, "/admin/backup", "GET, HEAD"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
	} {
		req, err := http.NewRequest(c.method, base+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		err = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Content-Type") != "application/json" || err != nil {
			t.Errorf("%s %s: %s %q (%v), want 405 in JSON", c.method, c.path, res.Status, res.Header.Get("Content-Type"), err)
			continue
		}
		if got := res.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		if body.Error.Code != CodeMethodNotAllowed || !strings.Contains(body.Error.Message, c.method) || !strings.Contains(body.Error.Message, c.path) {
			t.Errorf("%s %s: error %+v, want %s naming the method and the path", c.method, c.path, body.Error, CodeMethodNotAllowed)
		}
	}
	if reloads.Load() != 0 || copies.made.Load() != 0 {
		t.Errorf("a refused method reloaded (%d) or copied the state file (%d)", reloads.Load(), copies.made.Load())
	}
}
