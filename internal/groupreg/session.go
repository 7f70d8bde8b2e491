package groupreg

import (
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
)

// Session is a member's session timer (Kafka's session timeout, the same
// rule for consumer and share groups): armed from the member's last
// heartbeat, it reads LastSeen again when it fires, so that a steady
// member's heartbeats cost no timer each. The member's group lock guards
// it; fired runs on the clock's goroutine and takes that lock itself.
type Session struct {
	LastSeen time.Time
	timer    clock.Timer
	seq      uint64
	fired    func(seq uint64)
}

// Arm starts the timer unless one runs: fired(seq) runs once timeout has
// passed since LastSeen.
func (s *Session) Arm(c clock.Timers, timeout time.Duration, fired func(seq uint64)) {
	if s.timer != nil {
		return // the running timer re-reads LastSeen when it fires
	}
	s.seq++
	s.fired = fired
	seq := s.seq
	s.timer = c.AfterFunc(max(s.LastSeen.Add(timeout).Sub(c.Now()), 0), func() { fired(seq) })
}

// Expired is the fired function's check, under the group lock, of the timer armed as
// seq: false when that timer was stopped or replaced since, or when a
// heartbeat moved LastSeen meanwhile (the timer is then armed again for
// what is left); true when the session ran out.
func (s *Session) Expired(seq uint64, c clock.Timers, timeout time.Duration) bool {
	if seq != s.seq {
		return false
	}
	s.timer = nil
	if s.LastSeen.Add(timeout).Sub(c.Now()) > 0 {
		s.Arm(c, timeout, s.fired)
		return false
	}
	return true
}

// Stop stops the timer; a fire already under way finds itself stale.
func (s *Session) Stop() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.seq++
}
