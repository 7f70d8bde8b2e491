package idlesweep

import (
	"maps"
	"time"
)

// Every spaces the sweeps of a map: a sweep walks the whole map, so it
// runs when an entry is added, at most this often, rather than on every
// lookup.
const Every = time.Minute

// Sweep is when a map may next be swept.
type Sweep struct{ next time.Time }

// Run deletes the entries of m that gone says may go, when the sweep is
// due at now; the caller holds m's lock.
func Run[K comparable, V any](s *Sweep, now time.Time, m map[K]V, gone func(K, V) bool) {
	if now.Before(s.next) {
		return
	}
	s.next = now.Add(Every)
	maps.DeleteFunc(m, gone)
}

// IsDone reports whether ch is closed.
func IsDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
