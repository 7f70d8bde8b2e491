package registry

import "time"

// Clock is the time seam: tests drive heartbeats and the boot watch with a
// fake clock shared with the dev broker's expiry.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
