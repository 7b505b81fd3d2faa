//go:build !unix

package pages

import "time"

// processCPU is the CPU time the process has used, or 0 where unknown.
func processCPU() time.Duration { return 0 }
