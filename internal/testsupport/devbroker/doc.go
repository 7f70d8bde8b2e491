// Package devbroker is the in-process development broker (queen/dev) for
// tests: built for one test, served over HTTP on loopback, with a Queen
// client on it, and closed when the test ends.
//
// It imports queen/dev, so queen/dev's own tests cannot use it (they build
// their broker themselves and serve it with testsupport.Serve); every other
// package's tests can. See the testsupport package documentation.
//
// It owns no behaviour of the broker or the client: it only wires
// queen/dev and queen together for a test, and must not be imported by
// non-test code.
package devbroker
