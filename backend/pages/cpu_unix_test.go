//go:build unix

package pages

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, or 0 where unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
