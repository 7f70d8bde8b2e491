package queen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Health is a client's verdict on Queen, kept by observing its calls (an
// Observer that passes each call on to Next): the last call that failed for
// want of Queen, and whether any call has been answered since boot. A node's
// readiness reads it; a node that is not ready gets no traffic to learn
// from, so Probe asks Queen itself.
type Health struct {
	Next   Observer // every call is passed on; nil for none
	failed atomic.Pointer[Failure]
	// answered is set by the first call Queen answers: until then nothing
	// says Queen is reachable, whatever failed says.
	answered atomic.Bool

	probeMu  sync.Mutex
	probedAt time.Time
}

// Failure is a call that failed for want of Queen.
type Failure struct {
	Route string
	Kind  Kind
	At    time.Time
}

// ProbeEvery spaces the probes of a node that is not ready.
const ProbeEvery = time.Second

// QueenCall records a call's verdict: a transport failure, timeout,
// transient or server answer is a failure; any other answer (a 4xx
// included, a 429 too: Queen is answering) clears it; a canceled call says
// nothing of Queen.
func (h *Health) QueenCall(route string, outcome Kind, d time.Duration) {
	switch outcome {
	case KindCanceled:
	case KindTransport, KindTimeout, KindTransient, KindServer:
		h.failed.Store(&Failure{Route: route, Kind: outcome, At: time.Now()})
	default:
		if h.failed.Load() != nil {
			h.failed.Store(nil)
		}
		if !h.answered.Load() {
			h.answered.Store(true)
		}
	}
	if h.Next != nil {
		h.Next.QueenCall(route, outcome, d)
	}
}

// Failed is the last call's failure, nil when the last verdict was an
// answer.
func (h *Health) Failed() *Failure { return h.failed.Load() }

// Answered reports whether Queen has answered any call since boot.
func (h *Health) Answered() bool { return h.answered.Load() }

// Probe asks Queen once through q (whose Observer must be h), unless a
// probe ran less than ProbeEvery ago; its outcome reaches h through
// QueenCall. The call is a getMany of the producer-id row, which any
// credential may make and which changes nothing: one of the contract's four
// KV ops (§10), which a Cloud gateway classifies without the KV feature
// gate (§0.3).
func (h *Health) Probe(ctx context.Context, q *Client) {
	h.probeMu.Lock()
	defer h.probeMu.Unlock()
	if time.Since(h.probedAt) < ProbeEvery {
		return
	}
	h.probedAt = time.Now()
	_, _ = q.KV(ctx, []KVOp{{Op: OpGetMany, NS: Namespace, Keys: []string{ProducerIDsKey}}})
}
