//go:build race

package parity

// raceEnabled: the race detector slows the native half of the parity
// tests tenfold, so the largest catalog runs only without it.
const raceEnabled = true
