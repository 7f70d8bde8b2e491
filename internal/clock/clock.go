package clock

import "time"

// Clock is the only source of time of a package that takes one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Wall is the wall clock.
type Wall struct{}

// Now is time.Now.
func (Wall) Now() time.Time { return time.Now() }

// After is time.After.
func (Wall) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Timers is a Clock that arms callbacks rather than channels, for the
// packages that keep one deadline per member (coordinator's join delays,
// rebalance timeouts and session expiry; consumergroup's session and
// rebalance timeouts): production passes Wall, tests testsupport.TimerClock.
type Timers interface {
	Now() time.Time
	// AfterFunc runs f once, on its own goroutine or the caller's, after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not run; it reports whether it did.
	Stop() bool
}

// AfterFunc is time.AfterFunc.
func (Wall) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
