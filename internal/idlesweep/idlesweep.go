package node

import "time"

// idleSweepEvery spaces the sweeps of a map filed by identity or
// credential: a sweep walks the whole map, so it runs when an entry is
// added, at most this often, rather than on every lookup.
const idleSweepEvery = time.Minute

// idleSweep is when a map may next be swept.
type idleSweep struct{ next time.Time }

// sweepIdle deletes the entries of m that gone says may go, when the
// sweep is due at now; the caller holds m's lock.
func sweepIdle[K comparable, V any](s *idleSweep, now time.Time, m map[K]V, gone func(K, V) bool) {
	if now.Before(s.next) {
		return
	}
	s.next = now.Add(idleSweepEvery)
	for k, v := range m {
		if gone(k, v) {
			delete(m, k)
		}
	}
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
