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
