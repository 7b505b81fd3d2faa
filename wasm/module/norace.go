//go:build !race

package module

const raceEnabled = false
