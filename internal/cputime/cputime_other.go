//go:build !linux

// Package cputime times benchmarks by the CPU time of the calling thread,
// so other processes on a shared machine do not skew their ratios.
package cputime

import "time"

var start = time.Now()

// Thread is wall time where the thread's CPU time is not at hand.
func Thread() time.Duration { return time.Since(start) }

// Process is wall time where the process's CPU time is not at hand.
func Process() time.Duration { return time.Since(start) }
