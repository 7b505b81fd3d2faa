package main

import (
	"runtime"
	"runtime/debug"
)

// version is the release, set by "make build" with
// -ldflags "-X main.version=...".
var version = "dev"

// versionLine is what -version prints: the release, the commit the
// binary was built from (with "+modified" for uncommitted changes) and
// the Go toolchain.
func versionLine() string {
	commit, modified := "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision":
				commit = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				modified = "+modified"
			}
		}
	}
	return "adlink " + version + " commit " + commit + modified + " " + runtime.Version()
}
