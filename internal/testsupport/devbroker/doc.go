// Package devbroker is the in-process development broker (queen/dev) for
// tests: built for one test, served over HTTP on loopback, with a Queen
// client on it, and closed when the test ends.
//
// It imports queen/dev, so queen/dev's own tests cannot use it (they build
// their broker themselves and serve it with testsupport.Serve); every other
// package's tests can. See the testsupport package documentation.
//
// Beside it stand what the packages' tests share about that broker: a
// Recorder middleware (calls counted per route, bodies kept, a fault that
// may answer), a fault that holds queue listings, and a queue made
// natively, as a Queen producer makes it.
//
// It owns no behaviour of the broker or the client: it only wires
// queen/dev and queen together for a test, and must not be imported by
// non-test code.
package devbroker
