package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadTime is the CPU time the calling thread has used: the wazero
// benchmarks lock their goroutine to a thread and time with it, so other
// processes on a shared machine do not skew the ratios.
func threadTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
