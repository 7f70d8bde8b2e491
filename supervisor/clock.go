package supervisor

import "time"

// Clock is the supervisor's only source of time: the restart backoff, the
// hour after which it resets, the stop grace and the log budget window all
// read it, so tests advance a fake one instead of sleeping.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
