package consumergroup

import "time"

// Clock is the package's only source of time, so that tests drive session
// and rebalance timeouts without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f once, on its own goroutine, after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
