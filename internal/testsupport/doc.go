// Package testsupport is the test harness the packages share: a locked log
// buffer, free loopback ports, a runner for child processes (start, wait
// until ready, signal, kill, restart, dump the log of a failed test), the
// queen-dev process, go build, a process's CPU time, a fake clock, an httptest server
// that closes what it serves when the test ends, and the dev broker's push
// and fetch benchmarks (run in process by queen/dev, against the binary by
// cmd/queen-dev).
//
// It is for _test.go files only (by convention; nothing enforces it) and it
// owns no behaviour of the product: a helper here keeps the semantics of the
// copies it replaced (timeouts, log dumps, clean-up order).
//
// Import rule, and why there are two packages: testsupport imports the
// standard library only, so the in-package tests of every package — queen
// and queen/dev included — can use it without an import cycle. The
// in-process dev broker lives apart in testsupport/devbroker because it
// imports queen/dev (and queen): tests of any package other than those two
// use it; queen/dev's own tests build their broker themselves (they reach
// into its internals, so they cannot be an external _test package) and
// serve it with Serve.
//
// It must not import a package of this module, and it holds no Kafka or
// Queen knowledge beyond queen-dev's environment variables, its /health and
// the push and fetch bodies its benchmarks send.
package testsupport
