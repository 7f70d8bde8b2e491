package budget

import (
	"context"
	"sync"
)

// Budget is a weighted semaphore of bytes with first-come order within an
// owner and turns across owners, so that a large claim is not starved by a
// stream of small ones and one owner queueing many claims (a tenant
// flooding produce) does not starve another's: waiters are served one per
// owner in turn, round-robin, each owner's in arrival order. It has a try
// that never waits, and waits bounded by a context. It serves the record
// codec's decode budget (recordbatch.Pool), the facade's request frames,
// connection read-ahead and fetch memory, and the Queen client's answers.
// One acquisition larger than the whole budget is admitted when
// nothing is held, so a single oversized claim waits for the rest but never
// forever.
type Budget struct {
	mu   sync.Mutex
	free int64
	size int64
	peak int64 // most held at once since ResetPeak
	// queues holds each owner's waiters in arrival order; turns is the
	// owners with waiters, the one served next first.
	queues  map[string][]*budgetWaiter
	turns   []string
	waiting int
}

type budgetWaiter struct {
	n     int64
	owner string
	ready chan struct{}
}

// New returns a budget of size bytes, all free.
func New(size int64) *Budget {
	return &Budget{free: size, size: size, queues: make(map[string][]*budgetWaiter)}
}

// fitsLocked reports whether n bytes can be taken now, ignoring the queue.
func (b *Budget) fitsLocked(n int64) bool { return n <= b.free || b.free == b.size }

// TryAcquire takes n bytes if they are free and nobody is queued for them.
func (b *Budget) TryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting > 0 || !b.fitsLocked(n) {
		return false
	}
	b.takeLocked(n)
	return true
}

// Acquire is AcquireAs for the anonymous owner "".
func (b *Budget) Acquire(ctx context.Context, n int64) error { return b.AcquireAs(ctx, "", n) }

// AcquireAs takes n bytes for owner, waiting its turn until they are free
// or ctx ends.
func (b *Budget) AcquireAs(ctx context.Context, owner string, n int64) error {
	b.mu.Lock()
	if b.waiting == 0 && b.fitsLocked(n) {
		b.takeLocked(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, owner: owner, ready: make(chan struct{})}
	if len(b.queues[owner]) == 0 {
		b.turns = append(b.turns, owner)
	}
	b.queues[owner] = append(b.queues[owner], w)
	b.waiting++
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
		default:
			b.dropLocked(w)
		}
		// The head may have been what kept smaller claims behind it.
		b.grantLocked()
		return ctx.Err()
	}
}

// dropLocked removes a waiter that gave up.
func (b *Budget) dropLocked(w *budgetWaiter) {
	q := b.queues[w.owner]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			b.waiting--
			break
		}
	}
	if len(q) > 0 {
		b.queues[w.owner] = q
		return
	}
	delete(b.queues, w.owner)
	for i, o := range b.turns {
		if o == w.owner {
			b.turns = append(b.turns[:i:i], b.turns[i+1:]...)
			break
		}
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

// grantLocked serves waiters while the one whose turn it is fits: one per
// owner, then that owner goes to the back of the turns.
func (b *Budget) grantLocked() {
	for len(b.turns) > 0 {
		owner := b.turns[0]
		q := b.queues[owner]
		w := q[0]
		if !b.fitsLocked(w.n) {
			return
		}
		b.takeLocked(w.n)
		close(w.ready)
		b.waiting--
		b.turns = b.turns[1:]
		if q = q[1:]; len(q) == 0 {
			delete(b.queues, owner)
		} else {
			b.queues[owner] = q
			b.turns = append(b.turns, owner)
		}
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
	return b.waiting
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
