package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

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
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-data", t.TempDir(), "-demo"}, noEnv, io.Discard, pw)
		pw.Close()
	}()
	listening, shutting := make(chan string, 1), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "listening":
				listening <- line.Addr
			case "shutting down":
				close(shutting)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	var addr string
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}

	for path, want := range map[string]string{"/readyz": `"ready"`, "/metrics": "adlink_page_queue_depth 0"} {
		res, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("%s: %s, want %s in\n%.300s", path, res.Status, want, body)
		}
	}

	cancel()
	<-shutting
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
