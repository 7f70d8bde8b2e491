package node

import "time"

// Observer hears what the node does, for /metrics (package metrics
// implements it). Its methods are called on the request path: each must be
// cheap, never block, and be safe for concurrent use.
type Observer interface {
	// Request is one request answered (acks=0 included, though no frame is
	// sent): its API key and version, the first non-zero error code of its
	// answer (0: none), and how long its answer took (dispatch).
	Request(key, version, code int16, d time.Duration)
}

// nopObserver is the observer of a node nobody watches.
type nopObserver struct{}

func (nopObserver) Request(int16, int16, int16, time.Duration) {}
