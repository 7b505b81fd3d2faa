//go:build race

package module

// raceEnabled says this binary was built with -race, where wazero runs the
// matcher's start-up (Preinit) ten times slower.
const raceEnabled = true
