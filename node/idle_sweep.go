package node

import (
	"time"

	"github.com/queen-mq/queen-kafka/internal/idlesweep"
)

// The identity answers' sweep (sasl_identity.go) is internal/idlesweep's,
// shared with the catalogues.
const idleSweepEvery = idlesweep.Every

type idleSweep = idlesweep.Sweep

func sweepIdle[K comparable, V any](s *idleSweep, now time.Time, m map[K]V, gone func(K, V) bool) {
	idlesweep.Run(s, now, m, gone)
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
