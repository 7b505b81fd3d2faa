//go:build !linux

package main

import "time"

var start = time.Now()

// threadTime is wall time where the thread's CPU time is not at hand.
func threadTime() time.Duration { return time.Since(start) }
