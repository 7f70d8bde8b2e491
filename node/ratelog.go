package node

import (
	"log/slog"
	"sync"
	"time"
)

// logEvery is a warning that may recur as fast as peers can cause it (a
// refused connection, a failing accept): the first occurrence is logged at
// once, later ones at most once per every, each line carrying how many
// occurrences it stands for since the last line. The log then says how
// often it happens without a peer being able to fill the disk.
type logEvery struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// warn logs msg with args unless a line went out less than every ago, in
// which case the occurrence is counted into the next line.
func (l *logEvery) warn(log *slog.Logger, now time.Time, msg string, args ...any) {
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n, "suppressed_window", l.every.String())
	}
	log.Warn(msg, args...)
}
