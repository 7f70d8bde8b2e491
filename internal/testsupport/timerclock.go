package testsupport

import (
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
)

// TimerClock is a clock.Timers a test advances by hand: timers fire only
// inside Advance, on the caller's goroutine, in deadline order.
type TimerClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *TimerClock
	at      time.Time
	f       func()
	stopped bool
}

// NewTimerClock is a TimerClock reading now.
func NewTimerClock(now time.Time) *TimerClock { return &TimerClock{now: now} }

func (c *TimerClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *TimerClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, firing due timers in deadline order
// (each at its own instant), including timers they arm.
func (c *TimerClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *manualTimer
		idx := -1
		for i, t := range c.timers {
			if t.stopped || t.at.After(end) {
				continue
			}
			if next == nil || t.at.Before(next.at) {
				next, idx = t, i
			}
		}
		if next == nil {
			c.now = end
			live := c.timers[:0]
			for _, t := range c.timers {
				if !t.stopped {
					live = append(live, t)
				}
			}
			c.timers = live
			c.mu.Unlock()
			return
		}
		c.timers = append(c.timers[:idx], c.timers[idx+1:]...)
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}
