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

// The process's clock moves forward while two goroutines work.
func TestProcessAdvances(t *testing.T) {
	t0 := Process()
	done := make(chan int)
	for range 2 {
		go func() {
			x := 0
			for i := range 10_000_000 {
				x ^= i
			}
			done <- x
		}()
	}
	a := <-done
	x := a ^ <-done
	if d := Process() - t0; d <= 0 {
		t.Fatalf("process CPU time moved by %v over two busy loops (%d)", d, x)
	}
}
