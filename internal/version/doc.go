// Package version is the build's version, one string for --version, the
// boot line, the registry row and /metrics' build info. The Makefile sets
// it from `git describe` (-ldflags "-X …/internal/version.version=…"); a
// plain `go build` or `go install` falls back to the module version the
// toolchain recorded, else "dev".
//
// It owns the string and its fallbacks, nothing else: where the version
// is shown (flags, logs, the registry row, metrics) is its callers'.
package version
