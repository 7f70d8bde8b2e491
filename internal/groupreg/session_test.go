package groupreg

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// countingClock counts the timers armed and not yet fired or stopped; with
// late set, a Stop loses its race with the fire (as time.Timer's does when
// the function has started and waits for the group's lock).
type countingClock struct {
	*testsupport.TimerClock
	mu   sync.Mutex
	live int // armed, neither fired nor stopped
	late bool
}

type countedTimer struct {
	c    *countingClock
	t    clock.Timer
	done bool
}

func (c *countingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	ct := &countedTimer{c: c}
	c.mu.Lock()
	c.live++
	c.mu.Unlock()
	ct.t = c.TimerClock.AfterFunc(d, func() { ct.end(); f() })
	return ct
}

func (t *countedTimer) end() {
	t.c.mu.Lock()
	if !t.done {
		t.done = true
		t.c.live--
	}
	t.c.mu.Unlock()
}

func (t *countedTimer) Stop() bool {
	t.end()
	if t.c.late {
		return false
	}
	return t.t.Stop()
}

// TestPropertySession drives heartbeats, stops, re-arms and time against a
// member's session and checks after every step: at most one timer is
// armed; the session is declared expired only at the instant its timeout
// has passed since the last heartbeat, once, and never after a stop; a
// session still armed has not outlived its timeout unnoticed.
func TestPropertySession(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 932))
			c := &countingClock{TimerClock: testsupport.NewTimerClock(time.Unix(1_787_824_800, 0))}
			ms := 1 + rng.IntN(50)
			timeout := time.Duration(ms) * time.Millisecond
			s := &Session{}
			armed, expired := false, false
			var fired func(uint64)
			member := func(own *Session) func(uint64) {
				return func(seq uint64) {
					if own != s || !s.Expired(seq, c, timeout) {
						return // a member no longer in the group, or a stale timer
					}
					if !armed || expired {
						t.Fatalf("expired while stopped or twice")
					}
					if got := c.Now().Sub(s.LastSeen); got != timeout {
						t.Fatalf("expired %v after the last heartbeat, timeout %v", got, timeout)
					}
					expired, armed = true, false
				}
			}
			fired = member(s)
			for step := range 300 {
				switch r := rng.IntN(10); {
				case r < 4: // a heartbeat
					if !expired {
						s.LastSeen = c.Now()
						s.Arm(c, timeout, fired)
						armed = true
					}
				case r < 5: // the member leaves, or its group is let go
					c.late = rng.IntN(2) == 0
					s.Stop()
					c.late = false
					armed = false
				case r < 6: // the member removed, a new one in its place
					c.late = rng.IntN(2) == 0
					s.Stop()
					c.late = false
					s, armed, expired = &Session{}, false, false
					fired = member(s)
				default:
					c.Advance(time.Duration(rng.IntN(ms*20)) * time.Millisecond / 10) // up to two timeouts
				}
				if c.live > 1 {
					t.Fatalf("step %d: %d timers armed", step, c.live)
				}
				if armed && !expired && c.Now().Sub(s.LastSeen) > timeout {
					t.Fatalf("step %d: session %v past its last heartbeat, timeout %v, not expired", step, c.Now().Sub(s.LastSeen), timeout)
				}
			}
		})
	}
}
