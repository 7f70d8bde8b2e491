// Package contract holds the contract test suite of queen-api.md:
// its tests build cmd/queen-dev once, run it as a real process on a loopback
// port and drive the real queen.Client over HTTP, route by route, including
// every error case, a SIGKILL durability test and the client-side
// benchmarks. It has no non-test code; the client and the broker under test
// live in package queen and queen/dev.
package contract
