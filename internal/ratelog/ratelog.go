package ratelog

import (
	"log/slog"
	"sync"
	"time"
)

// Every is a warning that may recur as fast as peers can cause it (a
// refused connection, a failing accept): the first occurrence is logged at
// once, and those within the next Window are counted instead and reported
// by one line when that window closes (with the attributes of the last of
// them, and suppressed=<count>). The log then says how often it happens
// without a peer being able to fill the disk.
type Every struct {
	// Window is the least time between two lines.
	Window time.Duration

	mu         sync.Mutex
	last       time.Time // when the last line went out
	suppressed int
	flush      *time.Timer // reports the suppressed count at the window's end
	pending    func()      // that report's line
}

// Warn logs msg with args, or counts it when a line went out less than
// Window ago.
func (l *Every) Warn(log *slog.Logger, now time.Time, msg string, args ...any) {
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < l.Window {
		l.suppressed++
		n := l.suppressed
		l.pending = func() { log.Warn(msg, append(args, "suppressed", n, "window", l.Window.String())...) }
		if l.flush == nil {
			l.flush = time.AfterFunc(l.Window-now.Sub(l.last), l.report)
		}
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed, l.pending = now, 0, nil
	if l.flush != nil {
		l.flush.Stop()
		l.flush = nil
	}
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n, "window", l.Window.String())
	}
	log.Warn(msg, args...)
}

// report writes the line of the occurrences counted in the window just
// closed.
func (l *Every) report() {
	l.mu.Lock()
	line := l.pending
	l.suppressed, l.pending, l.flush = 0, nil, nil
	l.mu.Unlock()
	if line != nil {
		line()
	}
}
