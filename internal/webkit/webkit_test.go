package webkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProcessesEndWithTheTest: a test process killed before its cleanups
// run (a timeout, a signal) leaves neither its Xvfb nor its driver
// running.
func TestProcessesEndWithTheTest(t *testing.T) {
	if os.Getenv("WEBKIT_TEST_HELPER") != "" {
		display := startXvfb(t)
		startDriver(t, display)
		fmt.Println("ready")
		select {} // killed by the test that started it
	}
	Need(t)
	helper := exec.Command(os.Args[0], "-test.run=^TestProcessesEndWithTheTest$")
	helper.Env = append(os.Environ(), "WEBKIT_TEST_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the helper ended before it was ready: %v", err)
		}
		if strings.TrimSpace(line) == "ready" {
			break
		}
	}
	kids := children(t, helper.Process.Pid)
	if len(kids) != 2 {
		t.Fatalf("the helper runs %v, want Xvfb and the driver", kids)
	}
	helper.Process.Kill()
	helper.Wait()
	for pid, name := range kids {
		deadline := time.Now().Add(10 * time.Second)
		for running(pid) {
			if time.Now().After(deadline) {
				syscallKill(pid)
				t.Errorf("%s (pid %d) runs on after its test's process was killed", name, pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// children are the processes whose parent is pid, by pid, with their
// names.
func children(t *testing.T, pid int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, ppid, _, err := stat(n)
		if err == nil && ppid == pid {
			out[n] = name
		}
	}
	return out
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	_, _, state, err := stat(pid)
	return err == nil && state != "Z"
}

// stat reads a process's name, parent and state from /proc.
func stat(pid int) (name string, ppid int, state string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, "", err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, "", errors.New("no name in " + s)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", 0, "", errors.New("short " + s)
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, f[0], err
}

func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
