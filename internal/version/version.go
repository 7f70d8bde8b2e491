// Package version is the build's version, one string for --version, the
// boot line, the registry row and /metrics' build info. The Makefile sets
// it from `git describe` (-ldflags "-X …/internal/version.version=…"); a
// plain `go build` or `go install` falls back to the module version the
// toolchain recorded, else "dev".
package version

import "runtime/debug"

// version is set by the linker; empty in a plain build.
var version string

// String is the build's version.
func String() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
