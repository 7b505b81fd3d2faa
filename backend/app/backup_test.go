package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adlink/adlink/backend/clicks"
	"github.com/adlink/adlink/backend/store"
	bolt "go.etcd.io/bbolt"
)

// TestBackupRestores: GET /admin/backup on the admin listener, taken while
// the server goes on taking clicks, is a whole state file, made beside the
// state file and gone from the data directory once sent: bbolt's check
// passes, it holds the click made before it, and a server started on it
// in place of the lost data directory knows that click's decision, so the
// same ad URL clicked again is a repeat, not a second bill. The public
// listener has no such route.
func TestBackupRestores(t *testing.T) {
	cfg := testConfig(t)
	cfg.ClickKeys = []clicks.Key{{ID: "kept", Secret: bytes.Repeat([]byte{9}, 32)}}
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	link := func(q string) string {
		status, body := get(t, a.Handler, "/v2/search/link?q="+q+"&loc=de&api_key=demo&site_id=demo")
		var resp struct{ Link []struct{ Ad string } }
		if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil || len(resp.Link) == 0 {
			t.Fatalf("search %s: %d %v %.200s", q, status, err, body)
		}
		ad := resp.Link[0].Ad
		return ad[strings.Index(ad, "/v1/redirect?"):]
	}
	billed := link("lg+handy")
	if got := click(a.Handler, billed); got != http.StatusFound {
		t.Fatalf("click: %d", got)
	}

	// Clicks keep coming while the copy is written.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		other := link("iphone")
		for {
			select {
			case <-stop:
				return
			default:
				click(a.Handler, other)
			}
		}
	})
	admin := httptest.NewServer(a.Admin)
	defer admin.Close()
	res, err := http.Get(admin.URL + "/admin/backup")
	if err != nil {
		t.Fatal(err)
	}
	copyBytes, err := io.ReadAll(res.Body)
	res.Body.Close()
	close(stop)
	wg.Wait()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("backup: %d %v", res.StatusCode, err)
	}
	if got := res.Header.Get("Content-Length"); got != strconv.Itoa(len(copyBytes)) || res.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("backup of %d bytes sent as %s, Content-Length %s", len(copyBytes), res.Header.Get("Content-Type"), got)
	}
	if status, _ := get(t, a.Handler, "/admin/backup"); status != http.StatusNotFound {
		t.Errorf("the public listener answers /admin/backup with %d, want 404", status)
	}
	// The copy was made beside the state file and is gone from there.
	if left, _ := filepath.Glob(filepath.Join(cfg.DataDir, store.FileName+".backup-*")); len(left) > 0 {
		t.Errorf("the backup left %v in the data directory", left)
	}

	restored := t.TempDir()
	if err := os.WriteFile(filepath.Join(restored, store.FileName), copyBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(restored)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Errorf("the copy fails bbolt's check: %v", err)
	}
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	var kept []clicks.Click
	log.Scan(context.Background(), time.Now().Add(-time.Hour), time.Now().Add(time.Hour), func(c clicks.Click) error {
		if c.Billable {
			kept = append(kept, c)
		}
		return nil
	})
	db.Close()
	if len(kept) == 0 {
		t.Fatal("the copy holds no billable click")
	}

	cfg.DataDir = restored
	b, err := New(cfg, Options{})
	if err != nil {
		t.Fatalf("a server on the copy: %v", err)
	}
	defer b.Close()
	if got := click(b.Handler, billed); got != http.StatusFound {
		t.Fatalf("click on the restored server: %d", got)
	}
	var again []clicks.Click
	b.Clicks.Scan(context.Background(), time.Now().Add(-time.Hour), time.Now().Add(time.Hour), func(c clicks.Click) error {
		again = append(again, c)
		return nil
	})
	if len(again) == 0 {
		t.Fatal("the restored server logged no click")
	}
	if last := again[len(again)-1]; last.Billable || last.Reason != clicks.ReasonRepeat {
		t.Errorf("the link billed before the backup, clicked on the restored server: %+v, want a repeat", last)
	}
}

// TestBackupStalledClient: a backup is copied first and sent after, so a
// client that stops reading in the middle of its download holds no
// transaction of the state file: clicks commit meanwhile, and so does a
// write that grows the file (which a read transaction held open would
// block). The copy the client then reads is whole, as of its moment: it
// has the clicks before it, not those made while it was sent.
func TestBackupStalledClient(t *testing.T) {
	a, err := New(testConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Larger than loopback's socket buffers: the handler is still sending
	// while the client reads nothing.
	grow := func(name string, mb int) {
		t.Helper()
		if err := a.db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			for i := range mb {
				if err := b.Put([]byte{byte(i)}, make([]byte, 1<<20)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	grow("ballast", 12)
	status, body := get(t, a.Handler, "/v2/search/link?q=lg+handy&loc=de&api_key=demo&site_id=demo")
	var resp struct{ Link []struct{ Ad string } }
	if err := json.Unmarshal([]byte(body), &resp); status != http.StatusOK || err != nil || len(resp.Link) == 0 {
		t.Fatalf("search: %d %v %.200s", status, err, body)
	}
	ad := resp.Link[0].Ad
	ad = ad[strings.Index(ad, "/v1/redirect?"):]
	count := func(log interface {
		Scan(context.Context, time.Time, time.Time, func(clicks.Click) error) error
	}) int {
		n := 0
		log.Scan(context.Background(), time.Time{}, time.Time{}, func(clicks.Click) error { n++; return nil })
		return n
	}
	if got := click(a.Handler, ad); got != http.StatusFound {
		t.Fatalf("click: %d", got)
	}

	admin := httptest.NewServer(a.Admin)
	defer admin.Close()
	conn, err := net.Dial("tcp", admin.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /admin/backup HTTP/1.1\r\nHost: admin\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("backup: %v %v", res, err)
	}
	// The client reads nothing more. Clicks commit, and the file grows.
	const during = 5
	for range during {
		if got := click(a.Handler, ad); got != http.StatusFound {
			t.Fatalf("click while a backup stalls: %d", got)
		}
	}
	grow("ballast-2", 4)
	if n := count(a.Clicks); n != 1+during {
		t.Fatalf("%d clicks in the log while a backup stalls, want %d", n, 1+during)
	}
	if status, _ := get(t, a.Admin, "http://127.0.0.1/admin/backup"); status != http.StatusServiceUnavailable {
		t.Errorf("a second backup while the first is sent: %d, want 503", status)
	}

	copyBytes, err := io.ReadAll(res.Body)
	if err != nil || strconv.Itoa(len(copyBytes)) != res.Header.Get("Content-Length") {
		t.Fatalf("backup: %d bytes (%v), Content-Length %s", len(copyBytes), err, res.Header.Get("Content-Length"))
	}
	restored := t.TempDir()
	if err := os.WriteFile(filepath.Join(restored, store.FileName), copyBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(restored)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log, err := clicks.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(log); n != 1 {
		t.Errorf("the copy holds %d clicks, want the 1 made before it", n)
	}
}
