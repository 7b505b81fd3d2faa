package cputime

import (
	"runtime"
	"testing"
)

// The clock moves forward while the thread works.
func TestThreadAdvances(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := Thread()
	x := 0
	for i := range 10_000_000 {
		x ^= i
	}
	if d := Thread() - t0; d <= 0 {
		t.Fatalf("thread CPU time moved by %v over a busy loop (%d)", d, x)
	}
}
