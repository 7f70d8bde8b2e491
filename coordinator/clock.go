package coordinator

import "time"

// Clock is the coordinator's only source of time, so that tests drive join
// delays, rebalance timeouts and session expiry without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f once, on its own goroutine or the caller's, after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not run; it reports whether it did.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
