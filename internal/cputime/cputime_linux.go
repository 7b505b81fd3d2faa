// Package cputime times benchmarks by the CPU time of the calling thread,
// so other processes on a shared machine do not skew their ratios.
package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Thread is the CPU time the calling thread has used; a caller locks its
// goroutine to the thread (runtime.LockOSThread) around what it times.
func Thread() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}

// Process is the CPU time every thread of the process has used: the work
// of a step that runs on several goroutines, whatever else the machine
// runs.
func Process() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
