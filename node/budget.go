package node

import (
	"context"
	"sync"
)

// orderedBudget is a weighted semaphore of bytes with first-come order, so
// that a large claim is not starved by a stream of small ones, a try that
// never waits, and waits bounded by a context. It serves the process-wide
// decode budget (decodeBudget) and each connection's read-ahead budget.
// One acquisition larger than the whole budget is admitted when nothing is
// held, so a single oversized claim waits for the rest but never forever.
type orderedBudget struct {
	mu      sync.Mutex
	free    int64
	size    int64
	peak    int64 // most ever held at once
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newOrderedBudget(size int64) *orderedBudget { return &orderedBudget{free: size, size: size} }

// fitsLocked reports whether n bytes can be taken now, ignoring the queue.
func (b *orderedBudget) fitsLocked(n int64) bool { return n <= b.free || b.free == b.size }

// tryAcquire takes n bytes if they are free and nobody is queued for them.
func (b *orderedBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) > 0 || !b.fitsLocked(n) {
		return false
	}
	b.takeLocked(n)
	return true
}

// acquire takes n bytes, waiting in order until they are free or ctx ends.
func (b *orderedBudget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.fitsLocked(n) {
		b.takeLocked(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready:
			// Granted as ctx ended: hand the bytes on.
			b.free += n
			b.grantLocked()
		default:
			for i, q := range b.waiters {
				if q == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
			// The head may have been what kept smaller claims behind it.
			b.grantLocked()
		}
		return ctx.Err()
	}
}

func (b *orderedBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	b.grantLocked()
	b.mu.Unlock()
}

func (b *orderedBudget) takeLocked(n int64) {
	b.free -= n
	b.peak = max(b.peak, b.size-b.free)
}

func (b *orderedBudget) grantLocked() {
	for len(b.waiters) > 0 && b.fitsLocked(b.waiters[0].n) {
		w := b.waiters[0]
		b.takeLocked(w.n)
		b.waiters = b.waiters[1:]
		close(w.ready)
	}
}
