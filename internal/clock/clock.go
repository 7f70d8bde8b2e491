// Package clock is the Now/After time seam shared by the packages that wait
// (registry's heartbeats and boot watch, supervisor's restart backoff, stop
// grace and log window): production passes Wall, tests a fake they advance
// (testsupport.FakeClock), so no test sleeps through a real timeout.
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
