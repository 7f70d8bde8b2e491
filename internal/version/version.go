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
