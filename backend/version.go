package main

import (
	"runtime"
	"runtime/debug"
)

// version is the release, set by "make build" with
// -ldflags "-X main.version=...".
var version = "dev"

// commit is the commit the binary was built from, set by "make build"
// (-X main.commit=...) for builds where Go's build info records none.
var commit = "unknown"

// versionLine is what -version prints: the release, the commit the
// binary was built from (with "+modified" for uncommitted changes) and
// the Go toolchain.
func versionLine() string {
	rev, modified := commit, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "unknown":
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				modified = "+modified"
			}
		}
	}
	return "adlink " + version + " commit " + rev + modified + " " + runtime.Version()
}
