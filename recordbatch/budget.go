package recordbatch

import (
	"context"
	"sync"
)

// Budget is a weighted semaphore of bytes with first-come order, so that a
// large claim is not starved by a stream of small ones, a try that never
// waits, and waits bounded by a context. It serves a Pool's decode budget,
// and the facade's connections use it for their read-ahead budget.
// One acquisition larger than the whole budget is admitted when nothing is
// held, so a single oversized claim waits for the rest but never forever.
type Budget struct {
	mu      sync.Mutex
	free    int64
	size    int64
	peak    int64 // most held at once since ResetPeak
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// NewBudget returns a budget of size bytes, all free.
func NewBudget(size int64) *Budget { return &Budget{free: size, size: size} }

// fitsLocked reports whether n bytes can be taken now, ignoring the queue.
func (b *Budget) fitsLocked(n int64) bool { return n <= b.free || b.free == b.size }

// TryAcquire takes n bytes if they are free and nobody is queued for them.
func (b *Budget) TryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) > 0 || !b.fitsLocked(n) {
		return false
	}
	b.takeLocked(n)
	return true
}

// Acquire takes n bytes, waiting in order until they are free or ctx ends.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
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

// Release gives back n bytes, granting waiters in order.
func (b *Budget) Release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	b.grantLocked()
	b.mu.Unlock()
}

func (b *Budget) takeLocked(n int64) {
	b.free -= n
	b.peak = max(b.peak, b.size-b.free)
}

func (b *Budget) grantLocked() {
	for len(b.waiters) > 0 && b.fitsLocked(b.waiters[0].n) {
		w := b.waiters[0]
		b.takeLocked(w.n)
		b.waiters = b.waiters[1:]
		close(w.ready)
	}
}

// Size is the budget's whole size.
func (b *Budget) Size() int64 { return b.size }

// Free is what is not held now.
func (b *Budget) Free() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free
}

// Waiting is how many acquisitions wait now.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// Peak is the most held at once since the budget was made or ResetPeak.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// ResetPeak starts Peak again from nothing.
func (b *Budget) ResetPeak() {
	b.mu.Lock()
	b.peak = 0
	b.mu.Unlock()
}
