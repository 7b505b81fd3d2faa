package app

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadSwappedForAPipe: a path that is a regular file when checked and
// a named pipe when opened (replaced between the two) is refused all the
// same, never waited on: the check is of what was opened.
func TestReadSwappedForAPipe(t *testing.T) {
	dir := t.TempDir()
	reg, pipe, p := filepath.Join(dir, "reg"), filepath.Join(dir, "pipe"), filepath.Join(dir, "partners.json")
	writeFile(t, reg, []byte(`{"partners":[]}`))
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		tmp := filepath.Join(dir, "tmp")
		for {
			for _, src := range []string{reg, pipe} {
				select {
				case <-stop:
					return
				default:
				}
				if err := os.Link(src, tmp); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(tmp, p); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	var read, refused int
	go func() {
		defer close(done)
		// 5000 reads, and more until both have been seen: on a loaded
		// machine the swaps may not start before many reads are done.
		start := time.Now()
		for i := 0; i < 5000 || (read == 0 || refused == 0) && time.Since(start) < 30*time.Second; i++ {
			if _, err := readBounded(p, 1<<10); err == nil {
				read++
			} else {
				refused++
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Error("a read waits on a named pipe that replaced a regular file after its check")
		// A writer lets the reads held by the pipe go on.
		w, err := os.OpenFile(pipe, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		<-done
	}
	close(stop)
	<-swapped
	if read == 0 || refused == 0 {
		t.Errorf("%d reads, %d refused: the path was not swapped under the reads", read, refused)
	}
}

// TestNewRefusesWhatAReloadRefuses: the checks that fail a reload stop a
// start-up too (the README's upgrade note): an advertisers file without
// its list, and a partners file that is a named pipe, as a shell's
// <(...) gives.
func TestNewRefusesWhatAReloadRefuses(t *testing.T) {
	dir := t.TempDir()
	ads := filepath.Join(dir, "advertisers.json")
	writeFile(t, ads, []byte("{}"))
	cfg := testConfig(t)
	cfg.AdvertisersFile = ads
	want := `advertisers file ` + ads + `: no "advertisers" list; want {"advertisers":[...]}`
	if _, err := New(cfg, Options{}); err == nil || err.Error() != want {
		t.Errorf("New with {} advertisers = %v, want %q", err, want)
	}
	pipe := filepath.Join(dir, "partners.json")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = testConfig(t)
	cfg.PartnersFile = pipe
	want = "partners file " + pipe + ": is no regular file but a named pipe"
	if _, err := New(cfg, Options{}); err == nil || err.Error() != want {
		t.Errorf("New with a named pipe = %v, want %q", err, want)
	}
}
