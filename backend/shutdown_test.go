package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-json"
)

// TestRunReadyMetricsAndShutdown checks /readyz and /metrics of the server
// as main wires it, and that a stop is logged and clean.
func TestRunReadyMetricsAndShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-data", t.TempDir(), "-demo"}, noEnv, io.Discard, pw)
		pw.Close()
	}()
	listening, shutting, refreshed := make(chan [2]string, 1), make(chan struct{}), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct {
				Msg, Addr, Result string
				AdminAddr         string `json:"admin_addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "catalog refresh":
				refreshed <- line.Result
			case "listening":
				listening <- [2]string{line.Addr, line.AdminAddr}
			case "shutting down":
				close(shutting)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	var addr, admin string
	select {
	case a := <-listening:
		addr, admin = a[0], a[1]
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}

	for url, want := range map[string]string{"http://" + addr + "/readyz": `"ready"`, "http://" + admin + "/metrics": "adlink_page_queue_depth 0"} {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("%s: %s, want %s in\n%.300s", url, res.Status, want, body)
		}
	}
	// Metrics are not on the public port.
	if res, err := http.Get("http://" + addr + "/metrics"); err != nil {
		t.Error(err)
	} else if res.Body.Close(); res.StatusCode != http.StatusNotFound {
		t.Errorf("public /metrics: %s, want 404", res.Status)
	}
	// SIGHUP refreshes the catalog; the demo catalog has not changed.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if r := <-refreshed; r != "unchanged" {
		t.Errorf("SIGHUP refresh: %s, want unchanged", r)
	}

	cancel()
	<-shutting
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// A request of the admin listener that does not end, such as a backup to
// a client that stopped reading, spends none of the public server's
// grace: its request still running when the stop begins finishes, and
// the stop is clean.
func TestShutdownStopsBothListenersAtOnce(t *testing.T) {
	stuck, release := make(chan struct{}), make(chan struct{})
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(stuck)
		<-release
	}))
	defer admin.Close()
	defer close(release) // before Close, which waits for the request
	stopping, inFlight := make(chan struct{}), make(chan struct{})
	public := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-stopping // a click that ends only once the stop has begun
		io.WriteString(w, "clicked")
	}))
	public.Config.RegisterOnShutdown(func() { close(stopping) })
	public.Start()
	defer public.Close()
	go http.Get(admin.URL + "/admin/backup")
	<-stuck
	clicked := make(chan string, 1)
	go func() {
		res, err := http.Get(public.URL + "/v1/redirect")
		if err != nil {
			clicked <- err.Error()
			return
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		clicked <- string(body)
	}()
	<-inFlight
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx, public.Config, admin.Config); err != nil {
		t.Errorf("shutdown with a stuck admin request: %v, want the public server stopped cleanly", err)
	}
	if got := <-clicked; got != "clicked" {
		t.Errorf("the click in flight got %q, want its answer", got)
	}
}
