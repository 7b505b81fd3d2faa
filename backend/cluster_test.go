package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adlink/adlink/internal/testpg"
)

// TestClusterScript runs scripts/cluster as make cluster does, on ports of
// its own: through the balancer, a search is answered alike by every
// replica, a page is queued and then analysed, and a click lands and is in
// Postgres; SIGTERM (what Ctrl-C does to the script) stops every process
// and removes the temporary directory.
func TestClusterScript(t *testing.T) {
	var missing []string
	if testpg.Bin() == "" {
		missing = append(missing, "postgresql")
	}
	for _, cmd := range []string{"redis-server", "haproxy"} {
		if _, err := exec.LookPath(cmd); err != nil {
			if _, err := os.Stat("/usr/sbin/" + cmd); err != nil {
				missing = append(missing, cmd)
			}
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("make cluster needs %s (apt-get install %s)", strings.Join(missing, ", "), strings.Join(missing, " "))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin := buildServer(t)
	lb := "127.0.0.1:" + freePort(t)
	script, err := filepath.Abs("../scripts/cluster")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script)
	// A range of ports of its own, away from make run's and make cluster's,
	// and below Linux's ephemeral ports (32768 on): another test's
	// outgoing connection may take one of those between the script's
	// probe and its server's bind.
	first := 20000 + os.Getpid()%12000
	cmd.Env = append(os.Environ(), "ADDR="+lb, "ADLINK_BIN="+bin, fmt.Sprintf("CLUSTER_PORT=%d", first), "TMPDIR=/tmp")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	stderr := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	said := map[string]string{}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "ready" {
				close(ready)
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				said[k] = strings.TrimSpace(v)
			}
		}
		io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	}()
	select {
	case <-ready:
	case err := <-exited:
		stopped = true
		t.Fatalf("the script exited before the cluster was ready: %v\n%s", err, stderr())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the cluster was not ready within 2 minutes\n%s", stderr())
	}
	base := "http://" + lb
	state, pgURL, admins := said["state and logs"], said["postgres"], strings.Fields(said["admin listeners"])
	if !strings.HasPrefix(state, "/tmp/adlink-cluster.") || pgURL == "" || len(admins) < 3 {
		t.Fatalf("the script said %q", said)
	}

	// One search through the balancer to each replica in turn: the same
	// catalog and the same answer, click URLs aside.
	q := "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo"
	signed := regexp.MustCompile(`"ad":"(?:[^"\\]|\\.)*"`)
	var want, ad string
	for i := range 3 {
		status, h, body := fetch(t, base+q)
		answer := h.Get("X-Adlink-Catalog") + " " + signed.ReplaceAllString(body, `"ad":""`)
		if status != http.StatusOK || !strings.Contains(body, "handy-bestkauf.de") {
			t.Fatalf("search %d through the balancer: %d %.300s", i, status, body)
		}
		if i == 0 {
			want = answer
			var r struct{ Link []struct{ Ad string } }
			if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Link) == 0 {
				t.Fatalf("search: %v %.300s", err, body)
			}
			ad = r.Link[0].Ad
		} else if answer != want {
			t.Errorf("search %d answered\n%.300s\nthe first\n%.300s", i, answer, want)
		}
	}

	// A reload on one replica's admin listener.
	res, err := http.Post("http://"+admins[0]+"/admin/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result":"unchanged"`) {
		t.Errorf("POST /admin/reload: %d %s", res.StatusCode, body)
	}

	// A page of the demo, queued, then analysed (each replica queues it
	// in its own store until the replicas share one).
	page := base + "/v2/page/link?api_key=demo&site_id=demo&url=" + url.QueryEscape(base+"/demo/article.html")
	status, _, body2 := fetch(t, page)
	if status != http.StatusAccepted || !strings.Contains(body2, `"status":"pending"`) {
		t.Fatalf("first view of the page: %d %.300s", status, body2)
	}
	analysed := false
	for range 100 {
		var pending struct {
			RetryAfterMS int `json:"retry_after_ms"`
		}
		json.Unmarshal([]byte(body2), &pending)
		// The wait the server asks for: a client's, not the test's.
		time.Sleep(time.Duration(max(pending.RetryAfterMS, 50)) * time.Millisecond)
		if status, _, body2 = fetch(t, page); status == http.StatusOK {
			analysed = strings.Contains(body2, `"link":[{`)
			break
		}
	}
	if !analysed {
		t.Errorf("the page was not analysed: %d %.300s", status, body2)
	}

	// The click lands on the advertiser and is in Postgres, from the
	// address the balancer saw, 127.0.0.2, which the replicas do not
	// trust: neither the X-Forwarded-For nor the country the client wrote
	// itself passes the balancer as the balancer's word.
	if !strings.HasPrefix(ad, base+"/v1/redirect?") {
		t.Fatalf("click URL %q, want one through the balancer", ad)
	}
	req, _ := http.NewRequest(http.MethodGet, ad, nil)
	req.Header = spoofedClient()
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	req.Header.Set("X-Forwarded-For", "192.0.2.60")
	res, err = fromAddress("127.0.0.2").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), "https://handy-bestkauf.de/") {
		t.Errorf("click: %s to %q", res.Status, res.Header.Get("Location"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var adID, ip, country string
	err = conn.QueryRow(ctx, "SELECT count(*), min(ad_id), min(ip), min(country) FROM clicks").Scan(&n, &adID, &ip, &country)
	conn.Close(ctx)
	if err != nil || n != 1 || adID != "handy-bestkauf.de" {
		t.Errorf("clicks in Postgres: %d of %q, %v; want the one click", n, adID, err)
	}
	if ip != "127.0.0.2" || country != "" {
		t.Errorf("the click recorded from %q in %q; want the balancer's client 127.0.0.2, in no country", ip, country)
	}
	if id := res.Header.Get("X-Request-Id"); id == "" || id == "spoofed-request-id" {
		t.Errorf("the click's request id %q; want one the server gave", id)
	}

	// SIGTERM, as Ctrl-C: everything stops and the directory goes.
	stopped = true
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the script exited with %v\n%s", err, stderr())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the script did not stop within 90 s\n%s", stderr())
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", state, err)
	}
	if c, err := net.Dial("tcp", lb); err == nil {
		c.Close()
		t.Errorf("the balancer still listens on %s", lb)
	}
}

// fetch GETs u and returns the status, headers and body.
func fetch(t *testing.T, u string) (int, http.Header, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
